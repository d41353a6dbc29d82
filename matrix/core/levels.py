"""Which GPU check covers which cells: one table, read by tests/gpu, the cell runner and `specmatrix register`.

Pure data over cells, so it lives in the core: the GPU harness and the register generator (sibling features)
both read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from matrix.core.model import Cell
from matrix.core.selectors import Selector


class Level(StrEnum):
    """One GPU check of a cell (matrix/gpu/checks.py)."""

    KERNEL = "kernel"  # flashinfer's trtllm decode over the expanded rows
    SGLANG = "sglang"  # sglang's draft backend through the worker's metadata methods
    RUNNER = "runner"  # sglang's FrozenKVMTPCudaGraphRunner around a tiny draft model
    TARGET = "target"  # chain target verify through flashinfer's trtllm decode
    TARGET_SGLANG = "target-sglang"  # target verify through sglang's backend in TARGET_VERIFY mode


# The cells each level's test is parametrized over (selector syntax of matrix/core/selectors.py).
LEVEL_CELLS: dict[Level, str] = {
    # The kernel level runs flashinfer alone: which backend the target runs changes nothing there.
    Level.KERNEL: "draft-trtllm_mha-* !draft-*-tgt_*",
    Level.SGLANG: "draft-{triton,trtllm_mha,flashinfer,fa3}-*",
    Level.RUNNER: "draft-{triton,trtllm_mha}-*-graph",
    Level.TARGET: "target-trtllm_mha-*",
    Level.TARGET_SGLANG: "target-{triton,flashinfer,fa3}-*",
}


def levels_for(cell_id: str) -> tuple[Level, ...]:
    """Every level whose test covers this cell, in table order."""
    return tuple(level for level, text in LEVEL_CELLS.items() if Selector.parse(text).matches(cell_id))


def uncovered(cells: Sequence[Cell]) -> list[str]:
    """Cells no GPU check covers."""
    return [c.id for c in cells if not levels_for(c.id)]
