"""GitHub matches context and property names ignoring case (`inputs.SUITE` for an input declared `suite`,
`github.EVENT_NAME`, `matrix.Gpu`, `steps.Pick.outputs.DIR`); only `env` names are case-sensitive (Linux and macOS
runners). Source: actions/runner `DictionaryContextData` (`StringComparer.OrdinalIgnoreCase`) and `StepsRunner`
(the `env` context a `CaseSensitiveDictionaryContextData` off Windows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule

RUNNERS = load_runners()
TEST = "def test_one():\n    pass\n"


def _paths(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, ...]]:
    root = tmp_path / "repo"
    for name, text in {"tests/unit/test_a.py": TEST, "tests/gpu/test_b.py": TEST, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    schedule = load_schedule(root, RUNNERS, all_readers())
    return {entry.selection.paths for entry in schedule.entries}  # type: ignore[union-attr]


CALLER = """on: [pull_request]
jobs:
  call:
    uses: ./.github/workflows/suite.yml
    with:
      {given}: tests/gpu
"""
CALLEE = """on:
  workflow_call:
    inputs:
      suite:
        type: string
        default: tests/unit
jobs:
  run:
    runs-on: sm86
    steps:
      - run: pytest ${{{{ inputs.{read} }}}}
"""


@pytest.mark.parametrize(("given", "read"), [("suite", "SUITE"), ("SUITE", "suite"), ("Suite", "sUiTe")])
def test_an_input_is_read_whatever_the_case_of_its_name(tmp_path, given, read):
    files = {".github/workflows/ci.yml": CALLER.format(given=given), ".github/workflows/suite.yml": CALLEE.format(read=read)}
    assert _paths(tmp_path, files) == {("tests/gpu",)}


EVENT = """on: [pull_request, schedule]
jobs:
  nightly:
    if: github.EVENT_NAME == 'schedule'
    runs-on: sm86
    steps:
      - run: pytest tests/gpu
"""


def test_the_event_name_is_read_whatever_its_case(tmp_path):
    root = tmp_path / "repo"
    (root / ".github/workflows").mkdir(parents=True)
    (root / ".github/workflows/ci.yml").write_text(EVENT, encoding="utf-8")
    (entry,) = load_schedule(root, RUNNERS, all_readers()).entries
    assert [g.value for g in entry.gates] == ["schedule"]
    assert not any("assumed true" in a for a in entry.assumptions)


MATRIX = """on: [pull_request]
jobs:
  unit:
    strategy:
      matrix:
        suite: [unit, gpu]
    runs-on: sm86
    steps:
      - id: Pick
        run: echo "where=tests" >> "$GITHUB_OUTPUT"
      - run: pytest ${{ steps.pick.outputs.WHERE }}/${{ matrix.Suite }}
"""


def test_matrix_values_and_step_outputs_are_read_whatever_their_case(tmp_path):
    assert _paths(tmp_path, {".github/workflows/ci.yml": MATRIX}) == {("tests/unit",), ("tests/gpu",)}


ACTION_CALLER = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - uses: ./.github/actions/suite
        with:
          FOLDER: tests/gpu
"""
ACTION = """name: suite
inputs:
  folder:
    default: tests/unit
runs:
  using: composite
  steps:
    - shell: bash
      run: pytest ${{ Inputs.Folder }}
"""


def test_a_composite_actions_input_is_read_whatever_its_case(tmp_path):
    files = {".github/workflows/ci.yml": ACTION_CALLER, ".github/actions/suite/action.yml": ACTION}
    assert _paths(tmp_path, files) == {("tests/gpu",)}


ENV_CASE = """on: [pull_request]
env:
  SUITE: tests/gpu
jobs:
  unit:
    runs-on: sm86
    steps:
      - run: pytest tests/unit ${{ env.suite }}
"""


def test_env_names_keep_their_case(tmp_path):
    """`env.suite` is not `env.SUITE` on a Linux runner: the expression gives an empty string."""
    assert _paths(tmp_path, {".github/workflows/ci.yml": ENV_CASE}) == {("tests/unit",)}
