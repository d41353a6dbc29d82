"""The GitHub Actions walker: reusable workflows, runner-config tables, gating, matrices, commands, assumptions."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.containers.calls import ContainerCall, marker
from matrix.schedule.files import find_workflows
from matrix.schedule.github.walk import read_github
from matrix.schedule.load import load_schedule
from matrix.schedule.model import Gate, Selection, StepContext, SuiteSelection
from matrix.schedule.shell.commands import CONTAINER, commands

RUNNERS = load_runners()

# A caller runs its stages through a reusable workflow that reads the runner from a runs_on_map table.
CALLER = """name: Stages
on:
  pull_request:
  schedule:
    - cron: "5 4 * * *"
env:
  CALLER_ONLY: "yes"
jobs:
  probe:
    uses: ./.github/workflows/_probe.yml
  stage-small:
    uses: ./.github/workflows/_stage.yml
    with:
      self_name: unit-a-test-1-gpu-small
      runner_config: small-box
      probe: ${{ toJson(needs.probe.outputs) }}
  stage-blackwell:
    uses: ./.github/workflows/_stage.yml
    with:
      self_name: unit-b-test-4-gpu-b200
      runner_config: blackwell-box
      probe: ${{ toJson(needs.probe.outputs) }}
"""
PROBE = """on:
  workflow_call:
    outputs:
      runs_on_map:
        value: ${{ jobs.p.outputs.runs_on_map }}
jobs:
  p:
    runs-on: ubuntu-latest
    outputs:
      runs_on_map: ${{ steps.map.outputs.runs_on_map }}
    steps:
      - id: map
        run: python3 scripts/ci/runner_configs.py --map >> "$GITHUB_OUTPUT"
      - id: pick
        run: |
          if [ -n "$KERNEL" ]; then
            echo "bw_pool=4-gpu-b200-kernel" >> $GITHUB_OUTPUT
          else
            echo "bw_pool=4-gpu-b200" >> $GITHUB_OUTPUT
          fi
"""
STAGE = """on:
  workflow_call:
    inputs:
      self_name: {type: string, required: true}
      runner_config: {type: string, required: true}
      probe: {type: string, required: true}
      extra_flag: {type: string, default: "--continue-on-error"}
env:
  SGLANG_IS_IN_CI: true
  STAGE_NAME: ${{ inputs.self_name }}
jobs:
  run:
    runs-on: ${{ fromJson(fromJson(inputs.probe).runs_on_map)[inputs.runner_config] }}
    strategy:
      matrix:
        part: ${{ fromJson(inputs.probe).partitions }}
    steps:
      - run: |
          cd test
          python3 run_suite.py --hw cuda --suite ${{ inputs.self_name }} \\
            --auto-partition-id ${{ matrix.part }} ${{ inputs.extra_flag }}
"""
TABLE = """_shared:
  default: &d scripts/install.sh
runner_configs:
  small-box: {install: *d, runs_on: 1-gpu-5090}
  blackwell-box: {install: *d, runs_on: $bw_pool}
"""


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def stages(tmp_path: Path) -> Path:
    return repo(
        tmp_path,
        {
            ".github/workflows/stages.yml": CALLER,
            ".github/workflows/_probe.yml": PROBE,
            ".github/workflows/_stage.yml": STAGE,
            "scripts/ci/runner_configs.yml": TABLE,
        },
    )


def by_suite(schedule, suite: str):
    return [e for e in schedule.entries if isinstance(e.selection, SuiteSelection) and e.selection.suite == suite]


def test_reusable_workflow_inputs_reach_the_callee_and_its_runner_comes_from_the_table(stages):
    schedule = load_schedule(stages, RUNNERS)
    (small,) = by_suite(schedule, "unit-a-test-1-gpu-small")
    assert small.labels == ("1-gpu-5090",) and small.profiles == ("1-gpu-5090",)
    assert small.selection == SuiteSelection(suite="unit-a-test-1-gpu-small", hw="cuda", nightly=False)
    assert small.origin.file == ".github/workflows/_stage.yml" and small.origin.job == "run"
    assert small.origin.via and "stages.yml" in small.origin.via[0] and "stage-small" in small.origin.via[0]
    assert "runs_on_map is the runs_on column of scripts/ci/runner_configs.yml" in small.assumptions
    assert any("matrix.part" in a and "assumed one job" in a for a in small.assumptions)
    assert "scripts/ci/runner_configs.yml" in schedule.sources


def test_a_runtime_label_resolves_to_every_label_echoed_for_it(stages):
    blackwell = by_suite(load_schedule(stages, RUNNERS), "unit-b-test-4-gpu-b200")
    assert sorted(e.labels for e in blackwell) == [("4-gpu-b200",), ("4-gpu-b200-kernel",)]
    assert all(e.profiles == ("4-gpu-b200",) for e in blackwell)
    assert any("bw_pool is 4-gpu-b200-kernel or 4-gpu-b200" in a for a in blackwell[0].assumptions)


def test_the_callee_has_its_own_env_never_the_callers(stages):
    (small,) = by_suite(load_schedule(stages, RUNNERS), "unit-a-test-1-gpu-small")
    env = small.env_map
    assert env["SGLANG_IS_IN_CI"] == "true" and env["STAGE_NAME"] == "unit-a-test-1-gpu-small"
    assert "CALLER_ONLY" not in env


def test_gates_follow_the_calling_workflows_triggers(stages):
    (small,) = by_suite(load_schedule(stages, RUNNERS), "unit-a-test-1-gpu-small")
    assert set(small.gates) == {Gate.ALWAYS, Gate.SCHEDULE}


GATED = """on:
  pull_request:
  schedule:
    - cron: "0 0 * * *"
  workflow_dispatch:
jobs:
  nightly-only:
    if: github.event_name == 'schedule'
    runs-on: 4-gpu-b200
    steps:
      - run: python3 run_suite.py --hw cuda --suite nightly-4-gpu-b200 --nightly
  labelled:
    if: contains(github.event.pull_request.labels.*.name, 'run-b200')
    runs-on: 4-gpu-b200
    steps:
      - run: python3 run_suite.py --hw cuda --suite label-suite
  never:
    if: false
    runs-on: 4-gpu-b200
    steps:
      - run: python3 run_suite.py --hw cuda --suite dead-suite
  dispatch-only:
    if: ${{ github.event_name == 'workflow_dispatch' }}
    runs-on: 4-gpu-b200
    steps:
      - if: false
        run: python3 run_suite.py --hw cuda --suite dead-step
      - run: python3 run_suite.py --hw cuda --suite by-hand
"""


def test_job_conditions_are_evaluated_per_trigger_event(tmp_path):
    schedule = load_schedule(repo(tmp_path, {".github/workflows/g.yml": GATED}), RUNNERS)
    gates = {e.selection.suite: set(e.gates) for e in schedule.entries}
    assert gates == {
        "nightly-4-gpu-b200": {Gate.SCHEDULE},
        "label-suite": {Gate.LABEL, Gate.SCHEDULE, Gate.MANUAL},
        "by-hand": {Gate.MANUAL},
    }


def test_a_workflow_called_from_a_scheduled_one_is_gated_schedule(tmp_path):
    files = {
        ".github/workflows/cron.yml": "on:\n  schedule:\n    - cron: '1 2 * * *'\njobs:\n  call:\n    uses: ./.github/workflows/_n.yml\n",
        ".github/workflows/_n.yml": (
            "on: workflow_call\njobs:\n  n:\n    runs-on: 8-gpu-h200\n    steps:\n"
            "      - run: python3 run_suite.py --hw cuda --suite nightly-8-gpu-h200 --nightly\n"
        ),
    }
    (entry,) = load_schedule(repo(tmp_path, files), RUNNERS).entries
    assert entry.gates == (Gate.SCHEDULE,) and entry.selection.nightly


MATRIX = """on: push
jobs:
  m:
    runs-on: ${{ matrix.runner }}
    strategy:
      matrix:
        runner: [1-gpu-h100, 4-gpu-b200]
        suite: [s-a, s-b]
        exclude:
          - runner: 1-gpu-h100
            suite: s-b
        include:
          - runner: 4-gpu-b200
            suite: s-b
            extra: "--nightly"
          - runner: 8-gpu-h200
            suite: s-c
    steps:
      - run: python3 run_suite.py --suite ${{ matrix.suite }} ${{ matrix.extra }}
"""


def test_matrix_include_and_exclude(tmp_path):
    schedule = load_schedule(repo(tmp_path, {".github/workflows/m.yml": MATRIX}), RUNNERS)
    found = {(e.selection.suite, e.labels[0], e.selection.nightly) for e in schedule.entries}
    assert found == {
        ("s-a", "1-gpu-h100", False),
        ("s-a", "4-gpu-b200", False),
        ("s-b", "4-gpu-b200", True),
        ("s-c", "8-gpu-h200", False),
    }


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ('bash -c "source venv/bin/activate && cd test && python3 run_suite.py --hw cpu --suite a"', [("a", "test", {})]),
        (
            "docker exec -w /x box bash -c 'cd /src/test && python3 run_suite.py --suite b'",
            [("b", "/src/test", {CONTAINER: marker(ContainerCall(kind="exec", name="box", shell="bash"))})],  # read by the walker
        ),
        ("IS_BLACKWELL=1 python3 run_suite.py --suite c", [("c", ".", {"IS_BLACKWELL": "1"})]),
        ("cd test\nenv A=1 timeout 600 python3 run_suite.py --suite d || status=$?", [("d", "test", {"A": "1"})]),
        ("uv run python test/run_suite.py --suite e; echo done", [("e", ".", {})]),
        ("if python3 run_suite.py --suite f; then echo ok; fi", [("f", ".", {})]),
        ("# python3 run_suite.py --suite g\necho run_suite.py", []),
    ],
)
def test_command_lines_reach_the_readers(script, expected):
    class Recorder:
        keywords = ("run_suite.py",)

        def __init__(self) -> None:
            self.seen: list[tuple[str, str, dict[str, str]]] = []

        def selections(self, words: Sequence[str], context: StepContext) -> Iterable[Selection]:
            if "--suite" in words:
                self.seen.append((words[words.index("--suite") + 1], context.working_dir, dict(context.env)))
            return ()

    recorder = Recorder()
    for command in commands(script, ".", recorder.keywords):
        context = StepContext(working_dir=command.working_dir, env=dict(command.env), origin=None)  # type: ignore[arg-type]
        recorder.selections(command.words, context)
    assert recorder.seen == expected


def test_an_unresolvable_suite_is_an_unread_job_not_a_silent_drop(tmp_path):
    text = "on: push\njobs:\n  j:\n    runs-on: 1-gpu-h100\n    steps:\n      - run: python3 run_suite.py --suite ${{ github.event.inputs.s }}\n"
    schedule = load_schedule(repo(tmp_path, {".github/workflows/w.yml": text}), RUNNERS)
    assert not schedule.entries
    (unread,) = schedule.unread
    assert "github.event.inputs.s" in unread.reason and unread.origin.job == "j"


def test_labels_no_profile_knows_are_listed_with_the_nearest(tmp_path):
    text = "on: push\njobs:\n  j:\n    runs-on: 4-gpu-b20\n    steps:\n      - run: python3 run_suite.py --suite x\n"
    schedule = load_schedule(repo(tmp_path, {".github/workflows/w.yml": text}), RUNNERS)
    (unknown,) = schedule.unknown_labels
    assert unknown.label == "4-gpu-b20" and "4-gpu-b200" in unknown.nearest
    assert schedule.entries[0].profiles == ()


def test_former_labels_resolve_to_the_profile_and_say_so(tmp_path):
    text = "on: push\njobs:\n  j:\n    runs-on: 1-gpu-runner\n    steps:\n      - run: python3 run_suite.py --suite x\n"
    (entry,) = load_schedule(repo(tmp_path, {".github/workflows/w.yml": text}), RUNNERS).entries
    assert entry.profiles == ("1-gpu-h100",)
    assert "1-gpu-runner is a former label of 1-gpu-h100" in entry.assumptions


def test_reader_list_is_injectable(tmp_path):
    class Everything:
        def selections(self, words: Sequence[str], context: StepContext) -> Iterable[Selection]:
            return (SuiteSelection(suite=words[0], hw=None, nightly=False),)

    text = "on: push\njobs:\n  j:\n    runs-on: cpu-box\n    steps:\n      - run: make check\n"
    schedule = read_github(repo(tmp_path, {".github/workflows/w.yml": text}), [Everything()], RUNNERS)
    assert [e.selection.suite for e in schedule.entries] == ["make"]


def test_workflows_are_found_above_the_audited_path(stages):
    (stages / "test" / "registered").mkdir(parents=True)
    assert find_workflows(stages / "test" / "registered") == stages.resolve()
    assert find_workflows(stages.parent) is None


def test_the_schedule_cache_gives_back_the_same_schedule_and_ignores_an_edited_file(stages, tmp_path):
    cache = tmp_path / "cache"
    first = load_schedule(stages, RUNNERS, cache_dir=cache)
    (stored,) = cache.glob("schedule-*.json")
    assert load_schedule(stages, RUNNERS, cache_dir=cache) == first
    stored.write_text(stored.read_text().replace("unit-a-test-1-gpu-small", "planted-suite"))
    again = load_schedule(stages, RUNNERS, cache_dir=cache)
    assert again == first and not by_suite(again, "planted-suite")
    (stages / ".github" / "workflows" / "_stage.yml").write_text(STAGE.replace("--hw cuda", "--hw cpu"))
    changed = load_schedule(stages, RUNNERS, cache_dir=cache)
    assert {e.selection.hw for e in changed.entries} == {"cpu"}


@pytest.mark.parametrize("plant", ["deep", "fifo"])
def test_a_hostile_schedule_cache_file_is_a_miss(stages, tmp_path, plant):
    cache = tmp_path / "cache"
    first = load_schedule(stages, RUNNERS, cache_dir=cache)
    (stored,) = cache.glob("schedule-*.json")
    stored.unlink()
    if plant == "deep":  # json.loads recurses once per level: RecursionError, not ValueError
        stored.write_text("[" * 200_000 + "]" * 200_000)
    else:  # a reader-less FIFO must not block the audit, and the refused rewrite over it costs only the cache
        os.mkfifo(stored)
    assert load_schedule(stages, RUNNERS, cache_dir=cache) == first
