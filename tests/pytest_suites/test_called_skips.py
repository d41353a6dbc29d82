"""Skips a test reaches through what its body calls: literal arguments bound, chains of calls, tests calling
tests, helpers imported from another file of the tree. Each planted skip is also shown clearing when fixed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]

HELPERS = """
import pytest
import torch

def needs_wide_heads(width):
    if width > 256 and torch.cuda.get_device_capability()[0] < 10:
        pytest.skip("wide heads need sm100")

def launch(kind, ranks, note=None):
    if torch.cuda.device_count() < ranks:
        pytest.skip("not enough GPUs")
    if kind == "fancy" and torch.cuda.get_device_capability()[0] != 10:
        pytest.skip("fancy kernels are sm100 only")

def require_new_arch():
    if torch.cuda.get_device_capability()[0] < 10:
        pytest.skip("sm100")

def _run_case(size, flavor):
    require_new_arch()
    return size
"""

CASES = {
    # name: (test file body, the planted call, the call that runs on an H100)
    "literal-argument": ("def test_wide():\n    needs_wide_heads(512)\n", "needs_wide_heads(512)", "needs_wide_heads(128)"),
    "positional-string": ('def test_kind():\n    launch("fancy", 1)\n', 'launch("fancy", 1)', 'launch("plain", 1)'),
    "keyword-count": ('def test_ranks():\n    launch("plain", ranks=2)\n', "ranks=2", "ranks=1"),
    "two-levels-down": ("def test_chain():\n    _run_case(1, 'x')\n", "_run_case(1, 'x')", "len('x')"),
    "assigned-result": ("def test_assigned():\n    out = _run_case(1, 'x')\n", "_run_case(1, 'x')", "len('x')"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_skip_reached_through_a_call_is_found(
    case: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    body, planted, fixed = CASES[case]
    plan = schedule(("1-gpu-h100", "pytest tests/"))
    text = HELPERS + "\n" + body
    report = audit({"tests/test_case.py": text}, plan)
    (name,) = list(skipping(report))
    assert name.startswith("tests/test_case.py::test_")
    assert skipping(audit({"tests/test_case.py": text.replace(planted, fixed)}, plan)) == {}


def test_an_unbound_parameter_is_undetermined_not_runs(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text = HELPERS + "\nimport os\n\ndef test_computed():\n    needs_wide_heads(int(os.cpu_count()))\n"
    report = audit({"tests/test_case.py": text}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {}
    assert report.undetermined == 1


def test_a_test_calling_a_test_takes_its_body_skips_not_its_marks(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text = """
    import pytest
    import torch

    @pytest.mark.skip(reason="only the variant below runs")
    def test_base(mode="full"):
        if mode == "full" and torch.cuda.get_device_capability()[0] != 10:
            pytest.skip("sm100")

    def test_variant():
        test_base(mode="full")
    """
    plan = schedule(("1-gpu-h100", "pytest tests/"))
    found = skipping(audit({"tests/test_case.py": text}, plan))
    assert found["tests/test_case.py::test_variant"] == "compute capability"
    fixed = skipping(audit({"tests/test_case.py": text.replace('test_base(mode="full")', 'test_base(mode="lite")')}, plan))
    assert "tests/test_case.py::test_variant" not in fixed


@pytest.mark.parametrize(
    ("files", "call"),
    [
        ({"tests/helpers.py": HELPERS, "tests/__init__.py": ""}, "from .helpers import require_new_arch\n"),
        ({"tests/helpers.py": HELPERS, "tests/__init__.py": ""}, "from . import helpers\n"),
        ({"tests/helpers.py": HELPERS, "tests/conftest.py": ""}, "import helpers\n"),
        ({"tests/common/helpers.py": HELPERS, "tests/conftest.py": ""}, "import common.helpers as helpers\n"),
    ],
)
def test_a_helper_imported_from_the_tree_is_followed(
    files: dict[str, str], call: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    invoke = "require_new_arch()" if "import require_new_arch" in call else "helpers.require_new_arch()"
    text = call + f"\ndef test_imported():\n    {invoke}\n"
    report = audit({**files, "tests/test_case.py": text}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {"tests/test_case.py::test_imported": "compute capability"}
