"""The report: the document a run is written to, read back, redacted, gated,
compared and diffed (``document``, ``io``, ``schema``...), and its renderers (``render/``).
"""
