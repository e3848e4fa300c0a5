"""Sends itself SIGUSR2 without a handler of its own: it dies of it, as SIGUSR2's default
action says, plain and under graphdoctor."""
import os
import signal
import time

import torch

torch.ones(1)
os.kill(os.getpid(), signal.SIGUSR2)
time.sleep(2)
print("still running after SIGUSR2", flush=True)
