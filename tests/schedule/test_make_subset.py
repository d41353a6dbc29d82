"""The declared subset of the Makefile reader (`matrix/schedule/make/subset.py`), walked: every construct outside
comes out unread with the construct named; every example of a modelled one agrees with GNU make itself; the
table and the reader's function table name the same functions. Every fixture is written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.schedule.make import subset
from matrix.schedule.make.functions import FUNCTIONS
from matrix.schedule.make.targets import make_call
from matrix.schedule.make.worlds import read_make
from tests.schedule.make_oracle import MAKE, MakeCase, SandboxFiles, check, stub_folder, write


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stub_folder(tmp_path_factory.mktemp("stub"))


def test_the_table_and_the_reader_name_the_same_functions() -> None:
    declared = {c.name for c in subset.CONSTRUCTS if c.kind is subset.Kind.FUNCTION and c.support is not subset.Support.UNREAD}
    outside = {c.name for c in subset.unread(subset.Kind.FUNCTION)}
    assert declared == set(FUNCTIONS)
    assert not outside & set(FUNCTIONS)


def test_every_construct_has_an_example_and_a_reason() -> None:
    names = [c.name for c in subset.CONSTRUCTS]
    assert len(names) == len(set(names))
    assert all(c.example and c.how for c in subset.CONSTRUCTS)


@pytest.mark.parametrize("construct", subset.unread(), ids=lambda c: c.name)
def test_a_construct_outside_the_subset_leaves_the_call_unread_and_named(construct: subset.Construct, tmp_path: Path) -> None:
    write(tmp_path, {"Makefile": construct.example, **subset.EXAMPLE_FILES})
    call = make_call(["make", *construct.arguments], ".")
    assert call is not None
    run = read_make(call, SandboxFiles(root=tmp_path), {}, open_world=False)
    reasons = [p.reason for p in run.problems if not p.stops]
    assert any(construct.shown in r for r in reasons), (construct.name, reasons, run.commands)


@pytest.mark.skipif(MAKE is None, reason="GNU make is not installed")
@pytest.mark.parametrize("construct", subset.modelled(), ids=lambda c: c.name)
def test_each_modelled_construct_agrees_with_gnu_make(construct: subset.Construct, stub: Path, tmp_path: Path) -> None:
    case = MakeCase(
        files={"Makefile": construct.example, **subset.EXAMPLE_FILES},
        arguments=list(construct.arguments),
        env={"HOME": "/home/ci"},
    )
    if construct.support is subset.Support.RUN_TIME:
        return _run_time(construct, tmp_path)
    check(case, tmp_path, stub)


def _run_time(construct: subset.Construct, tmp_path: Path) -> None:
    """A run-time value is read, never guessed: the command shows it as shell text the shell reader cannot know."""
    write(tmp_path, {"Makefile": construct.example, **subset.EXAMPLE_FILES})
    call = make_call(["make", *construct.arguments], ".")
    assert call is not None
    run = read_make(call, SandboxFiles(root=tmp_path), {}, open_world=False)
    assert run.problems == ()
    if "$(" + construct.name in construct.example:
        assert any("$(" in c.text for c in run.commands), run.commands
