"""Captures and replays: the patches on torch's CUDA graph API
(``graphs``), a replay's own path (``replay_path``), what a graph holds read from the driver
(``anatomy_reader``), the memory it reads (``inputs``) and the outputs a script keeps across
replays (``kept_outputs``, ``kept_lines``).
"""
