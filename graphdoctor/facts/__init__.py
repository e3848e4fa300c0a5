"""Facts derived from a trace, each worked out once, for every reader.

The rules, the report, its renderers and the TUI ask these rather than walk the trace: the
user's frame of a stack and the syncs and replays of a graph (``queries``), where an event
happened in words (``locations``), what a trace holds counted and summed (``tallies``), one
time axis for a job's ranks (``job_clock``), stream names and the forks and joins between
them (``stream_names``, ``stream_links``) and where each node of a graph runs in a replay
(``node_schedule``). Pure functions of a trace: nothing here writes or reads a file.
"""
