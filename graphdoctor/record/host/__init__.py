"""Where the host thread meets the GPU outside a graph: syncs, warnings and
garbage collections (``syncs``, ``sync_warnings``), stream and event operations
(``streams``) and the collectives of torch.distributed (``distributed``).
"""
