"""The timeline: its lanes built from a trace, laid out, drawn and navigated."""
