"""What the frozen-host-value scenarios must show: each script checks for itself whether its
replays used the new value (its note's ``truth``), and graphdoctor must agree: a GD305
finding where the script saw the replays keep the captured value, none where they followed
it; likewise GD306 for the rest of the host state a capture froze (a module's mode, an
index, a branch) and GD307 for an output kept across replays, silent on the twins. Lines
are found in the scripts' own source, so an edit there cannot leave a stale number here.
Registered in :data:`tests.expectations.EXPECTATIONS`, which imports this module."""

from __future__ import annotations

from typing import Any

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import Finding
from graphdoctor.facts import queries
from graphdoctor.trace.event_kinds import BY_NAME, rows_of
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import (
    HELD_BY_OPTIMIZER,
    KEPT_IN_ATTRIBUTE,
    KEPT_IN_LIST,
    SEEN_AT_REPLAY,
    SEEN_SCHEDULER,
    USE_BRANCH,
    USE_INDEX,
    USE_MODE,
)
from tests.conftest import ROOT
from tests.expectations import expect, graphs

SCRIPTS = ROOT / "fixtures" / "scripts"
FROZEN = BY_NAME["frozen_values"]
LR = "param_groups[0]['lr']"


def line_of(script: str, text: str, after: str = "") -> int:
    """The number of the first line of ``script`` holding ``text`` (after the first line
    holding ``after``)."""
    lines = (SCRIPTS / script).read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if after in line) if after else 0
    return next(n for n, line in enumerate(lines[start:], start + 1) if text in line)


def told_by_script(note: dict[str, Any], truth: str) -> None:
    """The script ran to its end and its own check found ``truth``."""
    assert note["exit_code"] == 0, note["stderr_tail"]
    assert note["self_timing"]["truth"] == truth, note["truth"]


def frozen_finding(trace: Trace) -> Finding:
    """The one GD305 finding on the run's one graph, the graph captured and replayed."""
    [graph] = graphs(trace)
    assert graph.status == "captured" and queries.replay_count(trace, graph) > 0
    [finding] = [f for f in diagnose(trace).findings if f.id == "GD305"]
    assert finding.graph == graph.id and finding.category == "unsafe"
    return finding


def located(finding: Finding, script: str, line: int) -> None:
    assert finding.location is not None
    assert (finding.location.file.rsplit("/", 1)[-1], finding.location.line) == (script, line)


def lr_frozen(trace: Trace, note: dict[str, Any], script: str, optimizer: str) -> Finding:
    """A scheduled lr frozen into a captured optimizer step: named, its captured value the
    one the script's first replay ran with, its change at the scheduler.step() line, and
    the replays after that change counted as the script's own lr log implies."""
    told_by_script(note, "frozen")
    finding = frozen_finding(trace)
    lrs = note["self_timing"]["lr_per_replay"]
    assert finding.title.startswith(f"graph 0 replays {optimizer}'s {LR} frozen at ")
    assert float(finding.measurements["captured"]) == lrs[0]
    assert finding.measurements["seen"] == SEEN_SCHEDULER
    step_line = line_of(script, "scheduler.step()", after="for step in range(REPLAYS)")
    assert finding.title.endswith(f"({script}:{step_line})")
    located(finding, script, line_of(script, "opt.step()", after="with torch.cuda.graph(g)"))
    # the first change follows the first replay whose lr the script logged changed
    changed_before = next(n for n, lr in enumerate(lrs) if lr != lrs[0])
    assert finding.measurements["replays_after"] == \
        queries.replay_count(trace, graphs(trace)[0]) - changed_before
    assert "lr=torch.tensor(" in finding.fix and "capturable=True" in finding.fix
    return finding


@expect("frozen_lr_scheduler")
def _lr_scheduler(trace: Trace, note: dict[str, Any]) -> None:
    finding = lr_frozen(trace, note, "frozen_lr_scheduler.py", "AdamW")
    assert finding.measurements["latest"] == "0.0"
    assert finding.measurements["values"] == ["0.0"]  # LambdaLR: 1e-3 three times, then 0


@expect("real_frozen_lr_transformers")
def _lr_transformers(trace: Trace, note: dict[str, Any]) -> None:
    finding = lr_frozen(trace, note, "real_frozen_lr_transformers.py", "AdamW")
    assert float(finding.measurements["captured"]) == note["self_timing"]["captured_lr"]
    # a cosine schedule: every scheduler step is a change, each recorded up to the limit
    lrs = note["self_timing"]["lr_per_replay"]
    assert [float(v) for v in finding.measurements["values"]] == lrs[1:17]


@expect("frozen_lr_tensor")
def _lr_tensor(trace: Trace, note: dict[str, Any]) -> None:
    told_by_script(note, "follows")
    [graph] = graphs(trace)
    assert graph.status == "captured" and queries.replay_count(trace, graph) > 0
    # the lr is a tensor the scheduler fills in place: no number was watched, none frozen
    assert not list(rows_of(trace, FROZEN))
    assert not [f for f in diagnose(trace).findings if f.id == "GD305"]


@expect("frozen_decode_position")
def _decode_position(trace: Trace, note: dict[str, Any]) -> None:
    told_by_script(note, "frozen")
    script = "frozen_decode_position.py"
    finding = frozen_finding(trace)
    assert finding.measurements["captured"] == "3" and finding.measurements["seen"] == \
        SEEN_AT_REPLAY
    assert finding.title.startswith("graph 0 replays pos in frozen_decode_position.py frozen at 3")
    assert finding.title.endswith(f"({script}:{line_of(script, 'for pos in range(CAPTURE_AT')})")
    located(finding, script, line_of(script, "decode_step(static_tok, pos)",
                                     after="with torch.cuda.graph(g)"))
    # values the loop held at the sampled replays: positions it had moved on to
    assert all(3 < int(v) <= 15 for v in finding.measurements["values"])
    # the warmup's positions, passed eagerly to decode_step, are told in the same finding
    assert {"0", "1", "2"} <= set(finding.measurements["eager_values"])
    assert "pos_t" in finding.fix and "index_copy_" in finding.fix


@expect("frozen_scale_between_replays")
def _scale_between_replays(trace: Trace, note: dict[str, Any]) -> None:
    told_by_script(note, "frozen")
    script = "frozen_scale_between_replays.py"
    finding = frozen_finding(trace)
    assert finding.measurements["captured"] == "2.0"
    assert finding.title.endswith(f"({script}:{line_of(script, 'scale = 1.0 / (i + 1)')})")
    located(finding, script, line_of(script, "model(static_x) * scale"))
    scales = {repr(s) for s in note["self_timing"]["scale_per_replay"]}
    assert set(finding.measurements["values"]) <= scales
    assert "scale_t.fill_(new_value)" in finding.fix


def no_frozen_finding(trace: Trace) -> None:
    """A captured optimizer step or scalar the script never changed: watched, and silent."""
    assert not [f for f in diagnose(trace).findings if f.id == "GD305"]
    assert all(row.held_by != HELD_BY_OPTIMIZER or row.value == row.captured
               for row in rows_of(trace, FROZEN))


@expect("real_frozen_lr_manual_timm")
def _lr_manual_timm(trace: Trace, note: dict[str, Any]) -> None:
    """No scheduler: the lr is set by hand each iteration, and the change is seen at the
    replays already sampled, put on the assignment the source holds for the key."""
    told_by_script(note, "frozen")
    script = "real_frozen_lr_manual_timm.py"
    finding = frozen_finding(trace)
    lrs = note["self_timing"]["lr_per_replay"]
    assert finding.title.startswith(f"graph 0 replays AdamW's {LR} frozen at ")
    assert float(finding.measurements["captured"]) == note["self_timing"]["captured_lr"]
    assert finding.measurements["seen"] == SEEN_AT_REPLAY
    assigned = line_of(script, 'param_group["lr"] = lr', after="for it in range(ITERS)")
    assert finding.title.endswith(f"({script}:{assigned})")
    located(finding, script, line_of(script, "opt.step()", after="def train_step"))
    # each value it was seen with is one the loop set, and the last is the schedule's 0
    assert {float(v) for v in finding.measurements["values"]} <= set(lrs)
    assert float(finding.measurements["latest"]) == lrs[-1] == 0.0
    changed_before = next(n for n, lr in enumerate(lrs) if lr != lrs[0])
    assert finding.measurements["replays_after"] == \
        queries.replay_count(trace, graphs(trace)[0]) - changed_before


# -- host state a graph froze besides numbers (GD306), outputs kept across replays (GD307) ----
def told(note: dict[str, Any], truth: str) -> None:
    """The script ran to its end and its own comparison with eager found ``truth``."""
    assert note["exit_code"] == 0, note["stderr_tail"]
    assert note["self_timing"]["truth"] == truth, note["truth"]


def only_finding(trace: Trace, rule: str) -> Finding:
    """The one finding of ``rule`` on the run's one graph, captured and replayed."""
    [graph] = graphs(trace)
    assert graph.status == "captured" and queries.replay_count(trace, graph) > 0
    [finding] = [f for f in diagnose(trace).findings if f.id == rule]
    assert finding.graph == graph.id and finding.category == "unsafe"
    return finding


def silent(trace: Trace) -> None:
    """No unsafe finding of the host state or the outputs on any graph: watched, and quiet."""
    findings = diagnose(trace).findings
    assert not [f for f in findings if f.id in ("GD305", "GD306", "GD307")], \
        [f.title for f in findings]


@expect("train_mode_captured_then_eval")
def _train_mode_then_eval(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "stale")
    script = "train_mode_captured_then_eval.py"
    finding = only_finding(trace, "GD306")
    assert finding.measurements["use"] == USE_MODE
    changed = line_of(script, "model.eval()  # the culprit")
    assert finding.title == ("graph 0 replays model in train mode; the script switched it to "
                             f"eval ({script}:{changed})")
    located(finding, script, line_of(script, "static_out = model(static_x)",
                                     after="with torch.cuda.graph(g)"))
    assert finding.measurements["owner"] == "Dropout ×2, BatchNorm1d"
    assert finding.measurements["replays_after"] == note["self_timing"]["replays"]
    assert "model.eval() before capturing" in finding.fix


@expect("eval_mode_capture")
def _eval_mode_capture(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "fresh")
    silent(trace)
    assert not [r for r in rows_of(trace, FROZEN) if r.use == USE_MODE]


@expect("python_counter_picks_buffer")
def _counter_picks_buffer(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "stale")
    script = "python_counter_picks_buffer.py"
    assert note["self_timing"]["stale"] * 2 == note["self_timing"]["steps"]  # every other
    finding = only_finding(trace, "GD306")
    assert finding.measurements["use"] == USE_INDEX
    assert finding.title == ("graph 0 replays self.outs[self.slot] with self.slot = 0 frozen; "
                             "the script has since set it to 1 "
                             f"({script}:{line_of(script, 'self.slot ^= 1')})")
    located(finding, script, line_of(script, "self.outs[self.slot].copy_("))
    assert "graphs[self.slot].replay()" in finding.fix


@expect("graph_per_buffer")
def _graph_per_buffer(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "fresh")
    assert len(graphs(trace)) == 2
    silent(trace)


@expect("branch_flag_after_capture")
def _branch_flag(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "stale")
    script = "branch_flag_after_capture.py"
    finding = only_finding(trace, "GD306")
    assert finding.measurements["use"] == USE_BRANCH
    assert finding.title == ("graph 0 replays the branch taken with self.calibrate = False; "
                             "the script has since made it True "
                             f"({script}:{line_of(script, 'model.calibrate = True')})")
    located(finding, script, line_of(script, "if self.calibrate:"))


def kept_finding(trace: Trace, script: str, holder: str, keeping: str) -> Finding:
    finding = only_finding(trace, "GD307")
    assert finding.measurements["holder"] == holder
    located(finding, script, line_of(script, keeping))
    assert ".clone()" in finding.fix
    return finding


@expect("decode_appends_output")
def _decode_appends_output(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "stale")
    script = "decode_appends_output.py"
    finding = kept_finding(trace, script, "generated", "generated.append(static_next)")
    assert finding.title == ("graph 0's output static_next is kept across replays in "
                             f"generated at {script}:"
                             f"{line_of(script, 'generated.append(static_next)')}")
    assert finding.measurements["how"] == KEPT_IN_LIST and finding.measurements["aliases"] >= 2
    assert "generated.append(static_next.clone())" in finding.fix


@expect("decode_clones_output")
def _decode_clones_output(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "fresh")
    silent(trace)
    assert not list(rows_of(trace, BY_NAME["kept_outputs"]))


@expect("kept_output_previous_step")
def _previous_step(trace: Trace, note: dict[str, Any]) -> None:
    told(note, "stale")
    script = "kept_output_previous_step.py"
    finding = kept_finding(trace, script, "monitor.prev", "monitor.prev = static_out")
    assert finding.measurements["how"] == KEPT_IN_ATTRIBUTE
    read = line_of(script, "monitor.changes.append(")
    assert f"{script}:{read} reads monitor.prev after a replay" in finding.explanation
