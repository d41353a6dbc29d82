"""Where a job has the repository: `${{ github.workspace }}` is the checkout's folder, `actions/checkout` with
`path: sub` puts the repository under `sub/` (its folders, scripts and actions are the repository's own there), and
another repository's checkout is not this repository; a working folder known only at run time is unread."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.model import Schedule

RUNNERS = load_runners()
TEST = "def test_one():\n    pass\n"


def _read(tmp_path: Path, workflow: str, more: dict[str, str] | None = None) -> Schedule:
    root = tmp_path / "repo"
    files = {"tests/unit/test_a.py": TEST, "tests/gpu/test_b.py": TEST, ".github/workflows/ci.yml": workflow, **(more or {})}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return load_schedule(root, RUNNERS, all_readers(), follow_scripts=True)


def _paths(schedule: Schedule) -> set[tuple[str, ...]]:
    return {entry.selection.paths for entry in schedule.entries}  # type: ignore[union-attr]


STEP = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    {defaults}steps:
      - uses: actions/checkout@v4{checkout}
      - working-directory: {folder}
        run: pytest {target}
"""


@pytest.mark.parametrize(
    ("folder", "target", "checkout", "paths"),
    [
        ("${{ github.workspace }}", "tests/unit", "", {("tests/unit",)}),
        ("${{ github.workspace }}/tests", "gpu", "", {("tests/gpu",)}),
        ("${{github.workspace}}/tests", "unit", "", {("tests/unit",)}),
        ("src", "tests/unit", "\n        with:\n          path: src", {("tests/unit",)}),
        ("${{ github.workspace }}/src/tests", "gpu", "\n        with:\n          path: src", {("tests/gpu",)}),
        (
            "src",
            "tests/unit",
            "\n        with:\n          path: src\n          repository: ${{ github.repository }}",
            {("tests/unit",)},
        ),
    ],
)
def test_a_folder_is_named_from_the_repository_root(tmp_path, folder, target, checkout, paths):
    schedule = _read(tmp_path, STEP.format(defaults="", folder=folder, target=target, checkout=checkout))
    assert _paths(schedule) == paths and not schedule.unread


def test_a_job_default_folder_may_be_the_workspace(tmp_path):
    defaults = "defaults:\n      run:\n        working-directory: ${{ github.workspace }}/tests\n    "
    workflow = STEP.format(defaults=defaults, folder="${{ github.workspace }}/tests", target="unit", checkout="").replace(
        "      - working-directory: ${{ github.workspace }}/tests\n", "      - "
    )
    assert _paths(_read(tmp_path, workflow)) == {("tests/unit",)}


def test_a_folder_known_only_at_run_time_is_unread(tmp_path):
    schedule = _read(tmp_path, STEP.format(defaults="", folder="${{ vars.SUITE_DIR }}", target="tests/unit", checkout=""))
    assert not schedule.entries
    (unread,) = schedule.unread
    assert "working-directory" in unread.reason and "vars.SUITE_DIR" in unread.reason


CHECKED_OUT_UNDER = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - uses: actions/checkout@v4
        with:
          path: code
      - uses: actions/checkout@v4
        with:
          repository: someone/tools
          path: tools
      - uses: ./code/.github/actions/suite
      - run: cd code && bash ci/gpu.sh
      - run: bash tools/ci/gpu.sh
      - run: bash code/ci/gpu.sh
"""
SUITE_ACTION = """runs:
  using: composite
  steps:
    - shell: bash
      working-directory: code
      run: pytest tests/unit
    - shell: bash
      run: pytest code/tests/gpu
"""
GPU_SCRIPT = "#!/bin/bash\npytest tests/gpu\n"


def test_the_repository_checked_out_under_a_path_keeps_its_own_scripts_and_actions(tmp_path):
    more = {".github/actions/suite/action.yml": SUITE_ACTION, "ci/gpu.sh": GPU_SCRIPT, "tools/ci/gpu.sh": GPU_SCRIPT}
    schedule = _read(tmp_path, CHECKED_OUT_UNDER, more)
    assert _paths(schedule) == {("tests/unit",), ("tests/gpu",)}
    by_file = {entry.origin.file for entry in schedule.entries}
    assert by_file == {".github/actions/suite/action.yml", "ci/gpu.sh"}
    # from the workspace, above the checkout: what pytest collects from there is not read (its reach is kept)
    above = next(u for u in schedule.unread if u.origin.file == ".github/actions/suite/action.yml")
    assert above.reach == ("tests/gpu",) and above.origin.line == 8
    # `tools/ci/gpu.sh` is the other repository's script, not this repository's file of the same name
    other = next(u for u in schedule.unread if "tools/ci/gpu.sh" in u.reason)
    assert other.origin.line == 15 and other.origin.file == ".github/workflows/ci.yml"
    # a script run from the workspace runs pytest there, above the checkout: not read, and it may reach only what
    # the repository holds under a path that ends the same way (a step may have moved it there)
    (above_too,) = [u for u in schedule.unread if u.origin.file == "ci/gpu.sh"]
    assert above_too.reach == ("tests/gpu",)
    assert len(schedule.unread) == 3


ACTION_RUNS_TESTS = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - uses: some-org/retry-action@v3
        with:
          attempts: 3
          command: pytest tests/gpu
"""


def test_an_action_given_a_test_command_is_unread(tmp_path):
    schedule = _read(tmp_path, ACTION_RUNS_TESTS)
    assert not schedule.entries
    (unread,) = schedule.unread
    assert "some-org/retry-action@v3" in unread.reason and unread.origin.line == 6


RUN_TIME_PATH = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - uses: actions/checkout@v4
        with:
          path: code
      - run: pytest code/tests/unit/$(ls code/tests/unit | head -n 1)
      - run: bash code/ci/pick.sh
"""
PICK_SCRIPT = "#!/bin/bash\npytest code/tests/gpu/*_$(date +%u).py\n"


def test_an_unread_command_under_a_checkout_path_reaches_the_repository_own_folders(tmp_path):
    # The bound of a command with a run-time part is named from the workspace; under `path: code` the repository's
    # own folder is `tests/unit`, never `code/tests/unit` nor `../code/tests/unit` (which reach no file of it).
    schedule = _read(tmp_path, RUN_TIME_PATH, {"ci/pick.sh": PICK_SCRIPT})
    assert not schedule.entries
    reach = {u.origin.file: u.reach for u in schedule.unread}
    assert reach == {".github/workflows/ci.yml": ("tests/unit",), "ci/pick.sh": ("tests/gpu",)}
    assert all("it can run only tests under tests/" in u.reason for u in schedule.unread)


def test_a_file_only_an_unread_command_under_a_checkout_path_runs_is_not_unscheduled(tmp_path):
    from matrix.pytest_suites.run import AuditInput, run_audit

    _read(tmp_path, RUN_TIME_PATH, {"ci/pick.sh": PICK_SCRIPT, "tests/other/test_c.py": TEST})
    report = run_audit(AuditInput(root=tmp_path / "repo"), RUNNERS)
    unscheduled = {f.finding.path for f in report.findings if f.finding.kind == "unscheduled"}
    assert unscheduled == {"tests/other/test_c.py"}
    assert report.unread_only == 2
