"""GD305 frozen-host-value over small traces built inline: a number a graph took by value
(a learning rate, a decode position, a scale) that the script changed while the graph went
on replaying; and the silences: nothing changed, the change came after the last replay,
the number moved into a tensor, one graph per value."""

from __future__ import annotations

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import Finding, Location
from graphdoctor.diagnose.rules.gd305_frozen_host_value import check
from graphdoctor.diagnose.view import TraceView
from graphdoctor.report.document import build, to_json
from graphdoctor.report.render.text import render_text
from graphdoctor.report.schema import check as check_schema
from graphdoctor.trace.event_kinds import NONE, FrozenValue, tensor_value
from graphdoctor.trace.model import Frame, Graph, Trace
from graphdoctor.trace.names import (
    HELD_BY_ARGUMENT,
    HELD_BY_ATTRIBUTE,
    HELD_BY_OPTIMIZER,
    SEEN_AT_END,
    SEEN_AT_REPLAY,
    SEEN_EAGER,
    SEEN_SCHEDULER,
)

TRAIN, DECODE = "/u/train.py", "/u/decode.py"
FRAMES = [Frame(TRAIN, 30, "<module>"), Frame(TRAIN, 40, "train_step"),
          Frame(TRAIN, 57, "<module>"), Frame(DECODE, 20, "<module>"),
          Frame(DECODE, 31, "decode_step"), Frame(DECODE, 44, "<module>")]
# stacks: the training capture, the optimizer's step in it, the scheduler.step() line, the
# decoding capture, the op that takes pos in it, an assignment found in the source
CAPTURE_TRAIN, OPTIMIZER_SITE, SCHEDULER_LINE, CAPTURE_DECODE, POS_SITE, ASSIGNED = range(6)
STACKS = [(0,), (0, 1), (2,), (3,), (3, 4), (5,)]
LR = "param_groups[0]['lr']"


def trace_of(rows: list[FrozenValue], replays: dict[int, int],
             capture: int = CAPTURE_TRAIN) -> Trace:
    """Graphs 0..n-1 captured at one line, replayed ``replays[g]`` times, with ``rows``."""
    trace = Trace()
    trace.frames, trace.stacks = list(FRAMES), list(STACKS)
    trace.graphs = [Graph(g, "torch.cuda.graph", "captured", 100 + g * 100, 150 + g * 100,
                          stack=capture) for g in sorted(replays)]
    trace.replay_counts = dict(replays)
    for row in rows:
        trace.tables["frozen_values"].append(row)
    return trace


def lr_change(value: str, replays: int, changes: int = 1, tensor_fix: int = 1,
              t: int = 1_000, captured: str = "0.001") -> FrozenValue:
    return FrozenValue(t, 0, LR, HELD_BY_OPTIMIZER, "AdamW", captured, value, SEEN_SCHEDULER,
                       OPTIMIZER_SITE, SCHEDULER_LINE, replays, changes, tensor_fix)


def pos_passed(graph: int, captured: str, value: str) -> FrozenValue:
    return FrozenValue(500, graph, "pos", HELD_BY_ARGUMENT, "decode_step", captured, value,
                       SEEN_EAGER, POS_SITE, NONE, 0, 0, 0)


def findings(trace: Trace) -> list[Finding]:
    return list(check(TraceView(trace)))


# -- a change that replays ran after --------------------------------------------------------
def test_a_scheduler_change_then_more_replays_names_the_step_line() -> None:
    [finding] = findings(trace_of([lr_change("0.0", replays=40)], {0: 100}))
    assert (finding.id, finding.name, finding.severity, finding.category) == (
        "GD305", "frozen-host-value", "error", "unsafe")
    assert finding.title == ("graph 0 replays AdamW's param_groups[0]['lr'] frozen at 0.001; "
                             "the script changed it to 0.0 (train.py:57)")
    assert "took AdamW's param_groups[0]['lr'] as 0.001 at train.py:40" in finding.explanation
    assert "first by the scheduler.step() call at train.py:57" in finding.explanation
    assert "60 replays ran after that change, each with 0.001" in finding.explanation
    assert "takes a Python number by value" in finding.explanation
    assert finding.measurements == {"captured": "0.001", "values": ["0.0"], "latest": "0.0",
                                    "changes_seen": 1, "replays_after": 60, "seen": "scheduler",
                                    "eager_values": [], "name": "param_groups[0]['lr']",
                                    "held_by": "optimizer", "owner": "AdamW",
                                    "changed_file": TRAIN, "changed_line": 57}
    assert finding.location == Location(TRAIN, 40, "train_step") and finding.graph == 0
    assert [(e.kind, e.index) for e in finding.evidence] == [("frozen_values", 0)]


def test_many_changes_name_the_first_few_and_the_last() -> None:
    values = ["0.0009", "0.0008", "0.0007", "0.0006", "0.0005"]
    rows = [lr_change(v, replays=10 * (n + 1), changes=n + 1, t=1_000 * (n + 1))
            for n, v in enumerate(values)]
    [finding] = findings(trace_of(rows, {0: 100}))
    assert finding.title.endswith("the script changed it 5 times, last to 0.0005 (train.py:57)")
    assert "set it to 0.0009, 0.0008, 0.0007, …, 0.0005 (5 changes)" in finding.explanation
    assert "90 replays ran after that change" in finding.explanation
    assert finding.measurements["latest"] == "0.0005"
    assert finding.measurements["changes_seen"] == 5 and len(finding.evidence) == 5


def test_long_floats_are_cut_to_a_few_figures_and_a_full_record_may_hold_more() -> None:
    # the recorder writes a value's first 16 changes: a cosine schedule stepped 20 times
    values = [repr(5e-4 * (1 - n / 20) ** 2) for n in range(1, 17)]
    rows = [lr_change(v, replays=n + 1, changes=n + 1, t=1_000 * (n + 1),
                      captured="0.0004972077065562821") for n, v in enumerate(values)]
    [finding] = findings(trace_of(rows, {0: 120}))
    assert finding.title == ("graph 0 replays AdamW's param_groups[0]['lr'] frozen at 0.0004972; "
                             "the script changed it 16 times or more, last recorded 2e-05 "
                             "(train.py:57)")
    assert "(16 changes or more: only the first 16 are recorded)" in finding.explanation
    assert "lr=torch.tensor(0.0004972, device=" in finding.fix
    assert finding.measurements["captured"] == "0.0004972077065562821"  # kept whole
    assert finding.measurements["latest"] == values[-1]


def test_a_change_after_the_last_replay_is_not_a_finding() -> None:
    assert findings(trace_of([lr_change("0.0", replays=100)], {0: 100})) == []


def test_a_change_seen_at_a_replay_without_a_line_says_which_replay() -> None:
    row = FrozenValue(2_000, 0, "pos", "variable", "decode.py", "3", "7", SEEN_AT_REPLAY,
                      POS_SITE, NONE, 12, 1, 0)
    [finding] = findings(trace_of([row], {0: 20}, CAPTURE_DECODE))
    assert finding.title == ("graph 0 replays pos in decode.py frozen at 3; the script has "
                             "since changed it, to 7 when last checked (seen before replay 13)")
    assert "first seen changed before replay 13" in finding.explanation
    assert finding.measurements["replays_after"] == 8


# -- eager calls before the capture ---------------------------------------------------------
def test_eager_values_with_one_graph_are_a_finding() -> None:
    rows = [pos_passed(0, "3", value) for value in ("0", "1", "2")]
    [finding] = findings(trace_of(rows, {0: 50}, CAPTURE_DECODE))
    assert finding.title == ("graph 0 replays argument pos of decode_step frozen at 3; eager "
                             "calls passed 0, 1, 2 (decode.py:31)")
    assert finding.explanation.startswith(
        "Eager calls of decode_step passed pos as 0, 1, 2; the graph froze 3 at decode.py:31")
    assert "Its 50 replays all ran with 3" in finding.explanation
    assert finding.measurements == {"captured": "3", "values": ["0", "1", "2"], "latest": "2",
                                    "changes_seen": 3, "replays_after": 50, "seen": "eager",
                                    "eager_values": ["0", "1", "2"], "name": "pos",
                                    "held_by": "argument", "owner": "decode_step"}
    assert finding.location == Location(DECODE, 31, "decode_step")


def pos_changed(value: str, replays: int, changes: int) -> FrozenValue:
    """The loop's ``pos``, the variable the capture passed to decode_step, seen changed."""
    return FrozenValue(1_000 * changes, 0, "pos", "variable", "decode.py", "3", value,
                       SEEN_AT_REPLAY, POS_SITE, ASSIGNED, replays, changes, 0)


def test_eager_values_of_the_number_changed_later_are_told_in_its_one_finding() -> None:
    eager = [pos_passed(0, "3", value) for value in ("0", "1", "2")]
    later = [pos_changed("4", 1, 1), pos_changed("6", 3, 2)]
    [finding] = findings(trace_of(eager + later, {0: 50}, CAPTURE_DECODE))
    assert finding.title == ("graph 0 replays pos in decode.py frozen at 3; the script has "
                             "since changed it, to 6 when last checked (decode.py:44)")
    assert "the script held 4, 6 (2 changes seen)" in finding.explanation
    assert finding.explanation.endswith(
        "Before the capture, eager calls of decode_step passed pos as 0, 1, 2.")
    assert finding.measurements["eager_values"] == ["0", "1", "2"]
    assert [e.index for e in finding.evidence] == [3, 4, 0, 1, 2]


def test_eager_values_of_another_name_stay_a_finding_of_their_own() -> None:
    eager = [FrozenValue(500, 0, "step", HELD_BY_ARGUMENT, "decode_step", "3", value,
                         SEEN_EAGER, POS_SITE, NONE, 0, 0, 0) for value in ("0", "1")]
    found = findings(trace_of(eager + [pos_changed("4", 1, 1)], {0: 50}, CAPTURE_DECODE))
    assert [f.measurements["seen"] for f in found] == [SEEN_AT_REPLAY, SEEN_EAGER]


def test_eager_values_of_another_frozen_number_stay_a_finding_of_their_own() -> None:
    eager = [pos_passed(0, "5", value) for value in ("0", "1")]
    [changed, passed] = findings(trace_of(eager + [pos_changed("4", 1, 1)], {0: 50},
                                          CAPTURE_DECODE))
    assert "eager calls" not in changed.explanation
    assert passed.measurements["seen"] == SEEN_EAGER and passed.measurements["captured"] == "5"


def test_eager_values_each_captured_by_a_graph_of_their_own_are_not_a_finding() -> None:
    # one graph per position, captured in a loop at one line: graph 0 took 1 and saw no
    # other value, so it has no row; graph 1 (2) saw 1 eagerly; graph 2 (4) saw 1 and 2
    rows = [pos_passed(1, "2", "1"), pos_passed(2, "4", "1"), pos_passed(2, "4", "2")]
    assert findings(trace_of(rows, {0: 9, 1: 9, 2: 9}, CAPTURE_DECODE)) == []


def test_an_eager_value_no_graph_holds_is_named_among_per_value_graphs() -> None:
    rows = [pos_passed(1, "2", "1"), pos_passed(1, "2", "5"), pos_passed(1, "2", "6")]
    [finding] = findings(trace_of(rows, {0: 9, 1: 9}, CAPTURE_DECODE))
    assert finding.graph == 1 and finding.measurements["values"] == ["1", "5", "6"]


def test_eager_values_of_a_graph_never_replayed_are_not_a_finding() -> None:
    rows = [pos_passed(0, "3", value) for value in ("0", "1")]
    assert findings(trace_of(rows, {0: 0}, CAPTURE_DECODE)) == []


# -- the fix --------------------------------------------------------------------------------
def test_a_learning_rate_this_torch_takes_as_a_tensor_gets_the_capturable_fix() -> None:
    [finding] = findings(trace_of([lr_change("0.0", replays=40, tensor_fix=1)], {0: 100}))
    assert finding.fix.startswith(
        "Pass the learning rate as a device tensor with capturable=True, e.g. AdamW(params, "
        "lr=torch.tensor(0.001, device=\"cuda\"), capturable=True): LR schedulers then "
        "update it in place and replays read the current value.")
    assert finding.fix.endswith("Or capture the step again after each change.")


def test_an_optimizer_number_without_the_tensor_fix_is_captured_again() -> None:
    [finding] = findings(trace_of([lr_change("0.0", replays=40, tensor_fix=0)], {0: 100}))
    assert finding.fix.startswith("Capture the optimizer step again after each change of "
                                  "param_groups[0]['lr'] (or keep it constant")
    assert "torch.tensor" not in finding.fix


def test_an_integer_is_indexed_with_a_device_tensor() -> None:
    [finding] = findings(trace_of([pos_passed(0, "3", "0")], {0: 5}, CAPTURE_DECODE))
    assert "pos_t = torch.zeros((), dtype=torch.long, device=\"cuda\")" in finding.fix
    assert "k_cache.index_copy_(1, pos_t.view(1), k)" in finding.fix
    assert "pos_t.fill_(pos)" in finding.fix
    assert finding.fix.endswith("Or capture one graph per value and replay the one that matches.")


def test_a_float_attribute_is_multiplied_by_a_device_tensor() -> None:
    row = FrozenValue(3_000, 0, "self.scale", HELD_BY_ATTRIBUTE, "Attention", "0.125", "0.25",
                      SEEN_AT_END, POS_SITE, ASSIGNED, 30, 1, 0)
    [finding] = findings(trace_of([row], {0: 45}, CAPTURE_DECODE))
    assert finding.title == ("graph 0 replays Attention's self.scale frozen at 0.125; the "
                             "script has since changed it, to 0.25 when last checked "
                             "(decode.py:44)")
    assert "first at decode.py:44, the assignment to it found in the source" in finding.explanation
    assert finding.fix.startswith("Keep self.scale in a device tensor, scale_t = "
                                  "torch.tensor(0.125, device=\"cuda\"), multiply by scale_t")
    assert "scale_t.fill_(new_value)" in finding.fix and "dtype=torch.long" not in finding.fix
    assert finding.fix.endswith("Or capture the graph again after each change.")


# -- silences -------------------------------------------------------------------------------
def test_nothing_changed_is_not_a_finding() -> None:
    assert findings(trace_of([], {0: 100})) == []


def test_a_value_changed_back_or_moved_into_a_tensor_is_not_a_finding() -> None:
    back = lr_change("0.001", replays=40, changes=2)
    tensor = lr_change(tensor_value("torch.float32", "cuda:0"), replays=40)
    assert findings(trace_of([back], {0: 100})) == []
    assert findings(trace_of([tensor], {0: 100})) == []


# -- through the whole pipeline -------------------------------------------------------------
def test_the_report_carries_the_finding_and_the_graph_is_unsafe() -> None:
    trace = trace_of([lr_change("0.0", replays=40)], {0: 100})
    diagnosis = diagnose(trace)
    assert [f.id for f in diagnosis.findings] == ["GD305"]
    report = build(trace, diagnosis)
    check_schema(to_json(report))
    assert "GD305 frozen-host-value" in render_text(report, width=200)
    verdict = diagnosis.verdicts[0]
    assert verdict.kind == "unsafe" and verdict.findings == ("GD305 frozen-host-value",)


def test_a_graph_per_value_is_the_pattern_not_a_frozen_value() -> None:
    # many_private_pools captures 8 graphs at one line, graph i adding the loop's i: the
    # recorder sees i move on after each capture, and each graph is meant to keep its own
    from graphdoctor.diagnose.rules import gd305_frozen_host_value
    from tests.reports import report_for

    report = report_for("many_private_pools")
    watched = {(r.graph, r.name, r.captured) for r in report.trace.tables["frozen_values"]}
    assert {(g, "i", str(g)) for g in range(7)} <= watched  # the last one never moved on
    assert not [f for f in report.diagnosis.findings if f.id == gd305_frozen_host_value.ID]
