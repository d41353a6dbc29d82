"""Each skip construct of a pytest suite, audited on the runners a declared schedule sends it to.

Every case has a planted form (the test skips on every scheduled runner: a finding) and a fixed form (the
same file with the guard true somewhere or gone: no finding), so each check is shown turning red.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]

CASES = {
    "pytestmark-skipif": (
        """
        import pytest
        import torch
        from flashinfer.utils import is_sm100a_supported
        pytestmark = pytest.mark.skipif(not is_sm100a_supported(torch.device("cuda")), reason="blackwell kernels")
        def test_kernel():
            pass
        """,
        "tests/test_case.py::test_kernel",
        "compute capability",
    ),
    "body-skip-through-local": (
        """
        import pytest
        import torch
        from flashinfer.utils import get_compute_capability
        def test_kernel():
            major_minor = get_compute_capability(torch.device("cuda"))
            if major_minor[0] != 10:
                pytest.skip("needs sm100")
        """,
        "tests/test_case.py::test_kernel",
        "compute capability",
    ),
    "skipif-bound-to-a-name": (
        """
        import pytest
        import torch
        only_blackwell = pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 10, reason="sm100+")
        @only_blackwell
        def test_kernel():
            pass
        """,
        "tests/test_case.py::test_kernel",
        "compute capability",
    ),
    "device-count-in-a-class-mark": (
        """
        import pytest
        import torch
        @pytest.mark.skipif(torch.cuda.device_count() < 4, reason="four ranks")
        class TestAllReduce:
            def test_ring(self):
                pass
        """,
        "tests/test_case.py::TestAllReduce::test_ring",
        "GPU count",
    ),
    "unconditional": (
        """
        import pytest
        @pytest.mark.skip(reason="broken on main")
        def test_kernel():
            pass
        """,
        "tests/test_case.py::test_kernel",
        "unconditional",
    ),
}
# What makes each case run on the A10G/H100 schedule: the same file with the guard flipped or removed.
FIXED = {
    "pytestmark-skipif": ("not is_sm100a_supported", "is_sm100a_supported"),
    "body-skip-through-local": ("!= 10", "== 10"),
    "skipif-bound-to-a-name": ("< 10", "< 8"),
    "device-count-in-a-class-mark": ("< 4", "< 1"),
    "unconditional": ('@pytest.mark.skip(reason="broken on main")', ""),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_planted_skip_is_found_and_the_fix_clears_it(
    case: str, audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text, nodeid, guard_class = CASES[case]
    plan = schedule(("sm86", "pytest tests/"), ("h100", "pytest tests/"))
    planted = audit({"tests/test_case.py": text}, plan)
    assert skipping(planted) == {nodeid: guard_class}
    old, new = FIXED[case]
    fixed = audit({"tests/test_case.py": text.replace(old, new)}, plan)
    assert skipping(fixed) == {}


def test_finding_names_runners_and_guard(audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]) -> None:
    text, nodeid, _ = CASES["pytestmark-skipif"]
    report = audit({"tests/test_case.py": text}, schedule(("sm86", "pytest tests/"), ("h100", "pytest tests/test_case.py")))
    (finding,) = [f.finding for f in report.findings if f.finding.scope == nodeid]
    assert finding.runners == ("a10g", "h100")
    assert "is_sm100a_supported" in finding.source
    # The runners are named once, in the finding's runners (the text line prints them), not again in its reason.
    assert "skips on every runner CI sends it to: " in finding.message and "a10g" not in finding.message
    assert finding.hint.startswith("schedule it on a runner whose GPU the guard admits")
    assert report.exit_code == 1


def test_a_runner_where_the_guard_is_false_clears_the_finding(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text, _, _ = CASES["pytestmark-skipif"]
    report = audit({"tests/test_case.py": text}, schedule(("h100", "pytest tests/"), ("b200-cu129", "pytest tests/")))
    assert skipping(report) == {}
    assert report.exit_code == 0


@pytest.mark.parametrize(
    ("helper", "runner", "skips"),
    [
        # flashinfer/utils.py: major == 10 and CUDA >= 12.8 (sm100a), >= 12.9 (sm100f)
        ("is_sm100a_supported", "b200-cu128", False),
        ("is_sm100f_supported", "b200-cu128", True),
        ("is_sm100f_supported", "b200-cu129", False),
        # is_sm12x_supported: CUDA 12.8 for minor 0, 12.9 from minor 1
        ("is_sm12x_supported", "sm120-cu128", False),
        ("is_sm12x_supported", "sm121-cu128", True),
        ("is_sm120a_supported", "sm121-cu128", True),
        ("is_sm90a_supported", "h100", False),
        ("is_sm90a_supported", "b200-cu129", True),
    ],
)
def test_flashinfer_pack_cuda_conditions(
    helper: str,
    runner: str,
    skips: bool,
    audit: Callable[..., PytestAuditReport],
    skipping: Skipping,
    schedule: Callable[..., str],
) -> None:
    text = f"""
    import pytest
    import torch
    from flashinfer.utils import {helper}
    @pytest.mark.skipif(not {helper}(torch.device("cuda")), reason="arch")
    def test_kernel():
        pass
    """
    report = audit({"tests/test_case.py": text}, schedule((runner, "pytest tests/")))
    assert ("tests/test_case.py::test_kernel" in skipping(report)) is skips


def test_unknown_is_never_a_skip(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    # b200 gives no CUDA version, so is_sm100a_supported cannot be decided there: undetermined, not a finding.
    text, _, _ = CASES["pytestmark-skipif"]
    report = audit({"tests/test_case.py": text}, schedule(("b200", "pytest tests/")))
    assert skipping(report) == {}
    assert report.undetermined == 1


def test_importorskip_needs_to_know_what_is_installed(
    audit: Callable[..., PytestAuditReport], skipping: Skipping, schedule: Callable[..., str]
) -> None:
    text = """
    import pytest
    cutlass = pytest.importorskip("cutlass")
    def test_kernel():
        pass
    """
    report = audit({"tests/test_case.py": text}, schedule(("h100", "pytest tests/")))
    assert skipping(report) == {} and report.undetermined == 1
    installed = audit({"tests/test_case.py": text}, schedule(("h100", "pytest tests/")), installed=frozenset({"cutlass"}))
    assert installed.undetermined == 0


def test_environment_from_the_schedule(audit: Callable[..., PytestAuditReport], skipping: Skipping) -> None:
    text = """
    import os
    import pytest
    @pytest.mark.skipif(os.environ.get("RUN_SLOW") != "1", reason="slow")
    def test_kernel():
        pass
    """
    plan = '[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\nenv = { RUN_SLOW = "0" }\n'
    assert skipping(audit({"tests/test_case.py": text}, plan)) == {"tests/test_case.py::test_kernel": "environment"}
    fixed = plan.replace('RUN_SLOW = "0"', 'RUN_SLOW = "1"')
    assert skipping(audit({"tests/test_case.py": text}, fixed)) == {}
