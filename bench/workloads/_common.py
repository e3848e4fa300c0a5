"""Shared by the benchmark workloads: the step under test and an honest in-script timer."""

import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch


def make_step(layers: int, width: int):
    torch.manual_seed(0)
    weights = [torch.randn(width, width, device="cuda") / width**0.5 for _ in range(layers)]

    def step(x):
        for w in weights:
            x = torch.tanh(x @ w)
        return x

    return step


def make_churn():
    """A step that makes and drops many tensors of varied sizes (about 120 allocations)."""
    sizes = [(64 * (1 + i % 7), 32 * (1 + i % 5)) for i in range(40)]
    x = torch.randn(64, 64, device="cuda")

    def step():
        total = x.sum()
        for rows, cols in sizes:
            a = torch.empty(rows, cols, device="cuda").fill_(1.0)
            b = a * 2 + 1
            total = total + b.mean()
        return total

    return step


def warm_and_capture(step, static_x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step(static_x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_y = step(static_x)
    torch.cuda.synchronize()
    return graph, static_y


def timed_loop(body, steps: int) -> dict:
    """Per-step time of `steps` calls of body, by CUDA events and by the host clock."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    host = time.perf_counter()
    start.record()
    for _ in range(steps):
        body()
    end.record()
    torch.cuda.synchronize()
    host = time.perf_counter() - host
    return {"gpu_us_per_step": start.elapsed_time(end) * 1000 / steps,
            "host_us_per_step": host * 1e6 / steps, "steps": steps}


def median_of_blocks(body, steps: int, blocks: int) -> dict:
    """``timed_loop`` over ``blocks`` blocks: the median block's figures, and each block's."""
    runs = [timed_loop(body, steps) for _ in range(blocks)]
    middle = sorted(runs, key=lambda run: run["host_us_per_step"])[blocks // 2]
    return {**middle, "blocks_host_us": [round(run["host_us_per_step"], 3) for run in runs]}


def profile_block(body, steps: int, out: str) -> None:
    """One block of ``body`` under cProfile; the costliest functions written to ``out``."""
    import cProfile
    import io
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    timed_loop(body, steps)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    with open(out, "w") as file:
        file.write(text.getvalue())


def hook_cost(body, steps: int, pairs: int, patched: list) -> dict:
    """What graphdoctor's wrappers of ``patched`` ((class, name) pairs) cost each step,
    measured inside one process: blocks with the wrappers alternate with blocks where the
    functions they wrap (``__wrapped__``) are put back (:func:`alternating`). In a plain run
    nothing is wrapped and the difference is the control."""
    hooked = [(owner, name, owner.__dict__[name]) for owner, name in patched]

    def use(wrappers: bool) -> None:
        for owner, name, function in hooked:
            setattr(owner, name, function if wrappers else getattr(function, "__wrapped__",
                                                                    function))

    return alternating(body, steps, pairs, use, "hook_us")


def monitoring_cost(body, steps: int, pairs: int) -> dict:
    """What graphdoctor's ``sys.monitoring`` callbacks (the eager history's: every Python
    function's start and return until each is settled, and the call sites of torch's step
    parts) cost each step, inside one process: blocks with its callbacks alternate with
    blocks with them taken away (:func:`alternating`). Its events stay set: switching them
    off and on again has CPython instrument every code object again and fire each event
    that had been switched off where it fired, a cost of the toggling, not of graphdoctor.
    Taken away, a callback leaves an event that calls nothing (tens of nanoseconds), and
    only where graphdoctor still watches. Nothing where no tool of graphdoctor's is
    registered (a plain run, Python < 3.12)."""
    monitoring = getattr(sys, "monitoring", None)
    # graphdoctor's tool id looks free to the script (get_tool says None) but has events
    tools = [t for t in range(6) if monitoring and monitoring.get_tool(t) is None
             and monitoring.get_events(t)]
    if not tools:
        return {}
    tool, events = tools[0], monitoring.events
    watched = (events.PY_START, events.PY_RETURN, events.CALL, events.INSTRUCTION)
    callbacks = {event: monitoring.register_callback(tool, event, None) for event in watched}

    def use(on: bool) -> None:
        for event, callback in callbacks.items():
            monitoring.register_callback(tool, event, callback if on else None)

    return alternating(body, steps, pairs, use, "monitoring_us")


def alternating(body, steps: int, pairs: int, use, name: str) -> dict:
    """Blocks of ``steps`` calls of ``body`` with ``use(True)`` alternate with blocks with
    ``use(False)``, the order turned each pair. ``name``: the median over ``pairs`` pairs of
    the difference per step, in µs, with each pair's, and the 95% interval of that median
    (:func:`median_interval`); ``name_cpu``: the same difference in the thread's CPU time,
    which time the host gives other processes does not reach."""
    differences, cpu = [], []
    for pair in range(pairs):
        took, spent = {}, {}
        for on in ((False, True) if pair % 2 == 0 else (True, False)):
            use(on)
            started = time.thread_time_ns()
            took[on] = timed_loop(body, steps)["host_us_per_step"]
            spent[on] = (time.thread_time_ns() - started) / 1000 / steps
        use(True)
        differences.append(took[True] - took[False])
        cpu.append(spent[True] - spent[False])
    return {name: statistics.median(differences), f"{name}_ci": median_interval(differences),
            f"{name}_cpu": statistics.median(cpu), f"{name}_cpu_ci": median_interval(cpu),
            f"{name}_pairs": [round(d, 3) for d in differences]}


def median_interval(values: list) -> list:
    """A distribution-free 95% confidence interval of the median of ``values``: the order
    statistics at ranks n/2 -+ 0.98 sqrt(n) (the sign test's normal approximation)."""
    ordered, n = sorted(values), len(values)
    half = 0.98 * n ** 0.5
    low, high = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half + 0.5))
    return [round(ordered[low], 3), round(ordered[high], 3)]


def eager_window(body, inside: bool = True) -> dict:
    """A training step's figures where the eager history times it: ``monitoring_cost`` over
    100 pairs of one-step blocks (``inside``: the step's calls are still in the history's
    window of 256, the first 20 run before), then 200 steps timed, then
    ``graphdoctor_calls`` over 20 more."""
    ab = monitoring_cost(body, 1, 100) if inside else {}
    result = {**timed_loop(body, 200), **ab}
    result["graphdoctor_calls"] = graphdoctor_calls(body, 20)  # what a step pays for, after
    return result


def graphdoctor_calls(body, steps: int) -> dict:
    """Calls into graphdoctor's own Python per step, by function, over ``steps`` steps under
    cProfile: which of its hooks a step pays for (none, in a plain run)."""
    import cProfile
    import importlib.util
    import pstats

    spec = importlib.util.find_spec("graphdoctor")
    package = str(Path(spec.origin).parent) + os.sep if spec and spec.origin else None
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(steps):
        body()
    profile.disable()
    calls = {f"{Path(file).name}:{name}": round(count / steps, 2)
             for (file, _, name), (count, *_) in pstats.Stats(profile).stats.items()
             if package and file.startswith(package)}
    return dict(sorted(calls.items(), key=lambda item: -item[1]))


def emit(result: dict) -> None:
    print("BENCH " + json.dumps(result), flush=True)
    sys.stdout.flush()
