"""pytest-audit with a declared schedule's `base` and `install`: import guards judged on what the entry installs."""

from __future__ import annotations

from collections.abc import Callable

from matrix.pytest_suites.audit import PytestAuditReport

TEST = """
import pytest
gears = pytest.importorskip("gearbox")
def test_turns():
    pass
"""


def test_importorskip_decided_by_the_declared_install(
    audit: Callable[..., PytestAuditReport], skipping: Callable[[PytestAuditReport], dict[str, str]]
) -> None:
    plan = '[schedule]\nbase = "fresh"\ninstall = ["pip install gearbox"]\n[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'
    report = audit({"tests/test_gears.py": TEST}, plan)
    assert report.undetermined == 0 and skipping(report) == {}


def test_a_fresh_base_without_the_module_skips(
    audit: Callable[..., PytestAuditReport], skipping: Callable[[PytestAuditReport], dict[str, str]]
) -> None:
    # pyyaml's row in the distribution table says it requires nothing: gearbox is certainly not there.
    plan = '[schedule]\nbase = "fresh"\ninstall = ["pip install pyyaml"]\n[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'
    report = audit({"tests/test_gears.py": TEST}, plan)
    assert skipping(report) == {"tests/test_gears.py::test_turns": "installed modules"}


OWN = {
    "pyproject.toml": '[project]\nname = "orbit-kit"\nversion = "0"\n',
    "orbitkit/__init__.py": "import gearbox\n",
    "orbitkit/fast.py": "def spin(): ...\n",
    "tests/test_fast.py": """
import pytest
try:
    from orbitkit.fast import spin
    FAST = True
except ImportError:
    FAST = False

@pytest.mark.skipif(not FAST, reason="no fast path")
def test_spin():
    pass
""",
}


def test_the_checkouts_own_module_imports_where_the_job_installs_it(
    audit: Callable[..., PytestAuditReport], skipping: Callable[[PytestAuditReport], dict[str, str]]
) -> None:
    plan = (
        '[schedule]\ninstall = ["pip install gearbox", "pip install --no-deps -e ."]\n'
        '[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'
    )
    report = audit(OWN, plan)
    assert report.undetermined == 0 and skipping(report) == {}
    # Without gearbox, what orbitkit/__init__.py imports is not known to be there.
    assert audit(OWN, plan.replace('"pip install gearbox", ', "")).undetermined == 1


def test_importorskip_minversion_is_not_decided_by_the_install(
    audit: Callable[..., PytestAuditReport], skipping: Callable[[PytestAuditReport], dict[str, str]]
) -> None:
    # pytest skips when gearbox.__version__ < 3.1 as well: the install names no version, so that stays unknown.
    text = 'import pytest\npytest.importorskip("gearbox", minversion="3.1")\ndef test_turns():\n    pass\n'
    plan = '[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'
    report = audit({"tests/test_gears.py": text}, plan, installed=frozenset({"gearbox"}))
    assert report.undetermined == 1 and skipping(report) == {}
