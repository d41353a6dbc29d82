"""CUDA-graph capture and padded replay helpers (imports torch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def capture_graph(body: Callable[[], None], *, warmup: int = 2, pool: Any = None) -> Any:
    """Warm `body` up on a side stream (JIT, autotune), then record it into a CUDAGraph."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):
        body()
    torch.cuda.synchronize()
    return graph
