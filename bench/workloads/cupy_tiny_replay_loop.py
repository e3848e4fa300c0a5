"""A host-bound CuPy replay loop: a graph of one small kernel, 5000 launches, so the host's
time per launch is launch overhead (see cupy_replay_loop.py for the GPU-bound one)."""
import cupy as cp
from _cupy_common import capture, emit_launch_loop

stream = cp.cuda.Stream(non_blocking=True)
emit_launch_loop(capture(lambda y: y * 2, cp.ones(1 << 12, dtype=cp.float32), stream), stream,
                 5000)
