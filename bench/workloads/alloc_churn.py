"""Heavy allocation churn: every step makes and drops many tensors of varied sizes
(500 steps, about 120 allocations each)."""
from _common import emit, make_churn, timed_loop

step = make_churn()
for _ in range(20):
    step()
emit(timed_loop(step, 500))
