"""Sets up its own warnings, logging, hooks and signal handlers, uses torch.compile and a
thread that raises, and prints what it sees of its process: the same plain and under
graphdoctor. Run by tests/transparency/test_cpu.py."""
import json
import logging
import signal
import sys
import threading
import warnings

import torch

LOGGERS = ["", "torch", "torch._dynamo", "torch._dynamo.symbolic_convert.__graph_breaks",
           "torch._dynamo.guards.__recompiles"]
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2]


def name_of(thing):
    return getattr(thing, "__module__", "?") + "." + getattr(thing, "__qualname__", repr(thing))


def logger_state(name):
    log = logging.getLogger(name)
    return [log.level, log.propagate, log.disabled, [type(h).__name__ for h in log.handlers],
            log.getEffectiveLevel(), log.isEnabledFor(logging.DEBUG)]


def state(when):
    monitoring = getattr(sys, "monitoring", None)
    print(f"STATE {when} " + json.dumps({
        "filters": [repr(f) for f in warnings.filters],
        "showwarning": name_of(warnings.showwarning),
        "loggers": {name: logger_state(name) for name in LOGGERS},
        "excepthook": name_of(sys.excepthook),
        "threading.excepthook": name_of(threading.excepthook),
        "signals": {s.name: name_of(signal.getsignal(s)) for s in SIGNALS},
        "tools": [monitoring.get_tool(i) for i in range(6)] if monitoring else None,
    }), flush=True)


def my_thread_hook(args):
    print(f"my thread hook saw {args.exc_type.__name__}", flush=True)


def my_signal(signum, frame):
    print(f"my handler got {signal.Signals(signum).name}", flush=True)


def raise_in_a_thread():
    raise ValueError("raised in a thread")


def breaks_its_graph(x):
    x = x * 2
    torch._dynamo.graph_break()  # torch logs it at DEBUG, which graphdoctor reads
    return x + 1


state("as found")
warnings.filterwarnings("error", category=DeprecationWarning)
logging.basicConfig(level=logging.INFO)
logging.getLogger("torch._dynamo").addHandler(logging.NullHandler())
logging.getLogger("torch._dynamo.guards.__recompiles").setLevel(logging.WARNING)
sys.excepthook = lambda *exc: print("my excepthook", flush=True)
threading.excepthook = my_thread_hook
for signum in (signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(signum, my_signal)
torch.compile(breaks_its_graph, backend="eager")(torch.ones(3))
thread = threading.Thread(target=raise_in_a_thread)
thread.start()
thread.join()
signal.raise_signal(signal.SIGUSR2)
state("as set")
