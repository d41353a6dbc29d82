"""A schedule entry cites the line its command is written on, in the step whose command it is: the second line of
a `run: |` block, a folded block's line, the first line of a continued command, a local action's own line; two
steps that start with the same text are told apart."""

from __future__ import annotations

from pathlib import Path

from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule

RUNNERS = load_runners()
TEST = "def test_one():\n    pass\n"


def _schedule_lines(tmp_path: Path, files: dict[str, str]) -> dict[str, int]:
    root = tmp_path / "repo"
    for name, text in {"tests/unit/test_a.py": TEST, "tests/gpu/test_b.py": TEST, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    schedule = load_schedule(root, RUNNERS, all_readers(), follow_scripts=True)
    out: dict[str, int] = {}
    for entry in schedule.entries:
        out[" ".join(getattr(entry.selection, "paths", ()))] = entry.origin.line
    for unread in schedule.unread:
        out[unread.reason[:20]] = unread.origin.line
    return out


TWO_STEPS = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - name: probe the box
        run: |
          cd tests
          python -c 'import torch'
      - name: the suite
        run: |
          cd tests
          pytest gpu
"""


def test_two_steps_with_the_same_first_line_each_cite_their_own_command(tmp_path):
    assert _schedule_lines(tmp_path, {".github/workflows/ci.yml": TWO_STEPS})["tests/gpu"] == 13


BLOCKS = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - run: |
          set -ex

          pytest tests/unit
      - run: >-
          echo start &&
          true

          pytest tests/gpu
          -x
"""


def test_a_command_cites_its_own_line_in_literal_and_folded_blocks(tmp_path):
    lines = _schedule_lines(tmp_path, {".github/workflows/ci.yml": BLOCKS})
    assert lines["tests/unit"] == 9
    assert lines["tests/gpu"] == 14


CONTINUED = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - run: |
          echo one
          TIMEOUT=30 \\
            pytest \\
            tests/unit
"""


def test_a_continued_command_cites_its_first_line(tmp_path):
    assert _schedule_lines(tmp_path, {".github/workflows/ci.yml": CONTINUED})["tests/unit"] == 8


ACTION_CALLER = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - uses: ./.github/actions/suite
      - uses: ./.github/actions/suite
        with:
          where: tests/gpu
"""
ACTION = """name: suite
inputs:
  where:
    default: tests/unit
runs:
  using: composite
  steps:
    - shell: bash
      run: |
        echo "running"
        pytest ${{ inputs.where }}
"""


def test_a_local_actions_command_cites_the_action_line_and_the_call_that_used_it(tmp_path):
    root = tmp_path / "repo"
    files = {".github/workflows/ci.yml": ACTION_CALLER, ".github/actions/suite/action.yml": ACTION, "tests/unit/test_a.py": TEST}
    files["tests/gpu/test_b.py"] = TEST
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    schedule = load_schedule(root, RUNNERS, all_readers())
    by_path = {entry.selection.paths: entry.origin for entry in schedule.entries}  # type: ignore[union-attr]
    assert by_path[("tests/unit",)].line == 11 and by_path[("tests/unit",)].file == ".github/actions/suite/action.yml"
    assert by_path[("tests/unit",)].via == (".github/workflows/ci.yml:6",)
    assert by_path[("tests/gpu",)].via == (".github/workflows/ci.yml:7",)


JOB_NAMED_LIKE_AN_INPUT = """on:
  workflow_dispatch:
    inputs:
      unit:
        default: x
jobs:
  unit:
    if: false
    runs-on: sm86
    steps:
      - run: pytest tests/unit
"""


def test_a_job_cites_its_own_key_not_an_input_of_the_same_name(tmp_path):
    root = tmp_path / "repo"
    for name, text in {".github/workflows/ci.yml": JOB_NAMED_LIKE_AN_INPUT, "tests/unit/test_a.py": TEST}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (never,) = load_schedule(root, RUNNERS, all_readers()).not_run
    assert never.origin.line == 7 and never.origin.job == "unit"
