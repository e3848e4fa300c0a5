"""graphdoctor: why CUDA graph capture failed, gave no speedup, or is unsafe."""

__version__ = "0.1.0"
