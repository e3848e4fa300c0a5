"""torch.compile: graph breaks, recompiles, cudagraph skips and
re-recordings (``compiled``), a compiled function's calls under CUDAGraph Trees
(``call_lane``), the inputs of a call that raised inside torch (``failed_calls``), the
tensors a failed guard names (``guarded``) and runs with CUDA graphs off (``graphs_off``).
"""
