"""Each entry names its real gate: merge queue (`merge_group`), a label (`pull_request` with `types: [labeled]` or an
`if:` on labels), a schedule, a manual start; a workflow no event starts for this repository (no `on:`, a
`workflow_run` after no workflow of the repository, a reusable workflow nobody here calls) runs nothing and is
listed with why; a statically false `if:` runs nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.model import Schedule

RUNNERS = load_runners()
JOB = """jobs:
  unit:
    {cond}runs-on: sm86
    steps:
      - run: pytest tests
"""


def _read(tmp_path: Path, files: dict[str, str]) -> Schedule:
    root = tmp_path / "repo"
    for name, text in {"tests/test_a.py": "def test_a():\n    pass\n", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return load_schedule(root, RUNNERS, all_readers())


@pytest.mark.parametrize(
    ("on", "cond", "gates"),
    [
        ("on: [merge_group]\n", "", ["merge-queue"]),
        ("on: [pull_request, merge_group]\n", "if: github.event_name == 'merge_group'\n    ", ["merge-queue"]),
        ("on: [pull_request, merge_group]\n", "", ["always", "merge-queue"]),
        ("on:\n  pull_request:\n    types: [labeled]\n", "", ["label"]),
        ("on:\n  pull_request:\n    types: [labeled, synchronize]\n", "", ["always"]),
        ("on:\n  schedule:\n    - cron: '0 3 * * *'\n", "", ["schedule"]),
        ("on: [workflow_dispatch]\n", "", ["manual"]),
        ("on: [issue_comment]\n", "", ["manual"]),
    ],
)
def test_an_entry_names_the_gate_of_the_events_that_start_it(tmp_path, on, cond, gates):
    (entry,) = _read(tmp_path, {".github/workflows/ci.yml": on + JOB.format(cond=cond)}).entries
    assert [g.value for g in entry.gates] == gates


def test_a_workflow_run_after_a_workflow_of_the_repository_takes_its_gates(tmp_path):
    first = "name: Build\non: [merge_group]\njobs:\n  b:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo built\n"
    after = "on:\n  workflow_run:\n    workflows: [Build]\n    types: [completed]\n" + JOB.format(cond="")
    (entry,) = _read(tmp_path, {".github/workflows/build.yml": first, ".github/workflows/after.yml": after}).entries
    assert [g.value for g in entry.gates] == ["merge-queue"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (JOB.format(cond=""), "no `on:` trigger"),
        ("on:\n  workflow_run:\n    workflows: [Elsewhere]\n" + JOB.format(cond=""), "workflow_run"),
        ("on:\n  workflow_call:\n" + JOB.format(cond=""), "no workflow of this repository"),
    ],
)
def test_a_workflow_no_event_starts_runs_nothing_and_says_why(tmp_path, text, said):
    schedule = _read(tmp_path, {".github/workflows/ci.yml": text})
    assert not schedule.entries
    (never,) = schedule.not_run
    assert said in never.reason and never.origin.file == ".github/workflows/ci.yml"


@pytest.mark.parametrize("cond", ["if: false\n    ", "if: ${{ 0 }}\n    ", "if: github.event_name == 'push'\n    "])
def test_a_statically_false_job_runs_nothing(tmp_path, cond):
    schedule = _read(tmp_path, {".github/workflows/ci.yml": "on: [pull_request]\n" + JOB.format(cond=cond)})
    assert not schedule.entries and len(schedule.not_run) == 1
