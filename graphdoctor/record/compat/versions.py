"""The torch releases the compat entries were checked on, for their ``checked`` lines.

Two kinds of evidence: tests/record/test_compat.py checks an entry's requirements and
exercises it against the installed torch (run on the CPU build so far), and the fixture
recordings (fixtures/recordings, made on the GPU image before these lookups moved into
compat, through the same names) show what an entry reads working there. A release checked
later goes here, and into the lines of the entries it was checked for.
"""

from __future__ import annotations

CPU = "2.13.0+cpu"
GPU = "2.11.0+cu130"

_RUN = f"{CPU}: requirements checked, exercise run"
_CHECKED = f"{CPU}: requirements checked (the exercise needs CUDA)"
_STUB = f"{CPU}: declared in its stub of torch._C (a CPU build lacks it)"
_SEEN = f"{GPU}: seen working in fixtures/recordings"
_NOT_SEEN = f"{GPU}: not checked yet"

RUN_SEEN = f"{_RUN}; {_SEEN}"
RUN_NOT_SEEN = f"{_RUN}; {_NOT_SEEN}"
CHECKED_SEEN = f"{_CHECKED}; {_SEEN}"
CHECKED_NOT_SEEN = f"{_CHECKED}; {_NOT_SEEN}"
LOGGERS_SEEN = (f"{_RUN}; {GPU}: the cudagraphs loggers of cudagraph_utils, cudagraph_trees "
                "and scheduler and symbolic_convert's graph_breaks seen logging in "
                "fixtures/recordings (skips went to perf_hints up to 2.10)")
STUB_SEEN = f"{_STUB}; {_SEEN}"
STUB_NOT_SEEN = f"{_STUB}; {_NOT_SEEN}"
CUDA_TEXT_SEEN = f"{CPU}: a CPU build cannot check it; {_SEEN}"
# tests/record/test_compat.py run on the GPU image too (an H100), for the entries named so.
_GPU_RUN = f"{GPU}: requirements checked, exercise run on an H100 (after a capture that failed)"
STUB_GPU_RUN = f"{_STUB}; {_GPU_RUN}"
# Read in PyTorch's own source (main at 004e5d35, 2026) as well as run on the CPU build.
RUN_SOURCE_READ = f"{_RUN}; {_NOT_SEEN} (PyTorch main's source at 004e5d35 reads the same)"
# Read in the source of several PyTorch releases (older ones name it ..._reason, singular,
# newer ones add skip_logging) as well as run on the CPU build.
SOURCES_READ = (f"{_RUN}; {_NOT_SEEN} (several releases' sources call it on every recompile, "
                "whether or not the recompiles log is on)")
