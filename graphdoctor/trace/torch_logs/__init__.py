"""torch's own log text, read: why torch.compile compiled again
(``guards``), why CUDAGraph Trees recorded again (``rerecords``) and the compile events of its
log records (``compile_logs``). The recorder keeps the text raw; a new wording is a new
pattern here and no new recording.
"""
