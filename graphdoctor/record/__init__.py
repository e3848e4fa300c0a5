"""Recording: the only stage that imports torch, nvtx or pynvml.

The parent side (``supervisor``) imports none of them; the child side (``child``,
``session`` and the sources) runs inside the user's process.
"""
