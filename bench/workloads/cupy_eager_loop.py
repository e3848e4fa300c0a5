"""An eager CuPy loop of a step that was captured once: 10 small elementwise kernels a call,
2000 calls. Under --cupti every call of the step is timed with a pair of driver events, the
worst case for that timing's cost (see eager_loop.py for torch's)."""
import cupy as cp
from _cupy_common import capture, emit_eager_loop


def step(y):
    for _ in range(5):
        y = y * 1.0001 + 1e-4
    return y


stream = cp.cuda.Stream(non_blocking=True)
x = cp.ones(1 << 12, dtype=cp.float32)
capture(step, x, stream)
emit_eager_loop(step, x, stream, 2000)
