"""Test functions and classes a test module imports are its tests too (pytest collects the module's namespace)."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.pytest_suites.audit import ItemOutcome
from tests.pytest_suites.test_pytest_oracle import Case, _write, check, static_outcomes

SHELF = "class Shelf:\n    def test_from_shelf(self):\n        pass\n"
TREES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "class": (
        {
            "checks/__init__.py": "",
            "checks/kinds.py": "class TestKinds:\n    def test_kind(self):\n        pass\n",
            "checks/test_use.py": "from .kinds import TestKinds\n\n\ndef test_own():\n    pass\n",
        },
        {"checks/test_use.py::TestKinds::test_kind": "runs", "checks/test_use.py::test_own": "runs"},
    ),
    "function-by-rootdir-insertion": (
        {
            "suite/pieces.py": "def test_piece():\n    pass\n\n\ndef build():\n    pass\n",
            "suite/test_whole.py": "from pieces import build, test_piece\n",
        },
        {"suite/test_whole.py::test_piece": "runs"},
    ),
    "star": (
        {
            "suite/bulk.py": SHELF
            + "\n\nclass TestBulk(Shelf):\n    pass\n\n\ndef test_loose():\n    pass\n\n\ndef _private():\n    pass\n",
            "suite/test_star.py": "from bulk import *\n",
        },
        {"suite/test_star.py::TestBulk::test_from_shelf": "runs", "suite/test_star.py::test_loose": "runs"},
    ),
    "star-all": (
        {
            "suite/bulk.py": "__all__ = ['test_listed']\n\n\ndef test_listed():\n    pass\n\n\ndef test_unlisted():\n    pass\n",
            "suite/test_star.py": "from bulk import *\n",
        },
        {"suite/test_star.py::test_listed": "runs"},
    ),
    "imported-base": (
        {
            "suite/shelf.py": SHELF,
            "suite/test_sub.py": "from shelf import Shelf\n\n\nclass TestSub(Shelf):\n    def test_here(self):\n        pass\n",
        },
        {"suite/test_sub.py::TestSub::test_from_shelf": "runs", "suite/test_sub.py::TestSub::test_here": "runs"},
    ),
    "re-exported-and-renamed": (
        {
            "suite/inner.py": "def test_deep():\n    pass\n",
            "suite/outer.py": "from inner import test_deep\n",
            "suite/test_names.py": "from outer import test_deep as test_renamed\n",
        },
        {"suite/test_names.py::test_renamed": "runs"},
    ),
    "module-mark-of-the-importer": (
        {
            "suite/pieces.py": "def test_piece():\n    pass\n",
            "suite/test_marked.py": "import pytest\nfrom pieces import test_piece\n\npytestmark = pytest.mark.skip(reason='off')\n",
        },
        {"suite/test_marked.py::test_piece": "skips"},
    ),
}
# Defined with a mark or a guard in their own module: not read there, so never certain here.
DOUBTED = {
    "skip-mark-in-origin": {
        "suite/pieces.py": "import pytest\n\n\n@pytest.mark.skip(reason='off')\ndef test_piece():\n    pass\n",
        "suite/test_whole.py": "from pieces import test_piece\n",
    },
    "slow-mark-in-origin": {
        "suite/pieces.py": "import pytest\n\n\n@pytest.mark.slow\ndef test_piece():\n    pass\n",
        "suite/test_whole.py": "from pieces import test_piece\n",
    },
    "body-skip-in-origin": {
        "suite/pieces.py": "import pytest\n\n\ndef test_piece():\n    pytest.skip('no')\n",
        "suite/test_whole.py": "from pieces import test_piece\n",
    },
}


@pytest.mark.parametrize("name", sorted(TREES))
def test_imported_tests_are_collected_and_judged(name: str, tmp_path: Path, oracle_stub: Path) -> None:
    files, expected = TREES[name]
    case = Case(files=files, command="pytest")
    check(case, tmp_path / "oracle", oracle_stub)
    root = tmp_path / "again" / "repo"
    _write(root, files)
    static, _ = static_outcomes(root, case, tmp_path / "again")
    assert {k: v.value for k, v in static.items() if v is not ItemOutcome.NOT_SELECTED} == expected


@pytest.mark.parametrize("command", ["pytest", "pytest -m slow", "pytest -m 'not slow'"])
@pytest.mark.parametrize("name", sorted(DOUBTED))
def test_an_imported_test_with_marks_of_its_own_is_never_certain(
    name: str, command: str, tmp_path: Path, oracle_stub: Path
) -> None:
    case = Case(files=DOUBTED[name], command=command)
    check(case, tmp_path / "oracle", oracle_stub)
    root = tmp_path / "again" / "repo"
    _write(root, DOUBTED[name])
    static, _ = static_outcomes(root, case, tmp_path / "again")
    assert static["suite/test_whole.py::test_piece"] is ItemOutcome.UNDETERMINED


def test_an_import_from_outside_the_tree_is_undetermined(tmp_path: Path) -> None:
    files = {"suite/test_far.py": "from elsewhere_pkg.checks import TestRemote, test_remote\n\n\ndef test_own():\n    pass\n"}
    root = tmp_path / "repo"
    _write(root, files)
    static, _ = static_outcomes(root, Case(files=files, command="pytest -m slow"), tmp_path)
    assert static == {
        "suite/test_far.py::test_remote": ItemOutcome.UNDETERMINED,
        "suite/test_far.py::test_own": ItemOutcome.NOT_SELECTED,
    }
