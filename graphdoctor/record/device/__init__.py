"""The GPU's side: allocations and allocator totals (``memory``), device
facts from NVML (``devices``), GPU time of replays, calls and kernels from CUDA events, the
driver or torch.profiler (``timing``, ``driver_timer``, ``gpu_sample``, ``kernel_times``),
and NVTX ranges for Nsight Systems (``nvtx_ranges``).
"""
