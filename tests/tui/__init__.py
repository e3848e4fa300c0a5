"""Tests of the terminal UI: pure layout first, then Pilot behaviour, then snapshots."""
