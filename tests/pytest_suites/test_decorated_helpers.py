"""flashinfer's capability decorators read from the project's own files: a guard on `f.is_backend_supported(b, cc)`,
`f.is_compute_capability_supported(cc)` or `f._supported_ccs` is decided by the lists the decorators are given."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites.audit import PytestAuditReport

# The decorators themselves are only named: what they set is the reading's model (matrix/guards/decorated.py).
PROJECT = {
    "pyproject.toml": '[project]\nname = "flashinfer"\nversion = "0"\n',
    "flashinfer/__init__.py": "from .blas import dot_kernel as dot_kernel\nfrom .blas import scan_kernel as scan_kernel\n",
    "flashinfer/utils.py": (
        "def supported_compute_capability(ccs):\n    return lambda fn: fn\n\n\n"
        "def backend_requirement(backend_checks, common_check=None, heuristic_func=None):\n    return lambda fn: fn\n"
    ),
    "flashinfer/blas.py": """
from .utils import backend_requirement, supported_compute_capability

HOPPER_UP = [90, 100, 103]


@supported_compute_capability([100, 103])
def _tensor_core_check(x):
    return True


@supported_compute_capability(HOPPER_UP)
def _warp_check(x):
    return True


def _plain_check(x):
    return True


@backend_requirement({"tc": _tensor_core_check, "warp": _warp_check, "plain": _plain_check})
def dot_kernel(x, backend="tc"):
    return x


@supported_compute_capability([80, 86])
def scan_kernel(x):
    return x
""",
}

CASES = {
    # (guard condition, expected verdict on an H100 (sm90), on a B200 (sm100))
    "not flashinfer.dot_kernel.is_backend_supported('tc', CC)": ("skips", "runs"),
    "not flashinfer.dot_kernel.is_backend_supported('warp', CC)": ("runs", "runs"),
    "not flashinfer.dot_kernel.is_backend_supported('plain', CC)": ("skips", "skips"),
    "not flashinfer.dot_kernel.is_backend_supported('nope')": ("skips", "skips"),
    "not flashinfer.dot_kernel.is_backend_supported('tc')": ("runs", "runs"),
    "not flashinfer.dot_kernel.is_compute_capability_supported(CC)": ("runs", "runs"),
    "not scan_kernel.is_compute_capability_supported(CC)": ("skips", "skips"),
    "CC not in scan_kernel._supported_ccs": ("skips", "skips"),
}


@pytest.mark.parametrize("condition", sorted(CASES))
@pytest.mark.parametrize("runner", ["h100", "b200-cu129"])
def test_decorator_lists_decide_the_guard(
    condition: str,
    runner: str,
    audit: Callable[..., PytestAuditReport],
    schedule: Callable[..., str],
    skipping: Callable[[PytestAuditReport], dict[str, str]],
) -> None:
    test = (
        "import pytest\nimport torch\nimport flashinfer\nfrom flashinfer.blas import scan_kernel\n\n"
        "MAJOR, MINOR = torch.cuda.get_device_capability()\nCC = MAJOR * 10 + MINOR\n\n"
        f"@pytest.mark.skipif({condition}, reason='not here')\ndef test_kernel():\n    pass\n"
    )
    report = audit({**PROJECT, "tests/test_kernel.py": test}, schedule((runner, "pytest tests/")))
    assert report.undetermined == 0, report.undetermined_tests
    got = "skips" if skipping(report) else "runs"
    assert got == CASES[condition][0 if runner == "h100" else 1]


def test_a_decorator_of_another_module_is_not_read(audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]) -> None:
    # The same names imported from somewhere else are not flashinfer's decorators: the guard stays undetermined.
    files = {**PROJECT, "flashinfer/blas.py": PROJECT["flashinfer/blas.py"].replace("from .utils", "from .other")}
    files["flashinfer/other.py"] = files["flashinfer/utils.py"]
    test = (
        "import pytest\nfrom flashinfer.blas import scan_kernel\n\n"
        "@pytest.mark.skipif(not scan_kernel.is_compute_capability_supported(90), reason='no')\ndef test_kernel():\n    pass\n"
    )
    report = audit({**files, "tests/test_kernel.py": test}, schedule(("h100", "pytest tests/")))
    assert report.undetermined == 1


def test_a_parameter_the_body_also_assigns_is_not_read_as_the_assignment(
    audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]
) -> None:
    # `backend` is "tc" only when it was "auto": the guard reading it stays undetermined, never a certain skip.
    test = """
import pytest
import flashinfer
from helpers import probe

def _check(backend="auto"):
    if backend == "auto":
        backend = "tc"
    if backend == "tc":
        pytest.skip("tc is tested elsewhere")

def test_warp():
    _check(probe())
"""
    report = audit({**PROJECT, "tests/test_kernel.py": test}, schedule(("h100", "pytest tests/")))
    assert report.undetermined == 1


FACTORY = """
import pytest
import torch

from flashinfer.blas import scan_kernel


def _needs_listed_cc(kernel):
    if not torch.cuda.is_available():
        return pytest.mark.skipif(True, reason="CUDA is required")
    major, minor = torch.cuda.get_device_capability()
    here = major * 10 + minor
    return pytest.mark.skipif(here not in kernel._supported_ccs, reason="not listed")


requires_scan_cc = _needs_listed_cc(scan_kernel)
"""


@pytest.mark.parametrize(("runner", "expected"), [("h100", "skips"), ("sm86", "runs")])
def test_a_mark_a_helper_builds_is_read_through_the_helper(
    runner: str,
    expected: str,
    audit: Callable[..., PytestAuditReport],
    schedule: Callable[..., str],
    skipping: Callable[[PytestAuditReport], dict[str, str]],
) -> None:
    test = "from .conftest import requires_scan_cc\n\n\n@requires_scan_cc\ndef test_scan():\n    pass\n"
    files = {**PROJECT, "tests/__init__.py": "", "tests/conftest.py": FACTORY, "tests/test_scan.py": test}
    report = audit(files, schedule((runner, "pytest tests/")))
    assert report.undetermined == 0, report.undetermined_tests
    assert ("skips" if skipping(report) else "runs") == expected


def test_a_helper_that_may_return_another_mark_is_not_read(
    audit: Callable[..., PytestAuditReport], schedule: Callable[..., str]
) -> None:
    other = FACTORY.replace('return pytest.mark.skipif(True, reason="CUDA is required")', "return pytest.mark.slow")
    test = "from .conftest import requires_scan_cc\n\n\n@requires_scan_cc\ndef test_scan():\n    pass\n"
    files = {**PROJECT, "tests/__init__.py": "", "tests/conftest.py": other, "tests/test_scan.py": test}
    assert audit(files, schedule(("h100", "pytest tests/"))).undetermined == 1
