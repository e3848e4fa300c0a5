"""The recompiles rule on traces assembled from spool records that carry torch's own reasons
(tests/recompile_texts.py: torch 2.13.0+cpu): the guard and the tensor by name, the cost of
each cause, a fix that follows the cause, and a run dominated by recompiles said first."""

from __future__ import annotations

from typing import Any

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.compile_costs import compiled_frames
from graphdoctor.diagnose.model import ERROR, INFO, WARNING, Finding
from graphdoctor.trace.assemble import assemble
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import REALLOCATED_TENSOR, SPECIALISED_VALUE
from tests import recompile_texts as texts

S = 1_000_000_000
K_CACHE = "self.layers[0].attention.kv_cache.k_cache"


def compiles(frame: int, count: int, each_ns: int, start: int = S) -> list[list[Any]]:
    """Dynamo's compile spans F/0 .. F/count-1, one after the other."""
    records: list[list[Any]] = []
    for n in range(count):
        t = start + n * 2 * each_ns
        records += [["compile_cb", t, "compile_start", "DYNAMO", f"{frame}/{n}", 0],
                    ["compile_cb", t + each_ns, "compile_end", "DYNAMO", f"{frame}/{n}", -1]]
    return records


def run(*records: list[Any], wall_ns: int) -> Trace:
    return assemble([["hello", {"version": 1, "target": "buf.py"}],
                     ["frame", 0, "/tmp/rc/buf.py", 33, "<module>", "user"], ["stack", 0, [0]],
                     *records,
                     ["end", {"exit_code": 0}],
                     ["run_end", {"exit_code": 0, "reason": "exited", "wall_ns": wall_ns}]])


def buf_run(each_ns: int, wall_ns: int) -> Trace:
    """buf.py's eight compiles of forward, each recompile with the reasons torch gave."""
    reasons = [["guards", S + 2 * n * each_ns + 1, f"0/{n}", "forward",
                "/tmp/rc/buf.py", 24, texts.REASONS_BUF[n - 1], 0] for n in range(1, 8)]
    return run(*compiles(0, 8, each_ns), *reasons, wall_ns=wall_ns)


def findings(trace: Trace, name: str = "recompiles") -> list[Finding]:
    return [f for f in diagnose(trace, strict=True).findings if f.name == name]


def test_each_recompile_counts_under_the_reallocation_it_follows() -> None:
    [frame] = compiled_frames(buf_run(S // 10, 100 * S))
    assert (frame.name, frame.compiles, frame.compile_ns) == ("forward", 8, 8 * S // 10)
    causes = [(r.event.compile_id, r.cause, r.follows) for r in frame.recompiles]
    assert causes == [("0/1", SPECIALISED_VALUE, ""), ("0/2", REALLOCATED_TENSOR, ""),
                      ("0/3", REALLOCATED_TENSOR, "0/2"), ("0/4", REALLOCATED_TENSOR, ""),
                      ("0/5", REALLOCATED_TENSOR, "0/4"), ("0/6", REALLOCATED_TENSOR, ""),
                      ("0/7", REALLOCATED_TENSOR, "0/6")]


def test_a_run_dominated_by_reallocation_recompiles_says_so_first() -> None:
    # the run: ~15 s a recompile, 74 of 102 s
    first, *rest = diagnose(buf_run(12 * S, 102 * S), strict=True).findings
    assert first.name == "recompiles" and first.severity == ERROR
    assert first.title.startswith("most of the run was recompiling: forward recompiled 6 times "
                                  f"because tensor {K_CACHE} was re-allocated")
    assert "size mismatch at index 2: 16 → 32 → 48 → 80" in first.title
    assert "72.00 s of compiling, 71% of the run" in first.title
    assert first.fix.startswith(f"Allocate {K_CACHE} once, at the largest size")
    assert "padding the inputs would change nothing" in first.fix
    assert "mark_dynamic" not in first.fix and "bucket" not in first.fix
    assert (first.location.file, first.location.line) == ("/tmp/rc/buf.py", 24)
    m = first.measurements
    assert (m["compiles"], m["recompiles"], m["compile_s"], m["wall_s"]) == (8, 6, 96.0, 102.0)
    assert m["changes"] == ["16 → 32", "32 → 48", "48 → 80"]
    assert m["compile_ids"] == ["0/2", "0/3", "0/4", "0/5", "0/6", "0/7"]
    assert len(first.evidence) == 6


def test_the_value_guard_points_at_the_users_line_and_gets_its_own_fix() -> None:
    value = [f for f in findings(buf_run(S // 10, 100 * S)) if f.measurements["value"] == "pos"]
    [finding] = value
    assert finding.severity == INFO and "on the guard pos == 0" in finding.title
    assert (finding.location.file, finding.location.line) == ("/tmp/rc/buf.py", 17)
    assert "dynamic=True" in finding.fix and "always specialised" in finding.fix


def test_a_cheap_reallocation_is_a_warning() -> None:
    [realloc] = [f for f in findings(buf_run(S // 10, 100 * S))
                 if f.measurements["cause"] == REALLOCATED_TENSOR]
    assert realloc.severity == WARNING and not realloc.title.startswith("most of the run")


def one_recompile(reasons: list[str], function: str = "f", file: str = "/tmp/rc/intarg.py",
                  line: int = 3) -> Finding:
    trace = run(*compiles(0, 2, S // 10),
                ["guards", S + S // 5 + 1, "0/1", function, file, line, reasons, 0],
                wall_ns=10 * S)
    [finding] = findings(trace)
    return finding


def test_an_input_shape_is_marked_dynamic_or_padded() -> None:
    reasons = ["0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8"]  # intarg.py
    finding = one_recompile(reasons)
    assert "for new shapes of input x (size mismatch at index 0: 4 → 8)" in finding.title
    assert "torch._dynamo.mark_dynamic(x, 0)" in finding.fix and "bucket" in finding.fix


def test_a_tensor_bound_anew_gets_mark_static_address() -> None:
    finding = one_recompile(texts.REASONS_VARIETY[2], "use_static", "variety.py", 23)
    assert "static was another object" in finding.title
    assert "static.copy_(new)" in finding.fix and "mark_static_address" in finding.fix
    assert (finding.location.file, finding.location.line) == ("variety.py", 24)


def test_a_reassigned_global_is_a_reallocation() -> None:
    finding = one_recompile(texts.REASONS_VARIETY[0], "use_global", "variety.py", 7)
    assert "tensor cache was re-allocated" in finding.title and "Allocate cache" in finding.fix


def test_a_recompile_without_its_compile_time_says_so() -> None:
    trace = run(["guards", 5, "", "f", "/tmp/rc/intarg.py", 3, texts.REASONS_VARIETY[3], 0],
                wall_ns=10 * S)
    [finding] = findings(trace)
    assert "its compile time was not recorded" in finding.title
    assert "dtype mismatch. expected Float, actual Double" in finding.title


def graphed_buf_run() -> Trace:
    """buf.py under reduce-overhead: each of forward's compiles recorded its own graph."""
    graphs = [r for n in range(8) for r in (
        ["graph", {"id": n, "t": S + (2 * n + 1) * S // 10 + 2, "api": "torch.compile",
                   "function": 0, "stack": 0}],
        ["graph_end", {"id": n, "t": S + (2 * n + 1) * S // 10 + 3, "status": "captured"}])]
    return run(["fn", 0, "Model.forward", "compiled", "/tmp/rc/buf.py", 24, "0/0"],
               *compiles(0, 8, S // 10), *graphs,
               *[["guards", S + 2 * n * S // 10 + 1, f"0/{n}", "forward",
                  "/tmp/rc/buf.py", 24, texts.REASONS_BUF[n - 1], 0] for n in range(1, 8)],
               wall_ns=3 * S)


def test_graphs_recorded_per_reallocation_are_not_blamed_on_input_shapes() -> None:
    diagnosis = diagnose(graphed_buf_run(), strict=True)
    names = [f.name for f in diagnosis.findings]
    assert "recompiles" in names and "rerecord-per-shape" not in names
    assert all(f.function == 0 for f in diagnosis.findings if f.name == "recompiles")
    [verdict] = diagnosis.verdicts
    assert verdict.kind == "rerecorded" and "one graph per input shape" not in verdict.summary
    assert f"a graph per recompile: Model.forward recompiled 6 times because tensor {K_CACHE}" \
        in verdict.summary


def test_the_end_of_a_run_spent_recompiling_says_so() -> None:
    from graphdoctor.report.document import build
    from graphdoctor.report.summary import outcome_lines

    trace = buf_run(12 * S, 102 * S)
    lines = outcome_lines(build(trace, diagnose(trace), read_line=lambda file, line: ""))
    assert lines[0].startswith("graphdoctor: GD208 recompiles: most of the run was recompiling: "
                               f"forward recompiled 6 times because tensor {K_CACHE}")
