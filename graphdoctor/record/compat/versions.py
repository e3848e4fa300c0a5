"""The torch releases the compat entries were checked on, for their ``checked`` lines.

tests/record/test_compat.py checks every entry's requirements and exercises it; it passed on
both of these. A release checked later goes here, and into the entries it was checked for.
"""

from __future__ import annotations

GPU = "2.11.0+cu130 (the GPU image)"
CPU = "2.13.0+cpu"
RUN_ON_BOTH = f"run on {GPU} and {CPU}"
CUDA_RUN_CPU_STUB = f"run on {GPU}; declared in {CPU}'s stub of torch._C"
CUDA_RUN_ONLY = f"run on {GPU}; a CPU build cannot check it"
