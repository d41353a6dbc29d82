"""docs/ledger.md shows `specmatrix ledger` on a real run of the fixture suite: that run is made here, and every
`$ specmatrix ledger` block of the page that reads its ledger must print what the command prints today.

A block is one of the page's console examples whose not-run marker names this file; `LEDGER` and `FIXED` in its
commands stand for the ledgers of the planted suite and of the suite with every fix applied. A process id is
compared as a number (it differs from run to run).
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.core.test_docs_examples import examples_of, matches
from tests.ledger.conftest import FIXTURE_FIXES, FIXTURE_SUITE, ledger_cli, run_suite

DOC = Path(__file__).resolve().parents[2] / "docs" / "ledger.md"
MARKER = "tests/ledger/test_docs_example.py"
PID = re.compile(r"\bprocess \d+\b")


def _blocks(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The (command, expected output) pairs of the page's examples that this file checks."""
    return [cmd for example in examples_of(text, "docs/ledger.md") if MARKER in example.not_run for cmd in example.commands]


def _pids_as_numbers(lines: list[str] | tuple[str, ...]) -> list[str]:
    return [PID.sub("process N", line) for line in lines]


@pytest.fixture(scope="module")
def ledgers(hook_venv: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The planted suite and the fixed one, each run under the hook into its own ledger."""
    out = {}
    for name, fixed in (("LEDGER", False), ("FIXED", True)):
        suite = tmp_path_factory.mktemp(name.lower()) / "suite"
        shutil.copytree(FIXTURE_SUITE, suite)
        if fixed:
            shutil.copytree(FIXTURE_FIXES, suite, dirs_exist_ok=True)
        ledger = suite.parent / "ledger.jsonl"
        run_suite(hook_venv, suite, ledger)
        out[name] = ledger
        out[f"{name}_ROOT"] = suite / "registered"
    return out


def test_the_page_shows_the_three_runs() -> None:
    commands = [command for command, _ in _blocks(DOC.read_text(encoding="utf-8"))]
    assert [c.split()[2] for c in commands] == ["LEDGER", "LEDGER", "FIXED"], commands


@pytest.mark.parametrize("index", range(3))
def test_the_page_shows_what_the_command_prints(
    index: int, ledgers: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    command, expected = _blocks(DOC.read_text(encoding="utf-8"))[index]
    words = shlex.split(command, comments=True)
    assert words[:2] == ["specmatrix", "ledger"], command
    which = words[2]
    args: list[str | Path] = [ledgers[which]]
    rest = words[3:]
    assert rest[:2] == ["--root", "registered"], command
    # Run in the suite's folder, as the page does, so paths print as `registered/...`.
    monkeypatch.chdir(ledgers[f"{which}_ROOT"].parent)
    args += ["--root", "registered", *rest[2:]]
    code, out, _ = ledger_cli(capsys, *args)
    actual = out.splitlines()
    assert matches(_pids_as_numbers(expected), _pids_as_numbers(actual)), f"docs/ledger.md: `{command}` printed:\n{out}"
    stated = re.search(r"#\s*exit (\d+)", command)
    assert stated is None or int(stated.group(1)) == code


def test_a_stale_block_is_found(
    ledgers: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check is red on a page whose output drifted (one count changed)."""
    _, expected = _blocks(DOC.read_text(encoding="utf-8"))[0]
    monkeypatch.chdir(ledgers["LEDGER_ROOT"].parent)
    _, out, _ = ledger_cli(capsys, ledgers["LEDGER"], "--root", "registered")
    stale = [line.replace("4 silent-skip", "3 silent-skip") for line in expected]
    assert stale != list(expected)
    assert not matches(_pids_as_numbers(stale), _pids_as_numbers(out.splitlines()))
