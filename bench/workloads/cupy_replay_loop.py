"""A replay loop of a CuPy graph (100 small elementwise kernels, 3000 launches), for the
cost of graphdoctor's CUPTI layer (--cupti) on graphs made outside PyTorch."""
import cupy as cp
from _cupy_common import capture, emit_launch_loop


def step(y):
    for _ in range(100):
        y = y * 1.0001 + 1e-4
    return y


stream = cp.cuda.Stream(non_blocking=True)
emit_launch_loop(capture(step, cp.ones(1 << 12, dtype=cp.float32), stream), stream, 3000)
