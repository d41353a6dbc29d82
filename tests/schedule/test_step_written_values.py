"""Values a step writes reach the steps after it: `$GITHUB_ENV` (from a `run:` step or a local composite action, by
`echo`, `printf`, a `NAME<<DELIMITER` block, a here-document) and `steps.ID.outputs.NAME` from `$GITHUB_OUTPUT`; a
value the run computes is unknown, never the job's older value; a step whose `if:` is false writes nothing."""

from __future__ import annotations

from pathlib import Path

from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.model import Schedule

RUNNERS = load_runners()


def _read(tmp_path: Path, files: dict[str, str]) -> Schedule:
    root = tmp_path / "repo"
    for name in ("tests/unit/test_a.py", "tests/gpu/test_b.py"):
        files = {name: "def test_one():\n    pass\n", **files}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return load_schedule(root, RUNNERS, all_readers())


WORKFLOW = """on: [pull_request]
env:
  WHERE: tests/unit
jobs:
  unit:
    runs-on: sm86
    steps:
      - uses: ./.github/actions/where
      - run: |
          printf 'FILTER=%s\\n' quick >> $GITHUB_ENV
      - id: pick
        run: |
          cat >> "$GITHUB_OUTPUT" <<EOF
          suite=gpu
          EOF
      - run: pytest $WHERE -k "$FILTER"
      - run: pytest tests/${{ steps.pick.outputs.suite }}
      - run: echo "WHERE=$(cat picked.txt)" >> $GITHUB_ENV
      - run: pytest $WHERE
"""
ACTION = """name: where
runs:
  using: composite
  steps:
    - shell: bash
      run: |
        {
          echo "WHERE<<END"
          echo "tests/gpu"
          echo "END"
        } >> "$GITHUB_ENV"
"""


def test_later_steps_see_what_a_step_and_a_composite_action_write(tmp_path):
    schedule = _read(tmp_path, {".github/workflows/ci.yml": WORKFLOW, ".github/actions/where/action.yml": ACTION})
    read = {(entry.selection.paths, entry.selection.keyword) for entry in schedule.entries}  # type: ignore[union-attr]
    assert read == {(("tests/gpu",), "quick"), (("tests/gpu",), None)}
    # the last step's WHERE is computed at run time: never the value written before
    (unread,) = schedule.unread
    assert "$WHERE" in unread.reason and unread.origin.line == 19


SKIPPED_WRITER = """on: [pull_request]
env:
  SUITE: tests/unit
jobs:
  unit:
    runs-on: sm86
    steps:
      - if: false
        run: echo "SUITE=tests/gpu" >> "$GITHUB_ENV"
      - run: pytest $SUITE
"""


def test_a_step_that_never_runs_writes_nothing(tmp_path):
    (entry,) = _read(tmp_path, {".github/workflows/ci.yml": SKIPPED_WRITER}).entries
    assert entry.selection.paths == ("tests/unit",)  # type: ignore[union-attr]


OUTPUT_BY_STEP = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - id: first
        run: echo "dir=tests/unit" >> "$GITHUB_OUTPUT"
      - id: second
        run: echo "dir=$(cat picked)" >> "$GITHUB_OUTPUT"
      - run: pytest ${{ steps.first.outputs.dir }}
      - run: pytest ${{ steps.second.outputs.dir }}
"""


def test_a_step_output_is_the_one_that_step_writes(tmp_path):
    """Both steps write `dir`: the first literally, the second from a file; each reference reads its own step."""
    schedule = _read(tmp_path, {".github/workflows/ci.yml": OUTPUT_BY_STEP})
    assert [entry.selection.paths for entry in schedule.entries] == [("tests/unit",)]  # type: ignore[union-attr]
    (unread,) = schedule.unread
    assert "steps.second.outputs.dir" in unread.reason and unread.origin.line == 11


MAYBE_WRITER = """on: [pull_request]
env:
  SUITE: tests/unit
jobs:
  unit:
    runs-on: sm86
    steps:
      - if: ${{ vars.USE_GPU == 'yes' }}
        run: echo "SUITE=tests/gpu" >> "$GITHUB_ENV"
      - run: pytest $SUITE
"""


def test_a_step_that_may_not_run_leaves_what_it_writes_unknown(tmp_path):
    """The write happens only when the `if:` holds, which is known only at run time: SUITE is either value."""
    schedule = _read(tmp_path, {".github/workflows/ci.yml": MAYBE_WRITER})
    assert not schedule.entries
    (unread,) = schedule.unread
    assert "$SUITE" in unread.reason
