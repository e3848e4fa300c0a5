"""How ``graphdoctor run`` starts the recording child: the module it runs, the variable that
carries the child's settings (a JSON object) from the parent to it, and the signal by which
the parent asks it for every thread's stack."""

from __future__ import annotations

import signal

CHILD_ENV = "GRAPHDOCTOR_CHILD"
# Named, not imported: importing the child's module would import the recorder into the parent.
CHILD_MODULE = "graphdoctor.record.child"

# Asks a recording process for every thread's stack, on a time-out. Not SIGUSR1 or SIGUSR2,
# which are the script's to use: a real-time signal near the top of the range, which the
# libraries that take one (counting up from SIGRTMIN) seldom reach. SIGUSR2 where the
# system has no real-time signals (macOS).
_HIGHEST_REAL_TIME: int | None = getattr(signal, "SIGRTMAX", None)
DUMP_STACKS_SIGNAL = _HIGHEST_REAL_TIME - 1 if _HIGHEST_REAL_TIME is not None else \
    int(signal.SIGUSR2)

# What a recording process leaves in its environment for the Python processes it starts, a
# JSON object: its spool, which theirs are named from, and the mode
# (graphdoctor.record.processes.follow).
FOLLOW_ENV = "GRAPHDOCTOR_FOLLOW"
