"""Eager beside replay for one graph: its figures, and how they are drawn."""
