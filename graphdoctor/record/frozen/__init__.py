"""Host state a graph froze at capture: the numbers and the torch state a
replay keeps, watched for the script's later changes (``frozen_values``, ``host_state``,
``host_reads``, ``scalar_uses``, ``watches``), and the user's source read around a capture
(``captured_names``, ``captured_reads``, ``source_assignments``).
"""
