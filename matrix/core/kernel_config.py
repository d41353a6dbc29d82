"""What makes a kernel configuration distinct (one JIT compile): backend, implementation, cost-model axes."""

from __future__ import annotations

from dataclasses import dataclass

from matrix.core.model import Cell, Matrix, Value

NO_BACKEND = "default"  # a matrix without a `backend` axis: one implementation, keyed by the cost axes alone


@dataclass(frozen=True, kw_only=True)
class KernelConfig:
    """Cells with equal configurations share one compiled kernel; the shard planner and xdist grouping both use it."""

    backend: str
    impl: str
    values: tuple[tuple[str, Value], ...]

    @property
    def key(self) -> str:
        """The one spelling of a configuration, e.g. `trtllm_mha/xqa/page_size=16,head_dim=128` (shard plans, measured
        compile times and the GPU session's xdist groups all use it)."""
        parts = [f"{axis}={value}" for axis, value in self.values]
        return f"{self.backend}/{self.impl}" + ("/" + ",".join(parts) if parts else "")


def kernel_config(matrix: Matrix, cell: Cell, impl: str | None) -> KernelConfig:
    """The cell's configuration under `impl` (the backend itself when None); axes from [cost.backend.B].config_axes."""
    backend = str(cell.get("backend")) if cell.get("backend") is not None else NO_BACKEND
    axes = matrix.cost.backends.get(backend, matrix.cost.default).config_axes
    values = tuple((name, value) for name in axes if (value := cell.get(name)) is not None)
    return KernelConfig(backend=backend, impl=impl or backend, values=values)
