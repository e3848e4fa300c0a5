"""A script with lines that run and lines that do not, measured by coverage."""
import sys

import torch


def used(x):
    if x > 0:
        return x * 2
    return -x  # never reached


def unused():
    return torch.zeros(1)


total = used(torch.ones(2).sum().item())
if len(sys.argv) > 5:
    unused()
print("total", total)
