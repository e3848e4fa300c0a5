"""Recording: the only stage that imports torch, nvtx or pynvml.

Everything here runs inside the user's process: ``child`` (its entry point, which imports
none of them itself), ``session`` and the sources it installs once the script imports torch.
Every private or version-dependent torch API they use is reached through ``compat``. The
parent side, which never imports torch, is :mod:`graphdoctor.launch`.

The sources are grouped by what they watch, each group a subpackage that says what it holds:
``capture`` (captures, replays and what a graph holds), ``compile`` (torch.compile), ``host``
(syncs, streams, collectives), ``device`` (memory, NVML, GPU time), ``eager`` (the eager
history), ``frozen`` (host state a graph froze) and ``processes`` (the processes a script
starts); ``cupti`` and ``native`` record graphs made outside PyTorch.
"""
