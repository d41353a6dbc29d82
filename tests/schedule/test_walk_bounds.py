"""Local composite actions, bounded and read only as far as they are understood: an action that uses itself
(directly or through another) is unread with the chain named (its time and memory: `ci/hostile_walks.py`); `steps: 5` is one unread reason,
never a traceback; a Blossom hand-off inside a local action is listed like one in a workflow; Buildkite's default
pipeline files are CI outside the files read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.loader import load_runners
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.model import Schedule

RUNNERS = load_runners()
CALLER = """on: [pull_request]
jobs:
  unit:
    runs-on: sm86
    steps:
      - uses: ./.github/actions/first
      - run: pytest tests
"""


def _read(tmp_path: Path, files: dict[str, str]) -> Schedule:
    root = tmp_path / "repo"
    for name, text in {"tests/test_a.py": "def test_a():\n    pass\n", ".github/workflows/ci.yml": CALLER, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return load_schedule(root, RUNNERS, all_readers())


def _composite(*steps: str) -> str:
    return "runs:\n  using: composite\n  steps:\n" + "".join(steps)


USES = "    - uses: ./.github/actions/{}\n"
RUN = "    - shell: bash\n      run: pytest tests\n"


@pytest.mark.parametrize(
    ("actions", "chain"),
    [
        ({"first": _composite(RUN, *[USES.format("first")] * 50)}, "first/action.yml -> .github/actions/first"),
        (
            {"first": _composite(*[USES.format("second")] * 50), "second": _composite(RUN, *[USES.format("first")] * 50)},
            "second/action.yml -> .github/actions/first",
        ),
    ],
)
def test_an_action_that_uses_itself_is_unread_and_cheap(tmp_path, actions, chain):
    files = {f".github/actions/{name}/action.yml": text for name, text in actions.items()}
    schedule = _read(tmp_path, files)
    (loop,) = schedule.unread
    assert "uses itself" in loop.reason and chain in loop.reason


@pytest.mark.parametrize("steps", ["5", "'pytest tests'", "[1, 2]", "{run: pytest}"])
def test_steps_that_are_not_a_list_of_steps_are_one_unread_reason(tmp_path, capsys, steps):
    schedule = _read(tmp_path, {".github/actions/first/action.yml": f"runs:\n  using: composite\n  steps: {steps}\n"})
    (problem,) = schedule.unread
    assert "runs.steps must be a list of steps" in problem.reason
    assert main(["schedule", str(tmp_path / "repo"), "--format", "json"]) == 0
    json.loads(capsys.readouterr().out)


BLOSSOM = _composite("    - shell: bash\n      run: blossom-ci\n      env:\n        OPERATION: START-CI-JOB\n")


def test_a_handoff_inside_a_local_action_is_listed(tmp_path):
    schedule = _read(tmp_path, {".github/actions/first/action.yml": BLOSSOM})
    (handoff,) = [u for u in schedule.unread if "Blossom" in u.reason]
    assert handoff.origin.file == ".github/actions/first/action.yml" and handoff.origin.line == 5
    assert handoff.reach is None  # it may run any test


@pytest.mark.parametrize(
    "path",
    [
        "buildkite.yml",
        "buildkite.yaml",
        "buildkite.json",
        ".buildkite/pipeline.yml",
        ".buildkite/pipeline.yaml",
        ".buildkite/pipeline.json",
        "buildkite/pipeline.yml",
        "buildkite/pipeline.yaml",
        "buildkite/pipeline.json",
    ],
)
def test_buildkites_default_pipeline_files_are_ci_not_read(tmp_path, capsys, path):
    root = tmp_path / "repo"
    lint = "on: [pull_request]\njobs:\n  lint:\n    runs-on: ubuntu-latest\n    steps:\n      - run: ruff check\n"
    files = {"tests/test_a.py": "def test_a():\n    pass\n", path: "steps:\n  - command: pytest tests\n"}
    files[".github/workflows/lint.yml"] = lint
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert not [f for f in doc["findings"] if f["kind"] == "unscheduled"]
    assert any(u["origin"].startswith(f"{path}:1 ") and "Buildkite" in u["reason"] for u in doc["unread"])
