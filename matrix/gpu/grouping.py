"""Kernel-configuration keys: cells that share one compile share one xdist group."""

from __future__ import annotations

from matrix.expect import resolve_impl
from matrix.model import Cell, Matrix


def config_key(matrix: Matrix, cell: Cell, sm: int | None) -> str:
    """backend + impl + the cost model's config_axes values, e.g. `trtllm_mha-xqa-page16-hd128-gqa4-bf16-dt1`.

    Cells with one key need one JIT compile; grouping them on one worker (xdist
    --dist loadgroup) pays that compile once per host instead of once per worker.
    """
    backend = str(cell.get("backend"))
    impl = resolve_impl(matrix, backend, sm) or backend
    cost = matrix.cost.backends.get(backend)
    axes = cost.config_axes if cost is not None else ()
    parts = [backend, impl]
    for name in axes:
        value = cell.get(name)
        if value is None:
            continue
        part = matrix.axis(name).id_format.format(value)
        parts.append(part)
    return "-".join(parts)
