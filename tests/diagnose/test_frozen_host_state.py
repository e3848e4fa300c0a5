"""GD306 frozen-host-state and GD307 output-kept-across-replays over small traces built
inline: a module switched to eval after a training-mode capture, a Python index and a branch
the script changed, a hook added, torch's TF32 switched; an output kept in a list and in an
attribute; and the silences: a change after the last replay, a graph per mode, numbers
(GD305's), nothing kept."""

from __future__ import annotations

from graphdoctor.diagnose import diagnose
from graphdoctor.diagnose.findings import Finding, Location
from graphdoctor.diagnose.rules import gd306_frozen_host_state, gd307_output_kept_across_replays
from graphdoctor.diagnose.view import TraceView
from graphdoctor.report.document import build, to_json
from graphdoctor.report.render.text import render_text
from graphdoctor.report.schema import check as check_schema
from graphdoctor.trace.event_kinds import NONE, FrozenValue, KeptOutput
from graphdoctor.trace.model import Trace
from graphdoctor.trace.names import (
    HELD_BY_ATTRIBUTE,
    HELD_BY_MODULE,
    HELD_BY_VARIABLE,
    KEPT_IN_ATTRIBUTE,
    KEPT_IN_LIST,
    SEEN_AT_CALL,
    SEEN_AT_END,
    SEEN_AT_REPLAY,
    USE_BACKEND,
    USE_BRANCH,
    USE_BY_VALUE,
    USE_HOOKS,
    USE_INDEX,
    USE_MODE,
)
from tests.diagnose.test_frozen_value import (
    ASSIGNED,
    CAPTURE_DECODE,
    CAPTURE_TRAIN,
    DECODE,
    OPTIMIZER_SITE,
    POS_SITE,
    SCHEDULER_LINE,
    TRAIN,
    trace_of,
)


def state(use: str, name: str, captured: str, value: str, replays: int, *,
          graph: int = 0, seen: str = SEEN_AT_REPLAY, stack: int = ASSIGNED,
          held_by: str = HELD_BY_ATTRIBUTE, owner: str = "PingPong",
          site: int = POS_SITE) -> FrozenValue:
    return FrozenValue(1_000 + replays, graph, name, held_by, owner, captured, value, seen,
                       site, stack, replays, 1, 0, use)


def host_findings(trace: Trace) -> list[Finding]:
    return list(gd306_frozen_host_state.check(TraceView(trace)))


def test_eval_after_a_training_capture_names_the_call_and_the_models_line() -> None:
    row = state(USE_MODE, "model", "train", "eval", 10, seen=SEEN_AT_CALL, stack=SCHEDULER_LINE,
                held_by=HELD_BY_MODULE, owner="Dropout ×2, BatchNorm1d", site=OPTIMIZER_SITE)
    [finding] = host_findings(trace_of([row], {0: 30}, CAPTURE_TRAIN))
    assert (finding.id, finding.name, finding.severity, finding.category) == (
        "GD306", "frozen-host-state", "error", "unsafe")
    assert finding.title == ("graph 0 replays model in train mode; the script switched it to "
                             "eval (train.py:57)")
    assert "model ran in train mode at train.py:40" in finding.explanation
    assert "(Dropout ×2, BatchNorm1d)" in finding.explanation
    assert "20 replays ran after that change" in finding.explanation
    assert finding.location == Location(TRAIN, 40, "train_step")
    assert "model.eval() before capturing" in finding.fix
    assert finding.measurements["changed_line"] == 57


def test_an_index_and_a_branch_changed_between_replays() -> None:
    index = state(USE_INDEX, "self.outs[self.slot]", "0", "1", 1)
    branch = state(USE_BRANCH, "self.calibrate", "False", "True", 3)
    [by_index, by_branch] = host_findings(trace_of([index, branch], {0: 8}, CAPTURE_DECODE))
    assert by_index.title == ("graph 0 replays self.outs[self.slot] with self.slot = 0 frozen; "
                              "the script has since set it to 1 (decode.py:44)")
    assert "graphs[self.slot].replay()" in by_index.fix
    assert by_branch.title == ("graph 0 replays the branch taken with self.calibrate = False; "
                               "the script has since made it True (decode.py:44)")
    assert by_branch.location == Location(DECODE, 31, "decode_step")


def test_a_hook_added_and_a_backend_switch_flipped() -> None:
    hooks = state(USE_HOOKS, "model", "0 hooks", "1 hook (1 added since the capture)", 4,
                  held_by=HELD_BY_MODULE, owner="Sequential")
    tf32 = state(USE_BACKEND, "torch.backends.cuda.matmul.allow_tf32", "True", "False", 4,
                 held_by=HELD_BY_VARIABLE, owner="torch", stack=NONE)
    found = {f.measurements["use"]: f for f in host_findings(trace_of([hooks, tf32], {0: 9}))}
    assert "a hook added after the capture never runs in a replay" in found[USE_HOOKS].explanation
    assert found[USE_BACKEND].severity == "warning"
    assert found[USE_BACKEND].title.endswith("(seen before replay 5)")


def test_silences_a_late_change_a_graph_per_mode_and_numbers() -> None:
    late = state(USE_MODE, "model", "train", "eval", 30, seen=SEEN_AT_CALL,
                 held_by=HELD_BY_MODULE, owner="Dropout")
    assert host_findings(trace_of([late], {0: 30})) == []
    # two graphs captured at one line, one in each mode: each keeps its own by design
    per_mode = [state(USE_MODE, "model", "train", "eval", 3, graph=0, held_by=HELD_BY_MODULE),
                state(USE_MODE, "model", "eval", "train", 3, graph=1, held_by=HELD_BY_MODULE)]
    assert host_findings(trace_of(per_mode, {0: 9, 1: 9})) == []
    number = state(USE_BY_VALUE, "pos", "3", "7", 2)
    assert host_findings(trace_of([number], {0: 9})) == []


def test_a_mode_switched_back_before_the_next_replay_and_a_change_seen_at_the_end() -> None:
    # model.eval() for an eager validation after replay 10, model.train() before replay 11
    away = state(USE_MODE, "model", "train", "eval", 10, seen=SEEN_AT_CALL,
                 held_by=HELD_BY_MODULE, owner="Dropout")
    back = state(USE_MODE, "model", "train", "train", 10, seen=SEEN_AT_CALL,
                 held_by=HELD_BY_MODULE, owner="Dropout")
    assert host_findings(trace_of([away, back], {0: 30})) == []
    # the same switch not undone: the replays from the 11th on ran in eval mode
    assert len(host_findings(trace_of([away], {0: 30}))) == 1
    at_end = state(USE_INDEX, "self.outs[self.slot]", "0", "1", 12, seen=SEEN_AT_END)
    assert host_findings(trace_of([at_end], {0: 30})) == []


def kept(how: str, holder: str, aliases: int, read: int = NONE) -> KeptOutput:
    return KeptOutput(5_000, 0, "static_next", holder, how, aliases, 1 << 20, 4096,
                      ASSIGNED, read, 4)


def test_an_output_kept_in_a_list_is_named_at_the_line_that_keeps_it() -> None:
    trace = trace_of([], {0: 20}, CAPTURE_DECODE)
    trace.tables["kept_outputs"].append(kept(KEPT_IN_LIST, "generated", 3))
    [finding] = gd307_output_kept_across_replays.check(TraceView(trace))
    assert (finding.id, finding.name, finding.category) == (
        "GD307", "output-kept-across-replays", "unsafe")
    assert finding.title == ("graph 0's output static_next is kept across replays in "
                             "generated at decode.py:44")
    assert finding.explanation.startswith("3 entries of generated are graph 0's output "
                                          "static_next itself")
    assert "generated.append(static_next.clone())" in finding.fix
    assert finding.location == Location(DECODE, 44, "<module>")


def test_an_attribute_read_after_the_next_replay_names_the_read() -> None:
    trace = trace_of([], {0: 20}, CAPTURE_DECODE)
    trace.tables["kept_outputs"].append(kept(KEPT_IN_ATTRIBUTE, "self.prev", 1, POS_SITE))
    [finding] = gd307_output_kept_across_replays.check(TraceView(trace))
    assert "decode.py:31 reads self.prev after a replay" in finding.explanation
    assert "self.prev = static_next.clone()" in finding.fix


def test_both_rules_through_the_whole_pipeline() -> None:
    trace = trace_of([state(USE_INDEX, "self.outs[self.slot]", "0", "1", 1)], {0: 8})
    trace.tables["kept_outputs"].append(kept(KEPT_IN_LIST, "generated", 3))
    diagnosis = diagnose(trace)
    assert sorted(f.id for f in diagnosis.findings) == ["GD306", "GD307"]
    report = build(trace, diagnosis)
    check_schema(to_json(report))
    text = render_text(report, width=200)
    assert "GD306 frozen-host-state" in text and "GD307 output-kept-across-replays" in text
    assert diagnosis.verdicts[0].kind == "unsafe"
