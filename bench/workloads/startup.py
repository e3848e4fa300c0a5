"""Imports torch and does nothing else: the start-up cost of graphdoctor run."""
import torch

print('BENCH {"torch": "' + torch.__version__ + '"}')
