"""Edge: the values `matrix_cell` is parametrized with; expected skips carry the rule's skip mark."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from matrix.core.model import Cell, Expectation, Outcome

SKIP_PREFIX = "specmatrix: "


def skip_reason(exp: Expectation) -> str:
    """`specmatrix: [rule-id] reason (detail)`: the rule that makes this cell an expected skip."""
    return SKIP_PREFIX + exp.reason


class CellParameters:
    """Argument values and ids for `metafunc.parametrize`, built once per cell and shared by every test."""

    def __init__(self, cells: Sequence[Cell], expectations: Mapping[str, Expectation], *, run_expected_skips: bool) -> None:
        self._values: dict[str, object] = {}
        for cell in cells:
            exp = expectations[cell.id]
            if exp.outcome is Outcome.SKIP and not run_expected_skips:
                self._values[cell.id] = pytest.param(cell, marks=pytest.mark.skip(reason=skip_reason(exp)), id=cell.id)
            else:
                self._values[cell.id] = cell

    def for_cells(self, cells: Sequence[Cell]) -> tuple[list[object], list[str]]:
        return [self._values[c.id] for c in cells], [c.id for c in cells]
