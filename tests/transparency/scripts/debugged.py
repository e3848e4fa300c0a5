"""Stops at breakpoint(); the test drives pdb through standard input."""
import torch

value = torch.ones(2).sum().item()
breakpoint()
doubled = value * 2
print("doubled", doubled)
