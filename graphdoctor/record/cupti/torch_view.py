"""What the CUPTI layer saw of PyTorch's own graphs. PyTorch's hooks record them; CUPTI's
counts and GPU times are kept beside, so a report says whether the two views agree."""

from __future__ import annotations

from dataclasses import dataclass, field

TORCH_SAMPLES = 100_000  # PyTorch launches whose GPU time is kept for the cross-check


@dataclass
class TorchView:
    """What CUPTI saw of PyTorch's own graphs, which its hooks record: kept only to check
    the two views against each other (counts, and GPU time per launch)."""

    captures: int = 0
    launches: int = 0
    streams: set[int] = field(default_factory=set)  # capturing for PyTorch now
    gpu: list[int] = field(default_factory=list)  # GPU ns per launch, the first TORCH_SAMPLES
    instantiations: list[int] = field(default_factory=list)  # host ns each took

    def add(self, gpu_ns: int) -> None:
        if len(self.gpu) < TORCH_SAMPLES:
            self.gpu.append(gpu_ns)

    def summary(self) -> str:
        timed = sorted(self.gpu)
        per_launch = (f", {timed[len(timed) // 2] / 1000:,.1f} µs of GPU time per launch "
                      f"(median of {len(timed):,})") if timed else ""
        graphs = f"{self.captures} graph{'' if self.captures == 1 else 's'}"
        them = "it" if self.captures == 1 else "them"
        return (f"CUPTI saw PyTorch capture {graphs} and launch {them} "
                f"{self.launches:,} times{per_launch}{self._instantiating(them)}; PyTorch's "
                "own hooks recorded them")

    def _instantiating(self, them: str) -> str:
        if not self.instantiations:
            return ""
        took = sum(self.instantiations) / 1000
        return f"; instantiating {them} took {took:,.1f} µs{' in all' if them == 'them' else ''}"
