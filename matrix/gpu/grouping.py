"""Kernel-configuration keys: cells that share one compile share one xdist group."""

from __future__ import annotations

from matrix.core.expect import resolve_impl
from matrix.core.kernel_config import kernel_config
from matrix.core.model import Cell, Matrix


def config_key(matrix: Matrix, cell: Cell, sm: int | None) -> str:
    """The cell's KernelConfig.key under the implementation its backend has on `sm` (the shard planner's format),
    e.g. `trtllm_mha/xqa/page_size=16,head_dim=128,...`.

    Cells with one key need one JIT compile; grouping them on one worker (xdist
    --dist loadgroup) pays that compile once per host instead of once per worker.
    """
    return kernel_config(matrix, cell, resolve_impl(matrix, str(cell.get("backend")), sm)).key
