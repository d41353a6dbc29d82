"""What a finding calls a guard (CUDA version, unconditional) and what is not a skip under pytest: an early
return (a silent pass) and a `__main__` block."""

from __future__ import annotations

from collections.abc import Callable

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]


def test_a_cuda_version_guard_is_labelled_cuda_version(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text = """
    import pytest
    import torch
    @pytest.mark.skipif(int(torch.version.cuda.split(".")[0]) < 14, reason="needs CUDA 14")
    def test_it():
        pass
    """
    report = audit({"tests/test_case.py": text}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {"tests/test_case.py::test_it": "CUDA version"}


def test_a_constant_skip_is_unconditional_on_every_runner(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    # On the CPU runner the module's CUDA check also skips; the reason that holds everywhere is the one given.
    text = """
    import pytest
    import torch
    pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA only")
    @pytest.mark.skipif(True, reason="disabled")
    def test_it():
        pass
    """
    report = audit({"tests/test_case.py": text}, schedule(("ubuntu-latest", "pytest tests/"), ("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {"tests/test_case.py::test_it": "unconditional"}


def test_an_early_return_is_a_silent_pass_not_a_skip(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text = """
    import torch
    def test_it():
        if torch.cuda.get_device_capability()[0] < 10:
            return
        assert torch.ones(1).sum() == 1
    """
    report = audit({"tests/test_case.py": text}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {}
    (passing,) = report.of_kind(GuardFindingKind.SILENT_PASS)
    assert passing.finding.scope == "tests/test_case.py::test_it"
    assert not report.of_kind(GuardFindingKind.NEVER_RUNS)


def test_a_main_block_is_no_guard_under_pytest(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text = """
    import sys
    import torch
    def test_it():
        pass
    if __name__ == "__main__":
        if torch.cuda.get_device_capability()[0] < 10:
            print("skipping: needs sm100")
            sys.exit(0)
    """
    report = audit({"tests/test_case.py": text}, schedule(("1-gpu-h100", "pytest tests/")))
    assert skipping(report) == {}
    assert report.undetermined == 0


def test_an_environment_guard_is_labelled_environment(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    # Two GPUs are there on the runner; the unset WORLD_SIZE is what skips.
    text = """
    import os
    import pytest
    import torch

    @pytest.mark.skipif(
        torch.cuda.device_count() < 2 or int(os.environ.get("WORLD_SIZE", "1")) < 2, reason="needs torchrun"
    )
    def test_it():
        pass
    """
    report = audit({"tests/test_case.py": text}, schedule(("h100-2gpu-torchrun", "pytest tests/")))
    assert skipping(report) == {"tests/test_case.py::test_it": "environment"}
