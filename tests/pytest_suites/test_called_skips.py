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
    # the helper's result is the receiver of the call the statement makes (`_operator().apply(x)`)
    "receiver-of-a-call": ("def test_receiver():\n    out = _run_case(1, 'x').bit_length()\n", "_run_case(1, 'x')", "len('x')"),
    # the helper's result is an argument of it (`_run(_backend(), x)`), keyword or positional
    "argument-of-a-call": ("def test_argument():\n    print(1, _run_case(1, 'x'))\n", "_run_case(1, 'x')", "len('x')"),
    "keyword-argument": ("def test_keyword():\n    out = dict(v=_run_case(1, 'x'))\n", "_run_case(1, 'x')", "len('x')"),
    # a block every run enters: a `with`, a loop whose first pass is certain
    "with-block": ("def test_with():\n    with open(__file__):\n        _run_case(1, 'x')\n", "_run_case(1, 'x')", "len('x')"),
    "loop-over-range": ("def test_loop():\n    for i in range(3):\n        _run_case(1, 'x')\n", "_run_case(1, 'x')", "len('x')"),
    "loop-over-a-list": ("def test_list():\n    for v in [1, 2]:\n        _run_case(v, 'x')\n", "_run_case(v, 'x')", "len('x')"),
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


@pytest.mark.parametrize(
    "line",
    [
        "out = (lambda: _run_case(1, 'x'))",
        "out = _run_case(1, 'x') if flag else 0",
        "out = flag and _run_case(1, 'x')",
        "out = [_run_case(1, 'x') for flag in ()]",
        "for v in range(0):\n        _run_case(1, 'x')",
        "for v in values:\n        _run_case(1, 'x')",
        "for v in range(3):\n        if flag:\n            continue\n        _run_case(1, 'x')",
        "while flag:\n        _run_case(1, 'x')",
    ],
    ids=["lambda", "condition", "boolean", "comprehension", "empty-range", "unknown-sequence", "after-a-continue", "while"],
)
def test_a_call_that_may_not_be_made_is_not_followed(
    line: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text = HELPERS + f"\nflag = False\nvalues = []\n\ndef test_maybe():\n    {line}\n"
    assert skipping(audit({"tests/test_case.py": text}, schedule(("1-gpu-h100", "pytest tests/")))) == {}
