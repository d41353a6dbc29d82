"""Guards the audit cannot read are undetermined, never "runs": a decorator from outside the project that no pack
knows, and a local list a loop fills before a guard reads it."""

from __future__ import annotations

from pathlib import Path

from matrix.core.runner_files import load_runners
from matrix.pytest_suites.audit import ItemOutcome
from matrix.pytest_suites.run import AuditInput, item_outcomes
from tests.pytest_suites.conftest import schedule_toml, write_tree


def outcomes(tmp_path: Path, files: dict[str, str], labels: str = "1-gpu-h100") -> dict[str, ItemOutcome]:
    root = tmp_path / "repo"
    write_tree(root, files)
    plan = tmp_path / "plan.toml"
    plan.write_text(schedule_toml((labels, "pytest tests/")), encoding="utf-8")
    found, _broken = item_outcomes(AuditInput(root=root, schedule_files=(plan,), workflows=False), load_runners())
    return found


def test_an_unknown_decorator_factory_makes_its_test_undetermined(tmp_path: Path) -> None:
    text = """
    import functools
    import pytest
    import gadgets
    import torch
    from lab_tools import maybe_skip

    @gadgets.needs_card(9)
    def test_factory():
        pass

    @maybe_skip()
    def test_imported_factory():
        pass

    @pytest.fixture
    def board():
        return 1

    @pytest.mark.parametrize("n", [1])
    def test_plain(board, n):
        pass

    class TestBox:
        @staticmethod
        def test_static():
            pass

    def needs_major(major):
        return pytest.mark.skipif(torch.cuda.get_device_capability()[0] < major, reason="too old")

    @needs_major(9)
    class TestRead:
        def test_read(self):
            pass
    """
    found = outcomes(tmp_path, {"tests/test_case.py": text})
    assert found["tests/test_case.py::test_factory"] is ItemOutcome.UNDETERMINED
    assert found["tests/test_case.py::test_imported_factory"] is ItemOutcome.UNDETERMINED
    assert found["tests/test_case.py::test_plain"] is ItemOutcome.RUNS
    assert found["tests/test_case.py::TestBox::test_static"] is ItemOutcome.RUNS
    assert found["tests/test_case.py::TestRead::test_read"] is ItemOutcome.RUNS


def test_a_project_decorator_is_read_by_what_it_returns(tmp_path: Path) -> None:
    helpers = """
    import functools
    import pytest

    def repeat(times):
        def wrap(fn):
            @functools.wraps(fn)
            def inner(*args, **kwargs):
                for _ in range(times):
                    fn(*args, **kwargs)
            return inner
        return wrap

    def gate(flag):
        def wrap(fn):
            @functools.wraps(fn)
            def inner(*args, **kwargs):
                if flag():
                    pytest.skip("gated")
                fn(*args, **kwargs)
            return inner
        return wrap
    """
    text = """
    from tests.helpers import gate, repeat

    @repeat(2)
    def test_repeated():
        pass

    @gate(lambda: True)
    def test_gated():
        pass
    """
    found = outcomes(tmp_path, {"tests/helpers.py": helpers, "tests/test_case.py": text})
    assert found["tests/test_case.py::test_repeated"] is ItemOutcome.RUNS
    assert found["tests/test_case.py::test_gated"] is ItemOutcome.UNDETERMINED


def test_a_list_filled_in_a_loop_is_not_read_as_always_empty(tmp_path: Path) -> None:
    text = """
    import pytest

    KINDS = ["a", "b"]

    def test_filled():
        ran: list[str] = []
        for kind in KINDS:
            ran.append(kind)
        if not ran:
            pytest.skip("nothing to run")

    def test_counted():
        ran = []
        for kind in KINDS:
            ran.append(kind)
        if len(ran) == 0:
            pytest.skip("nothing to run")

    def test_empty():
        ran = []
        if not ran:
            pytest.skip("never filled")
    """
    found = outcomes(tmp_path, {"tests/test_case.py": text})
    assert found["tests/test_case.py::test_filled"] is not ItemOutcome.SKIPS
    assert found["tests/test_case.py::test_counted"] is not ItemOutcome.SKIPS
    assert found["tests/test_case.py::test_empty"] is ItemOutcome.SKIPS


LEAVES_FIRST = """
import os

import pytest
import torch


def _sm90_device():
    for index in range(torch.cuda.device_count()):
        if torch.cuda.get_device_capability(index) >= (9, 0):
            return torch.device("cuda", index)
    pytest.skip("needs an sm90 device")


@pytest.fixture(scope="session")
def tool_path():
    for candidate in ("/opt/tool", os.environ.get("TOOL", "")):
        if candidate and os.path.exists(candidate):
            return candidate
    pytest.skip("the tool is not built")


def _with_lock():
    with open(__file__) as handle:
        if handle.readable():
            return handle.name
    pytest.skip("unreadable")


def _modelled():
    if torch.cuda.is_available():
        return 0
    pytest.skip("needs a GPU")


def test_device_helper():
    _sm90_device()


def test_built_tool(tool_path):
    assert tool_path


def test_with_block():
    _with_lock()


def test_modelled_return():
    _modelled()
"""


def test_a_skip_after_a_block_that_may_return_is_undetermined_not_unconditional(tmp_path: Path) -> None:
    """A helper or fixture that returns from inside a loop or `with` and skips after it skips only when that block
    did not return: undetermined. An `if` that returns is read (its test negated): decided as before."""
    found = outcomes(tmp_path, {"tests/test_leaves.py": LEAVES_FIRST}, labels="ubuntu-latest")
    nodes = "tests/test_leaves.py::"
    assert found[nodes + "test_device_helper"] is ItemOutcome.UNDETERMINED
    assert found[nodes + "test_built_tool"] is ItemOutcome.UNDETERMINED
    assert found[nodes + "test_with_block"] is ItemOutcome.UNDETERMINED
    assert found[nodes + "test_modelled_return"] is ItemOutcome.SKIPS  # no GPU on the cpu runner
