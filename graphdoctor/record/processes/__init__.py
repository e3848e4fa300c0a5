"""The Python processes a script starts, followed and recorded:
``follow`` (how a process comes to be watched, with ``follow_site``'s ``sitecustomize``) and
``followed`` (recording it from its import of torch).
"""
