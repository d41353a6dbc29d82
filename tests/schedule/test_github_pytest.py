"""pytest jobs read from GitHub Actions workflows: direct pytest lines, the shell scripts steps run (also through a
wrapper script), literal defaults, runs-on labels, env and gating, and every job that cannot be read listed."""

from __future__ import annotations

import json
import textwrap
import tomllib
from collections.abc import Mapping
from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.commands.pytest_command import PytestCommandReader
from matrix.schedule.github.walk import Walker, read_github
from matrix.schedule.model import Gate, Origin, PytestSelection, Schedule, ScheduleEntry
from matrix.schedule.services.declared import declared_schedule, parse_declared
from matrix.schedule.shell.commands import FOLLOWED

RUNNERS = load_runners()
READERS = (PytestCommandReader(),)

# A GPU workflow: one job calls pytest itself, one calls a script, one hands a script to a container wrapper,
# one hands over a script named only by the matrix at run time. Written for these tests.
GPU_WORKFLOW = """
name: gpu
on:
  push:
    branches: [main]
  pull_request:
    types: [labeled]
env:
  SHARED_FLAG: "1"
jobs:
  direct:
    if: contains(github.event.pull_request.labels.*.name, 'gpu-ok') || github.event_name == 'push'
    runs-on: [self-hosted, sm86]
    env:
      KERNEL_MODE: fast
    steps:
      - run: |
          python -m pytest tests/unit --ignore=tests/unit/slow -k "not huge" -m "not multi" \\
            --deselect tests/unit/test_a.py::test_flaky
          pytest ${SUITE_DIR:-tests/ops}
  scripted:
    runs-on: [self-hosted, h100]
    steps:
      - run: bash scripts/gpu_part.sh
  wrapped:
    runs-on: [self-hosted, sm75]
    steps:
      - run: bash ci/in_box.sh "box:latest" --gpus all ./scripts/gpu_part.sh
  late:
    runs-on: [self-hosted, sm86]
    strategy:
      matrix:
        chosen: ${{ fromJSON(needs.plan.outputs.chosen) }}
    env:
      PICKED: ${{ matrix.chosen.script }}
    steps:
      - run: bash ci/in_box.sh "box:latest" "./scripts/${PICKED}"
  expression:
    runs-on: [self-hosted, sm86]
    steps:
      - run: pytest ${{ needs.plan.outputs.folder }}
"""
SCRIPTS = {
    "scripts/gpu_part.sh": textwrap.dedent(
        """\
        #!/bin/bash
        set -e
        source "$(dirname "${BASH_SOURCE[0]}")/common_env.sh"
        pytest -s tests/kernels/test_one.py
        """
    ),
    "scripts/common_env.sh": "export FROM_COMMON=1\npytest tests/kernels/test_common.py\n",
    "ci/in_box.sh": 'docker run --rm "$1" "${@:2}"\n',
}


def repo(tmp_path: Path, workflow: str = GPU_WORKFLOW, scripts: Mapping[str, str] = SCRIPTS) -> Path:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "gpu.yml").write_text(workflow, encoding="utf-8")
    for path, text in scripts.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def read(root: Path) -> Schedule:
    def load(path: str) -> str | None:
        return (root / path).read_text(encoding="utf-8") if (root / path).is_file() else None

    return read_github(root, READERS, RUNNERS, scripts=load)


def by_job(schedule: Schedule, job: str) -> list[ScheduleEntry]:
    return [e for e in schedule.entries if e.origin.job == job]


def selection(entry: ScheduleEntry) -> PytestSelection:
    assert isinstance(entry.selection, PytestSelection)
    return entry.selection


def test_a_job_that_runs_pytest_itself(tmp_path: Path) -> None:
    first, _ = by_job(read(repo(tmp_path)), "direct")
    chosen = selection(first)
    assert chosen.paths == ("tests/unit",)
    assert chosen.ignore == ("tests/unit/slow",)
    assert chosen.deselect == ("tests/unit/test_a.py::test_flaky",)
    assert (chosen.keyword, chosen.markexpr) == ("not huge", "not multi")
    assert first.labels == ("self-hosted", "sm86") and first.profiles == ("a10g",)
    assert first.env_map["KERNEL_MODE"] == "fast" and first.env_map["SHARED_FLAG"] == "1"
    assert set(first.gates) == {Gate.ALWAYS, Gate.LABEL}
    assert first.origin.file == ".github/workflows/gpu.yml" and first.origin.line > 0


def test_a_literal_default_names_the_folder(tmp_path: Path) -> None:
    _, second = by_job(read(repo(tmp_path)), "direct")
    assert selection(second).paths == ("tests/ops",)


def test_a_script_the_step_runs_is_read_with_the_job_labels(tmp_path: Path) -> None:
    entries = by_job(read(repo(tmp_path)), "scripted")
    paths = sorted(selection(e).paths for e in entries)
    assert paths == [("tests/kernels/test_common.py",), ("tests/kernels/test_one.py",)]
    one = next(e for e in entries if selection(e).paths == ("tests/kernels/test_one.py",))
    assert one.profiles == ("h100",)
    assert one.origin.file == "scripts/gpu_part.sh" and one.origin.line == 4
    assert one.origin.via[0].startswith(".github/workflows/gpu.yml:")


def test_a_script_handed_to_a_wrapper_script_is_read(tmp_path: Path) -> None:
    entries = by_job(read(repo(tmp_path)), "wrapped")
    assert sorted(selection(e).paths for e in entries) == [("tests/kernels/test_common.py",), ("tests/kernels/test_one.py",)]
    assert {e.profiles for e in entries} == {("t4",)}


def test_jobs_known_only_at_run_time_are_listed_not_dropped(tmp_path: Path) -> None:
    schedule = read(repo(tmp_path))
    assert by_job(schedule, "late") == [] and by_job(schedule, "expression") == []
    reasons = {u.origin.job: u.reason for u in schedule.unread}
    assert "./scripts/${PICKED}" in reasons["late"] and "known only at run time" in reasons["late"]
    assert reasons["expression"] == "pytest argument ${{ outputs.folder }} is known only at run time"


def test_a_missing_script_is_listed(tmp_path: Path) -> None:
    schedule = read(repo(tmp_path, scripts={}))
    missing = [u for u in schedule.unread if u.origin.job == "scripted"]
    assert [(u.origin.file, u.reason) for u in missing] == [("scripts/gpu_part.sh", "the script is not in the tree")]


def test_without_a_script_loader_scripts_are_not_followed(tmp_path: Path) -> None:
    schedule = read_github(repo(tmp_path), READERS, RUNNERS)
    assert by_job(schedule, "scripted") == [] and len(by_job(schedule, "direct")) == 2


def test_the_pytest_reader_gives_the_walker_its_keywords(tmp_path: Path) -> None:
    assert PytestCommandReader.keywords == ("pytest", "py.test")
    walker = Walker(repo=tmp_path, workflows={}, readers=READERS, runners=RUNNERS, scripts={}.get)
    assert walker.keywords == ("pytest", "py.test", *FOLLOWED)
    assert Walker(repo=tmp_path, workflows={}, readers=READERS, runners=RUNNERS).keywords == ("pytest", "py.test")


DECLARED = """
[[entry]]
job = "renamed box"
labels = ["self-hosted", "1-gpu-runner"]
pytest = "pytest tests"

[[entry]]
job = "typo box"
labels = ["self-hosted", "sm868"]
pytest = "pytest tests"
"""


def test_declared_labels_resolve_as_the_walker_resolves_them() -> None:
    from matrix.schedule.labels import LabelIndex

    schedule = declared_schedule(parse_declared(tomllib.loads(DECLARED), "d.toml"), RUNNERS, {}.get, READERS)
    (renamed,) = schedule.entries
    shared = LabelIndex(RUNNERS).resolve(("self-hosted", "1-gpu-runner"))
    assert renamed.profiles == shared.profiles == ("1-gpu-h100",)
    assert "1-gpu-runner is a former label of 1-gpu-h100" in renamed.assumptions
    (typo,) = schedule.unknown_labels
    assert typo.label == "sm868" and "sm86" in typo.nearest
    assert typo == LabelIndex(RUNNERS).unknown(("self-hosted", "sm868"), Origin(file="d.toml", line=0, job="typo box"))


SKIPS_OFF_HOPPER = "import pytest\npytestmark = pytest.mark.skipif(True, reason='never here')\n"


def test_pytest_audit_reads_the_workflows_by_itself(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matrix.cli.main import main

    root = repo(tmp_path)
    (root / "tests" / "kernels").mkdir(parents=True)
    (root / "tests" / "kernels" / "test_one.py").write_text(SKIPS_OFF_HOPPER + "def test_x():\n    pass\n", encoding="utf-8")
    # A deliberate skip is a warning: the run passes, and the test is listed under disabled-by-skip.
    assert main(["pytest-audit", str(root), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["counts"]["disabled-by-skip"] == {"unconditional": 1} and not doc["counts"]["silent-skip"]
    assert any("./scripts/${PICKED}" in u["reason"] for u in doc["unread"])
    plan = tmp_path / "plan.toml"
    plan.write_text('[[entry]]\njob = "late"\nlabels = ["sm86"]\nscript = "scripts/gpu_part.sh"\n', encoding="utf-8")
    assert main(["pytest-audit", str(root), "--schedule-file", str(plan), "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert "disabled-by-skip: tests/kernels/test_one.py::test_x on a10g, h100, t4" in text


def test_schedule_shows_pytest_and_declared_entries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matrix.cli.main import main

    root = repo(tmp_path)
    plan = tmp_path / "plan.toml"
    plan.write_text('[[entry]]\njob = "late"\nlabels = ["sm86"]\npytest = "pytest tests/late -m slow"\n', encoding="utf-8")
    assert main(["schedule", str(root), "--schedule-file", str(plan)]) == 0
    text = capsys.readouterr().out
    assert "pytest tests/unit --ignore=tests/unit/slow --deselect tests/unit/test_a.py::test_flaky" in text
    assert "-k 'not huge' -m 'not multi' (in .)  on self-hosted, sm86 -> a10g" in text
    assert f"declared in {plan}: 1 entries" in text
    assert "pytest tests/late -m 'slow' (in .)  on sm86 -> a10g" in text
    assert "./scripts/${PICKED}" in text.split("unread (")[1]
    assert main(["schedule", str(root), "--schedule-file", str(plan), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["declared"][0]["entries"][0]["selection"]["markexpr"] == "slow"
    assert any(e["selection"]["ignore"] == ["tests/unit/slow"] for e in doc["entries"])


def test_a_script_that_calls_itself_is_listed_as_a_cycle(tmp_path: Path) -> None:
    looping = {"scripts/gpu_part.sh": "pytest tests/kernels/test_one.py\nbash scripts/gpu_part.sh\n"}
    schedule = read(repo(tmp_path, scripts=looping))
    reasons = [u.reason for u in schedule.unread if u.origin.job == "scripted"]
    assert reasons == ["runs itself again (scripts/gpu_part.sh -> scripts/gpu_part.sh): not followed"]
    assert {selection(e).paths for e in by_job(schedule, "scripted")} == {("tests/kernels/test_one.py",)}
