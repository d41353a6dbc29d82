"""pytest-audit with a declared schedule's `base` and `install`: import guards judged on what the entry installs."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import pytest

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


MINVERSION = 'import pytest\npytest.importorskip("gearbox", minversion="3.1")\ndef test_turns():\n    pass\n'


def _plan(install: str) -> str:
    return f'[schedule]\nbase = "fresh"\ninstall = [{install!r}]\n[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'


def test_importorskip_minversion_read_against_the_installed_version(
    audit: Callable[..., PytestAuditReport], skipping: Callable[[PytestAuditReport], dict[str, str]]
) -> None:
    # pytest skips when gearbox.__version__ is below minversion: a pin below it skips, a floor at or above it runs.
    below = audit({"tests/test_gears.py": MINVERSION}, _plan("pip install gearbox==3.0.2"))
    assert skipping(below) == {"tests/test_gears.py::test_turns": "installed modules"}
    at_least = audit({"tests/test_gears.py": MINVERSION}, _plan("pip install 'gearbox>=3.1.0'"))
    assert at_least.undetermined == 0 and skipping(at_least) == {}


def test_importorskip_minversion_a_range_does_not_decide_says_so(audit: Callable[..., PytestAuditReport]) -> None:
    report = audit({"tests/test_gears.py": MINVERSION}, _plan("pip install 'gearbox>=2.0'"))
    (test,) = report.undetermined_tests
    assert "gearbox.__version__ is at least 3.1 (importorskip's minversion)" in test.reason
    assert "the version of gearbox is >=2.0" in test.reason and "__" not in test.reason.split("gearbox.__version__")[0]


def test_importorskip_minversion_of_a_module_another_distribution_installs(audit: Callable[..., PytestAuditReport]) -> None:
    text = 'import pytest\npytest.importorskip("cutlass", minversion="9.0")\ndef test_dsl():\n    pass\n'
    report = audit({"tests/test_dsl.py": text}, _plan("pip install 'nvidia-cutlass-dsl>=8.1'"))
    (test,) = report.undetermined_tests
    assert "cutlass comes from nvidia-cutlass-dsl>=8.1" in test.reason
    assert "a range that allows versions on both sides of it" in test.reason


@pytest.mark.parametrize(
    ("installed", "minimum"),
    [("3.0.2", "3.1"), ("3.1", "3.1.0"), ("3.1.0", "3.1"), ("4.7.0a0", "4.7.0"), ("4.7.0.post1", "4.7.0"), ("10.0", "9.9")],
)
def test_importorskip_minversion_agrees_with_pytest(
    audit: Callable[..., PytestAuditReport],
    skipping: Callable[[PytestAuditReport], dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    installed: str,
    minimum: str,
) -> None:
    """The oracle: pytest's own importorskip on a module whose `__version__` is the pinned version."""
    module = types.ModuleType("gearbox")
    module.__version__ = installed  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gearbox", module)
    try:
        pytest.importorskip("gearbox", minversion=minimum)
        real = False
    except pytest.skip.Exception:
        real = True
    text = MINVERSION.replace('"3.1"', repr(minimum))
    report = audit({"tests/test_gears.py": text}, _plan(f"pip install gearbox=={installed}"))
    assert report.undetermined == 0
    assert bool(skipping(report)) is real


IMPLIED = {
    "pyproject.toml": '[project]\nname = "orbit-kit"\nversion = "0"\n',
    "orbitkit/__init__.py": "",
    "orbitkit/fast.py": "import gearbox\n\n\ndef spin():\n    return gearbox\n",
}


def _implied_plan() -> str:
    # A fresh base installing the project without its dependencies: whether gearbox is there is not known.
    return (
        '[schedule]\ninstall = ["pip install --no-deps -e .", "pip install mystery-dist"]\n'
        '[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'
    )


@pytest.mark.parametrize(
    ("text", "undetermined"),
    [
        # The test module imports orbitkit.fast at its top, which imports gearbox: a test of it runs only where
        # gearbox imported, so the importorskip in its body never skips.
        ("from orbitkit.fast import spin\n\n\ndef test_spin():\n    pytest.importorskip('gearbox')\n", 0),
        ("import gearbox\n\n\ndef test_spin():\n    pytest.importorskip('gearbox')\n", 0),
        # After a module-level importorskip the import runs only where that did not skip: nothing follows.
        ("pytest.importorskip('gearbox')\nfrom orbitkit.fast import spin\n\n\ndef test_spin():\n    pass\n", 1),
        # An import under `try` may not have run.
        (
            "try:\n    from orbitkit.fast import spin\nexcept ImportError:\n    spin = None\n\n\n"
            "def test_spin():\n    pytest.importorskip('gearbox')\n",
            1,
        ),
    ],
)
def test_a_module_the_test_module_imports_is_there_where_its_tests_run(
    audit: Callable[..., PytestAuditReport], text: str, undetermined: int
) -> None:
    report = audit({**IMPLIED, "tests/test_spin.py": "import pytest\n" + text}, _implied_plan())
    assert report.undetermined == undetermined, report.undetermined_tests
