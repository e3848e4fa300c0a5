"""A script that dies right after torch.compile's logs, a warning and a collection: the
report holds every record it wrote before the signal, and does not say that no CUDA device
was found.

The real case (issue 11): Llama's static-cache ``generate`` under
``torch.compile(mode="reduce-overhead")`` segfaulted just after inductor logged "skipping
cudagraphs due to mutated inputs", and the report had neither that skip nor the right word
on CUDA. On this CPU the script writes what such a GPU run has written by then, through the
running recorder: NVML's device, and the CUDA state read as CUDA came up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphdoctor.report.io import load
from graphdoctor.trace.names import CUDA_STATE_UNREAD, CUDAGRAPH_SKIP
from tests.record.test_run_cli import run

pytestmark = pytest.mark.slow

SCRIPT = """
import gc, logging, os, signal, warnings
import torch
from graphdoctor.record.session import running
from graphdoctor.trace.spool import records as sr

recorder = running()
recorder.emit(sr.Devices([{"index": 0, "name": "NVIDIA H100 80GB HBM3",
                           "memory_total": 85520809984, "compute_capability": "9.0"}]))
recorder.emit(sr.CudaState({"built": True, "available": True, "device_count": 1,
                            "initialized": True, "when": "init"}))
compiled = torch.compile(lambda x: x * 2, backend="eager")
compiled(torch.ones(3))
warnings.warn("the last warning before the crash")
logging.getLogger("torch._inductor.cudagraph_utils.__cudagraphs").warning(
    "skipping cudagraphs due to mutated inputs (12 instances). Found from: \\n"
    '   File "modeling_llama.py", line 42, in forward\\n    cumulative_length.add_(1)')
gc.collect()
{ending}
"""


@pytest.mark.parametrize("ending, code, signal", [
    ("os.kill(os.getpid(), signal.SIGSEGV)", 139, 11), ("os.abort()", 134, 6),
    ("os._exit(7)", 7, None)], ids=["segv", "abort", "os_exit"])
def test_a_crash_loses_no_record_written_before_it(tmp_path: Path, ending: str, code: int,
                                                  signal: int | None) -> None:
    done, path = run(tmp_path, SCRIPT.replace("{ending}", ending))
    assert done.returncode == code, done.stderr
    trace = load(path).trace
    assert not trace.status.complete and trace.status.signal == signal
    kinds = {event.kind for event in trace.compile_events}
    assert "compile" in kinds, "dynamo's compile callbacks"
    (skip,) = [e for e in trace.compile_events if e.kind == CUDAGRAPH_SKIP]
    assert skip.reason.startswith("mutated inputs (12 instances)")
    assert [w.message for w in trace.warnings] == ["the last warning before the crash"]
    assert any(row.generation == 2 for row in trace.tables["gc_pauses"]), "batched, not urgent"
    assert "no CUDA device" not in done.stderr
    assert "device 0 was NVIDIA H100 80GB HBM3" in done.stderr
    assert trace.meta.cuda_available
    assert [n.what for n in trace.meta.not_recorded].count(CUDA_STATE_UNREAD) == 1
    assert not list(tmp_path.glob("*.tail")), "the tail is removed with the spool"
