"""The GitHub reader's declared subset (`matrix.schedule.github.subset`) is what it reads: each function, operator,
context and event of the tables is read to a value, and a construct outside them comes out unread with the construct
named, never as a value or a verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.github.expressions import OneOf, Unknown, evaluate
from matrix.schedule.github.subset import CONTEXTS, EVENTS, FUNCTIONS, OPERATORS, STEP_KINDS
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.model import Gate, Schedule

RUNNERS = load_runners()

# One expression per modelled function and operator, with the value GitHub gives it.
FUNCTION_CASES = {
    "fromjson": ("fromJSON('[1, 2]')[1]", 2),
    "tojson": ("toJSON('a')", '"a"'),
    "format": ("format('{0}-{1}', 'a', 1)", "a-1"),
    "startswith": ("startsWith('Tests/Unit', 'tests')", True),
    "endswith": ("endsWith('a.PY', '.py')", True),
    "contains": ("contains(fromJSON('[\"x\", \"y\"]'), 'y')", True),
    "join": ("join(fromJSON('[\"a\", \"b\"]'), '+')", "a+b"),
    "always": ("always()", True),
    "success": ("success()", True),
    "failure": ("failure()", False),
    "cancelled": ("cancelled()", False),
}
OPERATOR_CASES = {
    "||": ("'' || 'b'", "b"),
    "&&": ("'a' && 'b'", "b"),
    "!": ("!''", True),
    "==": ("'A' == 'a'", True),
    "!=": ("1 != 2", True),
    "<": ("1 < 2", True),
    "<=": ("2 <= 2", True),
    ">": ("'b' > 'a'", True),
    ">=": ("2 >= 3", False),
    "()": ("(1 == 1) && (2 == 2)", True),
    ".": ("fromJSON('{\"Key\": 3}').key", 3),
    "[]": ("fromJSON('{\"k\": [5, 6]}')['k'][0]", 5),
}


def _none(path: tuple[str, ...]) -> object:
    return Unknown(text=".".join(path))


def test_every_declared_function_and_operator_has_a_case():
    assert set(FUNCTION_CASES) == set(FUNCTIONS) and set(OPERATOR_CASES) == set(OPERATORS)


@pytest.mark.parametrize(("text", "value"), [*FUNCTION_CASES.values(), *OPERATOR_CASES.values()])
def test_each_declared_construct_is_read_to_its_value(text, value):
    found = evaluate(text, _none)
    assert not isinstance(found, Unknown | OneOf) and found == value


@pytest.mark.parametrize(
    "text",
    ["hashFiles('**/x.lock')", "toLower('A')", "case(true, 'a', 'b')", "secrets.TOKEN", "vars.SUITE", "runner.os", "github.sha"],
)
def test_a_construct_outside_the_subset_is_unknown(text):
    assert isinstance(evaluate(text, _none), Unknown)


def _read(tmp_path: Path, workflow: str) -> Schedule:
    root = tmp_path / "repo"
    for name, text in {".github/workflows/ci.yml": workflow, "tests/unit/test_a.py": "def test_a():\n    pass\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return load_schedule(root, RUNNERS, all_readers())


STEP = """on:
  workflow_dispatch:
    inputs:
      where:
        default: tests
jobs:
  unit:
    strategy:
      matrix:
        part: [unit]
    runs-on: sm86
    env:
      DIR: tests
    steps:
      - id: pick
        run: echo "dir=tests" >> "$GITHUB_OUTPUT"
      - run: pytest {argument}
"""


@pytest.mark.parametrize(
    ("context", "argument"),
    [
        ("inputs", "${{ inputs.where }}/unit"),
        ("matrix", "tests/${{ matrix.part }}"),
        ("env", "${{ env.DIR }}/unit"),
        ("github", "${{ github.event_name == 'workflow_dispatch' && 'tests/unit' || 'x' }}"),
        ("steps", "${{ steps.pick.outputs.dir }}/unit"),
    ],
)
def test_each_declared_context_is_read(tmp_path, context, argument):
    assert context in CONTEXTS
    (entry,) = _read(tmp_path, STEP.format(argument=argument)).entries
    assert entry.selection.paths == ("tests/unit",)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "construct",
    ["hashFiles('tests/**')", "vars.SUITE_DIR", "secrets.SUITE", "runner.temp", "github.sha", "toLower('TESTS')", "job.status"],
)
def test_a_construct_outside_the_subset_comes_out_unread_with_the_construct_named(tmp_path, construct):
    schedule = _read(tmp_path, STEP.format(argument="${{ " + construct + " }}"))
    assert not schedule.entries
    (unread,) = schedule.unread
    assert construct.split("(")[0] in unread.reason


@pytest.mark.parametrize("event", sorted(set(EVENTS) - {"workflow_call", "workflow_run"}))
def test_each_declared_event_gives_its_gate(tmp_path, event):
    workflow = f"on: [{event}]\njobs:\n  unit:\n    runs-on: sm86\n    steps:\n      - run: pytest tests/unit\n"
    (entry,) = _read(tmp_path, workflow).entries
    assert entry.gates == (EVENTS[event].gate,)


@pytest.mark.parametrize("event", ["release", "deployment_status", "page_build"])
def test_an_event_outside_the_subset_runs_with_an_unknown_gate(tmp_path, event):
    workflow = f"on: [{event}]\njobs:\n  unit:\n    runs-on: sm86\n    steps:\n      - run: pytest tests/unit\n"
    (entry,) = _read(tmp_path, workflow).entries
    assert entry.gates == (Gate.UNKNOWN,)


def test_a_step_kind_outside_the_subset_that_may_run_tests_is_unread(tmp_path):
    assert "uses: another action" in STEP_KINDS
    workflow = STEP.format(argument="tests/unit").replace(
        "      - id: pick\n",
        "      - uses: docker://python:3.12\n        with:\n          args: pytest tests\n      - id: pick\n",
    )
    schedule = _read(tmp_path, workflow)
    (unread,) = schedule.unread
    assert "docker://python:3.12" in unread.reason and unread.reach is None
