"""The recompiles rule on traces assembled from spool records that carry torch's own reasons
(tests/recompile_texts.py: torch 2.13.0+cpu): the guard and the tensor by name, the cost of
each cause, a fix that follows the cause, and a run dominated by recompiles said first."""

from __future__ import annotations

from typing import Any

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.compile_costs import compiled_frames
from graphdoctor.diagnose.findings import ERROR, INFO, WARNING, Finding
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


def test_another_number_of_arguments_is_not_told_to_be_a_tensor() -> None:
    # transformers' generate(): the decode calls pass other keyword arguments than the prompt
    finding = one_recompile(["0/0: len(kwargs) == 6"])
    assert finding.fix.startswith("Each length of kwargs compiles its own graph (this one was "
                                  "compiled for 6): call with the same arguments")
    assert "tensor" not in finding.fix


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
    assert verdict.kind == "rerecorded" and "one per input shape" not in verdict.summary
    assert ("a new one at each recompile: Model.forward recompiled 6 times because tensor "
            f"{K_CACHE}") in verdict.summary


def test_the_end_of_a_run_spent_recompiling_says_so() -> None:
    from graphdoctor.report.document import build
    from graphdoctor.report.render.summary import outcome_lines

    trace = buf_run(12 * S, 102 * S)
    lines = outcome_lines(build(trace, diagnose(trace), read_line=lambda file, line: ""))
    assert lines[0].startswith("graphdoctor: GD208 recompiles: most of the run was recompiling: "
                               f"forward recompiled 6 times because tensor {K_CACHE}")


SOURCE = ("self._modules['layers']._modules['0']._modules['attention']._modules['kv_cache']"
          "._buffers['k_cache']")
SETUP = [["frame", 1, "/tmp/rc/buf.py", 12, "setup", "user"], ["stack", 1, [0, 1]]]


def tensor_seen(n: int, length: int, each_ns: int, allocated: bool) -> list[list[Any]]:
    """The recorder's sighting of the k_cache buffer at the recompile 0/n, with the stack the
    allocator kept for it where it kept one."""
    t, addr, size = S + 2 * n * each_ns + 1, 0x7F0000000000 + n * 0x100000, length * 4096
    return [["guarded", t + 1, f"0/{n}", SOURCE, -1, [1, 8, length, 256], "bfloat16", addr,
             size, 0, 1 if allocated else -1]]


def test_a_reallocated_tensor_is_named_with_the_line_that_allocated_it() -> None:
    each_ns = S // 10
    seen = [*tensor_seen(2, 32, each_ns, False), *tensor_seen(4, 48, each_ns, True),
            *tensor_seen(6, 80, each_ns, True)]
    reasons = [["guards", S + 2 * n * each_ns + 1, f"0/{n}", "forward", "/tmp/rc/buf.py", 24,
                texts.REASONS_BUF[n - 1], 0] for n in range(1, 8)]
    trace = run(*SETUP, *compiles(0, 8, each_ns), *sorted(reasons + seen, key=lambda r: r[1]),
                wall_ns=100 * S)
    [cache] = [f for f in findings(trace) if f.measurements["cause"] == REALLOCATED_TENSOR]
    assert "(buf.py:12 in setup allocates it again for each size)" in cache.fix
    assert (cache.location.file, cache.location.line) == ("/tmp/rc/buf.py", 12)
    assert (f"torch.compile found {K_CACHE} as 1x8x32x256 bfloat16 at 0x7f0000200000 (0/2); "
            "then 1x8x48x256 bfloat16 at 0x7f0000400000 (0/4), allocated at buf.py:12 in "
            "setup;") in cache.explanation
    assert "Once its allocation came before graphdoctor kept allocation stacks" \
        in cache.explanation
    tensors = cache.measurements["tensors"]
    assert [(t["compile_id"], t["shape"], t.get("allocated_at")) for t in tensors] == [
        ("0/2", "1x8x32x256", None), ("0/4", "1x8x48x256", "buf.py:12 in setup"),
        ("0/6", "1x8x80x256", "buf.py:12 in setup")]


def test_without_allocation_stacks_the_recompile_keeps_its_own_line() -> None:
    each_ns = S // 10
    seen = [*tensor_seen(2, 32, each_ns, False), *tensor_seen(4, 48, each_ns, False)]
    reasons = [["guards", S + 2 * n * each_ns + 1, f"0/{n}", "forward", "/tmp/rc/buf.py", 24,
                texts.REASONS_BUF[n - 1], 0] for n in range(1, 8)]
    trace = run(*SETUP, *compiles(0, 8, each_ns), *sorted(reasons + seen, key=lambda r: r[1]),
                wall_ns=100 * S)
    [cache] = [f for f in findings(trace) if f.measurements["cause"] == REALLOCATED_TENSOR]
    assert all("allocated_at" not in t for t in cache.measurements["tensors"])
    assert "allocates it again" not in cache.fix and "kept allocation stacks" \
        not in cache.explanation
    assert (cache.location.file, cache.location.line) == ("/tmp/rc/buf.py", 24)


MOVED = ("[0/0] Re-recording function=partition_0, mode=inference, reason=static input data "
         "pointer changed.\ninput name: arg1_1. data pointer changed from 4096 to 8192. input "
         "stack trace: None\ninput name: arg0_1. data pointer changed from 12288 to 16384. "
         "input stack trace: None\n")
TREES = "torch._inductor.cudagraph_trees.__cudagraphs"


def moved_run(rounds: int, placed: bool) -> Trace:
    records: list[list[Any]] = []
    for n in range(rounds):
        t = S + n * S
        message = MOVED.replace("8192", str(8192 + n)).replace("16384", str(16384 + n))
        records += [["log", t, TREES, "DEBUG", message, "0/0", 0],
                    *[["guarded", t + 1, "0/0", name, -1, [], "", addr + n, 0, -1,
                       1 if placed and n else -1] for name, addr in (("arg1_1", 8192),
                                                                      ("arg0_1", 16384))]]
    return run(*SETUP, *records, wall_ns=100 * S)


def test_a_static_input_that_moved_is_named_with_the_line_that_made_the_new_one() -> None:
    [moved] = findings(moved_run(3, placed=True), "static-input-moved")
    assert moved.title == ("a compiled function (partition_0) was recorded again 3 times: its "
                           "static inputs arg1_1, arg0_1 came at new addresses")
    assert moved.measurements["allocated_at"] == ["buf.py:12"]
    assert "(buf.py:12 allocates new ones)" in moved.fix
    assert (moved.location.file, moved.location.line) == ("/tmp/rc/buf.py", 12)
    assert "arg1_1 first from 0x1000 to 0x2000" in moved.explanation


def test_a_moved_input_without_stacks_says_how_to_get_them() -> None:
    [moved] = findings(moved_run(1, placed=False), "static-input-moved")
    assert moved.measurements["allocated_at"] == [] and "--full" in moved.explanation
    assert "allocates" not in moved.fix
