"""Imports torch and does nothing else: the start-up cost of graphdoctor run."""
import torch

print("BENCH {}".format('{"torch": "%s"}' % torch.__version__))
