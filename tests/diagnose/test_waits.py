"""What a stuck thread waited on: from the frames below the user's line where Python shows
them (here: the recorded GPU runs' dumps), from the line's text where the wait is in C."""

from __future__ import annotations

import pytest

from graphdoctor.diagnose import stacks_at_end, waits
from graphdoctor.diagnose.findings import no_source
from graphdoctor.diagnose.rules import gd404_distributed_hang, gd406_process_hang
from tests.reports import report_for, traces_for


def main_thread(scenario: str, rank: int) -> stacks_at_end.ThreadStack:
    threads = stacks_at_end.parse(traces_for(scenario)[rank].status.stacks_at_end)
    assert threads[0].main and threads[0].current
    return threads[0]


@pytest.mark.parametrize(("rank", "kind", "call"), [
    (0, waits.TEARDOWN, "torch.distributed.destroy_process_group()"),
    (1, waits.GPU_SYNC, "torch.cuda.synchronize()"),
])
def test_recorded_gpu_waits_are_read_from_the_frames(rank: int, kind: str, call: str) -> None:
    thread = main_thread("dist_extra_allreduce_in_capture", rank)
    assert waits.wait_of(thread, no_source) == waits.Wait(kind, call)
    assert thread.user_frame is not None and thread.user_frame[2] == "<module>"


def test_graphdoctors_own_threads_have_no_user_frame() -> None:
    threads = stacks_at_end.parse(traces_for("dist_extra_allreduce_in_capture")[0]
                                  .status.stacks_at_end)
    assert [t.user_frame is not None for t in threads] == [True, False, False, False]
    assert [waits.describe(t, no_source) for t in threads[1:]] == ["", "", ""]


@pytest.mark.parametrize(("line", "kind", "call"), [
    ("    scale = loss.item()", waits.GPU_SYNC, ".item()"),
    ("done.synchronize()", waits.GPU_SYNC, ".synchronize()"),
    ("lock.acquire()  # nobody releases it", waits.LOCK, "Lock.acquire()"),
    ("    with self._lock:", waits.LOCK, "Lock.acquire()"),
    ("time.sleep(600)", waits.SLEEP, "time.sleep()"),
    ("data = conn.recv(4096)", waits.SOCKET, "socket.recv()"),
    ("pid, status = os.waitpid(child, 0)", waits.SUBPROCESS, "os.waitpid()"),
    ("answer = input('go? ')", waits.FILE, "input()"),
    ("chunk = pipe.readline()", waits.FILE, "readline()"),
])
def test_a_wait_in_c_is_read_from_the_line(line: str, kind: str, call: str) -> None:
    assert waits.classify((), line) == waits.Wait(kind, call)


@pytest.mark.parametrize("line", ["x = y + 1", "", "print('sleeping in', dirname)",
                                  "threads = [t for t in pool]"])
def test_a_line_that_waits_on_nothing_known_gives_none(line: str) -> None:
    assert waits.classify((), line) is None


def test_the_call_the_user_made_wins_over_what_it_called() -> None:
    called = (("/usr/lib/python3.12/threading.py", 359, "wait"),  # innermost
              ("/usr/lib/python3.12/queue.py", 171, "get"))
    assert waits.classify(called, "waiter.acquire()") == waits.Wait(waits.QUEUE, "Queue.get()")


def test_the_distributed_hang_says_what_each_rank_waited_on() -> None:
    hang = [f for f in report_for("dist_extra_allreduce_in_capture").diagnosis.findings
            if f.id == gd404_distributed_hang.ID]
    assert len(hang) == 1
    assert ("rank 1 was at dist_extra_allreduce_in_capture.py:28 in <module>, waiting on "
            f"{waits.GPU_SYNC} in torch.cuda.synchronize()") in hang[0].title
    assert f"rank 0 was at dist_extra_allreduce_in_capture.py:29 in <module>, waiting on " \
           f"{waits.TEARDOWN}" in hang[0].title


@pytest.mark.parametrize("scenario", ["dist_extra_allreduce_in_capture", "segfault_after_capture"])
def test_only_a_single_process_time_out_gets_the_hang_finding(scenario: str) -> None:
    """Several ranks: GD404's; a crash: not a hang."""
    assert gd406_process_hang.ID not in {f.id for f in report_for(scenario).diagnosis.findings}


def test_the_main_thread_is_known_wherever_the_signal_landed() -> None:
    """faulthandler marks the thread that took the signal, which need not be the main one."""
    dump = traces_for("dist_extra_allreduce_in_capture")[1].status.stacks_at_end
    moved = dump.replace("Current thread 0x", "Thread 0x")
    moved = moved.replace("Thread 0x", "Current thread 0x", 1)  # graphdoctor's flush thread
    threads = stacks_at_end.parse(moved)
    assert not threads[0].current and threads[0].label == stacks_at_end.MAIN_THREAD
    assert sum(t.label == stacks_at_end.MAIN_THREAD for t in threads) == 1
    assert waits.wait_of(threads[0], no_source) == waits.Wait(waits.GPU_SYNC,
                                                              "torch.cuda.synchronize()")


@pytest.mark.parametrize("scenario", ["dist_extra_allreduce_in_capture",
                                      "dist_branch_extra_collective",
                                      "dist_pipeline_p2p_capture"])
def test_a_hang_shows_each_ranks_last_event_on_the_timeline(scenario: str) -> None:
    """No rank waits in a collective (they hang in destroy_process_group): the evidence is
    the last event each rank recorded, so the finding opens on the timeline."""
    [hang] = [f for f in report_for(scenario).diagnosis.findings if f.id == "GD404"]
    assert sorted(e.rank for e in hang.evidence) == [0, 1]
    assert all(e.note.startswith("the last event rank") for e in hang.evidence)
    for evidence in hang.evidence:
        trace = report_for(scenario).trace_of(evidence.rank)
        last = max(row.t for table in ("syncs", "collectives", "replays", "stream_ops")
                   for row in trace.tables[table])
        assert trace.tables[evidence.kind][evidence.index].t == last
