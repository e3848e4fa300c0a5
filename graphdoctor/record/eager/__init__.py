"""Eager calls: the flight recorder of the user's own functions
(``eager_history``, ``kept_calls``, ``open_calls``), the functions a capture ran and their
eager time (``calls``), and torch's step parts (``step_parts``, ``part_sites``).
"""
