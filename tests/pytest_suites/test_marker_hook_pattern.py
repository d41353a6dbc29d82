"""The `pytest_collection_modifyitems` pattern of pytest's docs ("Control skipping of tests according to command
line option"): a skip mark bound to a name and added to marked items, after an early `return`."""

from __future__ import annotations

from collections.abc import Callable

from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]

BY_ARCH = """
import pytest
import torch

def pytest_collection_modifyitems(config, items):
    if torch.cuda.get_device_capability()[0] >= 10:
        return
    needs_new_arch = pytest.mark.skip(reason="needs sm100")
    for item in items:
        if "newarch" in item.keywords:
            item.add_marker(needs_new_arch)
"""
BY_OPTION = """
import pytest

def pytest_addoption(parser):
    parser.addoption("--with-gpu", action="store_true", default=False)

def pytest_collection_modifyitems(config, items):
    if config.getoption("--with-gpu"):
        return
    skip_gpu = pytest.mark.skip(reason="pass --with-gpu")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)
"""
TEST = "import pytest\n@pytest.mark.{marker}\ndef test_it():\n    pass\n"


def test_a_named_skip_mark_added_by_the_hook_skips(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files = {"tests/conftest.py": BY_ARCH, "tests/test_case.py": TEST.format(marker="newarch")}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {"tests/test_case.py::test_it": "compute capability"}


def test_the_hooks_early_return_is_honoured(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files = {"tests/conftest.py": BY_ARCH, "tests/test_case.py": TEST.format(marker="newarch")}
    assert skipping(audit(files, schedule(("b200-cu129", "pytest tests/")))) == {}


def test_a_skip_behind_a_command_line_option_is_not_unconditional(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    files = {"tests/conftest.py": BY_OPTION, "tests/test_case.py": TEST.format(marker="gpu")}
    # The conftest declares --with-gpu and the command gives it: the hook returns before marking, the test runs.
    report = audit(files, schedule(("1-gpu-h100", "pytest tests/ --with-gpu")))
    assert skipping(report) == {}
    assert report.undetermined == 0 and not report.findings
