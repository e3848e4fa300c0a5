"""Recording: the only stage that imports torch, nvtx or pynvml.

Everything here runs inside the user's process: ``child`` (its entry point, which imports
none of them itself), ``session`` and the sources it installs once the script imports torch.
Every private or version-dependent torch API they use is reached through ``compat``. The
parent side, which never imports torch, is :mod:`graphdoctor.launch`.
"""
