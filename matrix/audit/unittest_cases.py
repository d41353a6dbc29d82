"""Edge: run a unittest.TestCase method for one matrix cell, so class-level guards are audited per cell.

sglang's attention tests are TestCase classes guarded with `@unittest.skipIf(...)`. pytest cannot parametrize
TestCase methods, so a matrix test calls `run_unittest_case(TestX, "test_decode", matrix_cell)`: the method reads
`self.matrix_cell`; a class or method skip becomes a pytest skip that names the class, which the audit then
judges against the matrix. Give the class `__test__ = False` so pytest does not also collect it as a plain,
cell-less unittest class.
"""

from __future__ import annotations

import unittest

import pytest

from matrix.core.model import Cell


def _skip_why(case_class: type[unittest.TestCase], method: object) -> str | None:
    for owner in (case_class, method):
        if getattr(owner, "__unittest_skip__", False):
            return str(getattr(owner, "__unittest_skip_why__", "") or "skipped")
    return None


def run_unittest_case(case_class: type[unittest.TestCase], method_name: str, cell: Cell) -> None:
    """setUpClass, setUp, the method, tearDown, cleanups, tearDownClass; failures and skips propagate to pytest."""
    why = _skip_why(case_class, getattr(case_class, method_name))
    if why is not None:
        pytest.skip(f"{case_class.__qualname__}.{method_name}: {why}")
    case = case_class(method_name)
    case.matrix_cell = cell  # type: ignore[attr-defined]
    case_class.setUpClass()
    try:
        case.setUp()
        try:
            getattr(case, method_name)()
        finally:
            case.tearDown()
            case.doCleanups()
    finally:
        case_class.tearDownClass()
        case_class.doClassCleanups()
