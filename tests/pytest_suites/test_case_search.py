"""A parametrized test audited as one item (cases over the cap, or values that are not literals): its guards that
read parameters are searched over the cases; it runs where one case meets no skip, skips where every case meets one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport

# 4 * 4 * 3 * 2 = 96 cases: over the 64 the audit lists as items.
PARAMS = """
import pytest
import torch

@pytest.mark.parametrize("rows", [8, 24, 96, 300])
@pytest.mark.parametrize("cols", [16, 64, 128, 512])
@pytest.mark.parametrize("width", [1, 2, 4])
@pytest.mark.parametrize("masked", [True, False])
"""

CASES = {
    # One case (rows <= cols, or not masked) meets no skip: the test runs.
    "some-case-runs": ("if rows > cols and masked:\n        pytest.skip('tall masked grids are not supported')", "runs"),
    # Every case skips: rows are never above 400.
    "every-case-skips": ("if rows < 400:\n        pytest.skip('only huge grids')", "skips"),
    # A case runs only on a GPU: the runner's fact decides together with the parameter.
    "gpu-and-parameter": ("if width > 0 and not torch.cuda.is_available():\n        pytest.skip('needs a GPU')", "runs"),
    # Each case reads a fact the audit does not know: undetermined, with that fact as the reason.
    "each-case-unknown": ("if mystery_probe(width):\n        pytest.skip('probe says no')", "undetermined"),
    # Two guards: every case meets one of them.
    "two-guards-cover-every-case": (
        "if masked:\n        pytest.skip('masked off')\n    if not masked and width < 8:\n        pytest.skip('narrow')",
        "skips",
    ),
}


def _verdict(report: PytestAuditReport, skipping: Callable[[PytestAuditReport], dict[str, str]]) -> str:
    if report.undetermined:
        return "undetermined"
    return "skips" if skipping(report) else "runs"


@pytest.mark.parametrize("name", sorted(CASES))
def test_guards_searched_over_the_cases(
    name: str,
    audit: Callable[..., PytestAuditReport],
    schedule: Callable[..., str],
    skipping: Callable[[PytestAuditReport], dict[str, str]],
) -> None:
    body, expected = CASES[name]
    text = PARAMS + f"def test_grid(rows, cols, width, masked):\n    {body}\n"
    report = audit({"tests/test_grid.py": text}, schedule(("h100", "pytest tests/")))
    assert report.tests == 1
    assert _verdict(report, skipping) == expected
    if expected == "undetermined":
        (test,) = report.undetermined_tests
        assert "mystery_probe" in test.reason


def test_values_that_are_not_literals_are_searched_too(
    audit: Callable[..., PytestAuditReport],
    schedule: Callable[..., str],
    skipping: Callable[[PytestAuditReport], dict[str, str]],
) -> None:
    text = (
        "import pytest\nimport torch\n\n"
        "@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])\n"
        "@pytest.mark.parametrize('size', [1, 2])\n"
        "def test_cast(dtype, size):\n"
        "    if size > 1 and dtype == torch.float16:\n"
        "        pytest.skip('no')\n"
    )
    report = audit({"tests/test_cast.py": text}, schedule(("h100", "pytest tests/")))
    assert _verdict(report, skipping) == "runs"  # size 1 meets no skip, whatever dtype is


def test_a_case_marked_with_pytest_param_is_not_searched(
    audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]
) -> None:
    text = (
        "import pytest\nimport torch\n\n"
        "@pytest.mark.parametrize('size', [1, pytest.param(2, marks=pytest.mark.skip)])\n"
        "@pytest.mark.parametrize('dtype', [torch.float16])\n"
        "def test_cast(dtype, size):\n"
        "    if size > 1 and mystery_probe():\n"
        "        pytest.skip('no')\n"
    )
    report = audit({"tests/test_cast.py": text}, schedule(("h100", "pytest tests/")))
    assert report.undetermined == 1
