"""Device facts and utilisation from NVML, and the versions of what the run used.

NVML is read without touching CUDA, so graphdoctor never creates a CUDA context the script
did not ask for. NVML numbers devices by PCI order while CUDA follows
``CUDA_VISIBLE_DEVICES``; the map between them goes through UUIDs when the variable names
devices, and through indices otherwise.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import threading
from typing import Any

from graphdoctor.record.recorder import Recorder, Uninstall
from graphdoctor.trace.event_kinds import GpuSample
from graphdoctor.trace.names import GRAPHS_ENV, JOB_ENV
from graphdoctor.trace.spool import records as sr

_ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "TORCH_LOGS",
             "CUDA_LAUNCH_BLOCKING", "TORCHINDUCTOR_CUDAGRAPH_OR_ERROR", "NCCL_NVLS_ENABLE",
             "RANK", "LOCAL_RANK", "WORLD_SIZE", GRAPHS_ENV, *JOB_ENV)


def environment() -> dict[str, Any]:
    import torch

    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "cuda": torch.version.cuda or "", **machine()}


def machine() -> dict[str, Any]:
    """Where the run ran, without torch (all a native program's run has of it)."""
    return {
        "platform": platform.platform(), "hostname": socket.gethostname(),
        "env": [[k, os.environ[k]] for k in _ENV_KEYS if k in os.environ],
        "rank": int(os.environ.get("RANK", -1)),
        "world_size": int(os.environ.get("WORLD_SIZE", -1)),
    }


def install(recorder: Recorder) -> Uninstall | None:
    try:
        import pynvml  # type: ignore[import-untyped] # nvidia-ml-py ships no types
    except ImportError:
        recorder.note("device facts and utilisation", "nvidia-ml-py (pynvml) is not installed")
        return None
    try:
        pynvml.nvmlInit()
    except Exception as error:  # noqa: BLE001 - NVMLError and friends
        recorder.note("device facts and utilisation", f"NVML unavailable: {error}")
        return None
    handles = _visible_handles(pynvml)
    recorder.emit(sr.Devices([_facts(pynvml, i, h) for i, h in handles]))
    sampler = _Sampler(recorder, pynvml, handles)
    sampler.start()

    def uninstall() -> None:
        sampler.stop()
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass

    return uninstall


def _visible_handles(nvml: Any) -> list[tuple[int, Any]]:
    count = nvml.nvmlDeviceGetCount()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return [(i, nvml.nvmlDeviceGetHandleByIndex(i)) for i in range(count)]
    handles = []
    for cuda_index, item in enumerate(x.strip() for x in visible.split(",") if x.strip()):
        try:
            handle = (nvml.nvmlDeviceGetHandleByIndex(int(item)) if item.isdigit()
                      else nvml.nvmlDeviceGetHandleByUUID(item))
        except Exception:  # noqa: BLE001 - an invalid entry hides the rest, as in CUDA
            break
        handles.append((cuda_index, handle))
    return handles


def _facts(nvml: Any, index: int, handle: Any) -> dict[str, Any]:
    def read(fn: Any) -> Any:
        try:
            value = fn(handle)
        except Exception:  # noqa: BLE001
            return None
        return value.decode() if isinstance(value, bytes) else value

    memory = read(nvml.nvmlDeviceGetMemoryInfo)
    capability = read(nvml.nvmlDeviceGetCudaComputeCapability)
    return {"index": index, "name": read(nvml.nvmlDeviceGetName) or "",
            "memory_total": int(getattr(memory, "total", 0) or 0),
            "compute_capability": ".".join(map(str, capability)) if capability else "",
            "driver": _driver(nvml)}


def _driver(nvml: Any) -> str:
    try:
        value = nvml.nvmlSystemGetDriverVersion()
    except Exception:  # noqa: BLE001
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)


class _Sampler(threading.Thread):
    """Reads utilisation, memory and clocks of each visible device at a fixed interval."""

    def __init__(self, recorder: Recorder, nvml: Any, handles: list[tuple[int, Any]]):
        super().__init__(name="graphdoctor-nvml", daemon=True)
        self._rec, self._nvml, self._handles = recorder, nvml, handles
        self._stop_event = threading.Event()

    def run(self) -> None:
        interval = self._rec.config.nvml_interval_s
        while not self._stop_event.wait(interval):
            for index, handle in self._handles:
                self._sample(index, handle)

    def _sample(self, index: int, handle: Any) -> None:
        nvml = self._nvml
        try:
            util = nvml.nvmlDeviceGetUtilizationRates(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            clock = nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)
        except Exception:  # noqa: BLE001 - a device that stops answering ends the samples
            self._stop_event.set()
            return
        self._rec.emit(GpuSample(self._rec.now(), index, int(util.gpu),
                                          int(util.memory), int(memory.used), int(clock)))

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=2)
