"""The trace: what one recorded run did, as plain data, and how it is built.

The model (``model``, ``anatomy``) and its vocabulary, declared once (``event_kinds``, ``names``,
``endings``, ``process_groups``); the spool the recorder streams to (``spool/``); assembly, a
pure function of the spool's records (``assemble``, ``builder``, ``handlers``, with what it
works out as it reads: ``run_facts``, ``cuda_state``, ``phases``, ``loop_pace``); torch's log
text read into compile events (``torch_logs/``); and the JSON form (``codec``). What is derived
from a finished trace lives in :mod:`graphdoctor.facts`.
"""
