"""CUDA-event timing of a replayable callable: warm-up, then the median of repeats (imports torch)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Timing:
    median_us: float
    min_us: float
    repeats: int


def time_replays(replay: Callable[[], None], *, warmup: int = 20, repeats: int = 100) -> Timing:
    """Each repeat is timed alone between two CUDA events; no assertion on the numbers."""
    import torch

    for _ in range(warmup):
        replay()
    torch.cuda.synchronize()
    samples: list[float] = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return Timing(median_us=statistics.median(samples), min_us=min(samples), repeats=repeats)
