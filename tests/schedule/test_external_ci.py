"""CI that runs outside what is read: another service's CI file in the repository, or a workflow step that hands
the run to another service, is an unread job that may run any test, so pytest-audit's verdict on a test no read
entry selects is `undetermined`, never `unscheduled`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.runner_files import load_runners
from matrix.schedule.load import all_readers, load_schedule
from matrix.schedule.services.external_ci import external_ci, other_ci_files

TEST = "def test_plain():\n    pass\n"
# A workflow that runs no test (lint only): with nothing else, the test file is unscheduled.
LINT = """on: [pull_request]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: ruff check .
"""
# Started by a pull-request comment; the service runs the tests on its own machines.
ACTION_HANDOFF = """on:
  issue_comment:
    types: [created]
jobs:
  gate:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: start the service's run
        uses: NVIDIA/blossom-action@v2
        with:
          args1: x
"""
COMMAND_HANDOFF = """on: [pull_request]
jobs:
  start:
    runs-on: [self-hosted, relay]
    steps:
      - name: start
        run: |
          set -e
          OPERATION=START-CI-JOB sudo -E blossom-ci --verbose
"""
# The command named only in a comment and as an argument: no hand-off.
NOT_A_HANDOFF = """on: [pull_request]
jobs:
  talk:
    runs-on: ubuntu-latest
    steps:
      - run: |
          # blossom-ci is started by another workflow
          echo blossom-ci
"""


def _repo(tmp_path: Path, workflow: str, extra: dict[str, str] | None = None) -> Path:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(workflow, encoding="utf-8")
    for name, text in {"tests/test_a.py": TEST, **(extra or {})}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _audit(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict]:
    code = main(["pytest-audit", str(root), "--format", "json", "--jobs", "1", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_without_other_ci_the_test_is_unscheduled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _audit(_repo(tmp_path, LINT), capsys)
    assert doc["counts"]["unscheduled"] and code == 1


@pytest.mark.parametrize(
    ("files", "named"),
    [
        pytest.param({".gitlab-ci.yml": "test:\n  script: pytest\n"}, ".gitlab-ci.yml", id="gitlab"),
        pytest.param({"Jenkinsfile": "pipeline { }\n"}, "Jenkinsfile", id="jenkins"),
        pytest.param({"jenkins/L0_Test.groovy": "stage('t') { }\n"}, "jenkins/L0_Test.groovy", id="jenkins-groovy"),
        pytest.param({".circleci/config.yml": "version: 2.1\n"}, ".circleci/config.yml", id="circleci"),
        pytest.param({".kokoro/presubmit/common.cfg": "build_file: 'x'\n"}, ".kokoro", id="kokoro-folder"),
        pytest.param({".buildkite/test-pipeline.yaml": "steps: []\n"}, ".buildkite/test-pipeline.yaml", id="buildkite"),
    ],
)
def test_another_services_ci_file_makes_the_test_undetermined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], named: str
) -> None:
    code, doc = _audit(_repo(tmp_path, LINT, files), capsys)
    assert doc["counts"]["unscheduled"] == {}
    assert doc["undetermined_unread"] == 1 and code == 0
    assert any(u["origin"].startswith(f"{named}:1 ") for u in doc["unread"])


@pytest.mark.parametrize("workflow", [ACTION_HANDOFF, COMMAND_HANDOFF], ids=["action", "command"])
def test_a_step_that_hands_the_run_to_another_service_makes_the_test_undetermined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workflow: str
) -> None:
    """Whatever starts the workflow (a comment, here, for the action): the service runs CI all the same."""
    code, doc = _audit(_repo(tmp_path, workflow), capsys)
    assert doc["counts"]["unscheduled"] == {} and doc["undetermined_unread"] == 1 and code == 0
    (handoff,) = [u for u in doc["unread"] if "hands the run to" in u["reason"]]
    at = ".github/workflows/ci.yml:5 job gate" if workflow is ACTION_HANDOFF else ".github/workflows/ci.yml:3 job start"
    assert handoff["origin"] == at and "Blossom" in handoff["reason"]


def test_a_command_named_in_a_comment_or_an_argument_is_no_handoff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _audit(_repo(tmp_path, NOT_A_HANDOFF), capsys)
    assert doc["counts"]["unscheduled"] and code == 1


def test_buildkite_files_given_are_read_not_listed_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = ".buildkite/test-pipeline.yaml"
    root = _repo(tmp_path, LINT, {pipeline: "steps:\n  - label: t\n    commands:\n      - pytest tests/test_a.py\n"})
    assert [u.origin.file for u in other_ci_files(root)] == [pipeline]
    _, listed = _audit(root, capsys)
    assert any(u["reason"].startswith("Buildkite runs from") for u in listed["unread"])
    _, given = _audit(root, capsys, "--buildkite", str(root / pipeline))
    assert not any(u["reason"].startswith("Buildkite runs from") for u in given["unread"])


def test_the_guard_audits_cached_schedule_keeps_the_handoff(tmp_path: Path) -> None:
    root = _repo(tmp_path, COMMAND_HANDOFF)
    runners = load_runners()
    first = load_schedule(root, runners, cache_dir=tmp_path / "cache")
    again = load_schedule(root, runners, cache_dir=tmp_path / "cache")
    fresh = load_schedule(root, runners, all_readers())
    for schedule in (first, again, fresh):
        assert [u.origin.job for u in schedule.unread] == ["start"]


def test_every_pack_entry_names_its_service_and_source() -> None:
    pack = external_ci()
    assert pack.files and pack.actions and pack.commands
    assert all(f.system and f.source and f.pattern for f in pack.files)
    doc = tomllib.loads((Path(__file__).resolve().parents[2] / "matrix" / "data" / "external_ci.toml").read_text())
    assert all(entry.get("source") for kind in ("file", "action", "command") for entry in doc[kind])


def test_a_ci_file_that_appears_is_not_hidden_by_a_cached_schedule(tmp_path: Path) -> None:
    root = _repo(tmp_path, LINT)
    runners = load_runners()
    assert load_schedule(root, runners, cache_dir=tmp_path / "cache").unread == ()
    (root / ".gitlab-ci.yml").write_text("test:\n  script: pytest\n", encoding="utf-8")
    (root / ".kokoro").mkdir()
    later = load_schedule(root, runners, cache_dir=tmp_path / "cache")
    assert [u.origin.file for u in later.unread] == [".gitlab-ci.yml", ".kokoro"]
