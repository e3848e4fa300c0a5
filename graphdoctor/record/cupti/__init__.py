"""Graphs made outside PyTorch, seen through CUPTI (``graphdoctor run --cupti``)."""
