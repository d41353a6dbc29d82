"""Kernel-configuration keys: cells that share one compile share one xdist group."""

from __future__ import annotations

from matrix.core.expect import resolve_impl
from matrix.core.kernel_config import kernel_config
from matrix.core.model import Cell, Matrix


def config_key(matrix: Matrix, cell: Cell, sm: int | None) -> str:
    """backend + impl + the cost model's config_axes values, e.g. `trtllm_mha-xqa-page16-hd128-gqa4-bf16-dt1`.

    Cells with one key need one JIT compile; grouping them on one worker (xdist
    --dist loadgroup) pays that compile once per host instead of once per worker.
    """
    config = kernel_config(matrix, cell, resolve_impl(matrix, str(cell.get("backend")), sm))
    parts = [config.backend, config.impl, *(matrix.axis(name).id_format.format(value) for name, value in config.values)]
    return "-".join(parts)
