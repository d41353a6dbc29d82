"""Local actions a step uses (`uses: ./.github/actions/x`): a composite action's steps are read as the job's own, with
the step's `with:` inputs (else the defaults) and the action's folder; another kind of local action, or one that
cannot be read, is a job not read. And a Python script that starts pytest itself is a job not read, never nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.runner_files import load_runners
from matrix.schedule.load import load_schedule

TEST = "def test_slow_and_fast():\n    pass\n"  # selected by -k slow and by -k fast
WORKFLOW = """on: [pull_request]
jobs:
  gpu:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: run the suite
        uses: ./.github/actions/suite{caller}
"""
COMPOSITE = """name: suite
inputs:
  filter:
    description: a -k expression
    default: slow
  folder:
    default: tests/gpu
runs:
  using: composite
  steps:
    - shell: bash
      run: echo preparing
    - shell: bash
      run: |
        python -m pytest ${{{{ inputs.folder }}}} -k "${{{{ inputs.filter }}}}"{extra}
"""


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "repo"
    for name, text in {"tests/gpu/test_a.py": TEST, "tests/cpu/test_b.py": TEST, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _suite(tmp_path: Path, caller: str = "", action: str | None = None, more: dict[str, str] | None = None) -> Path:
    """A checkout whose workflow step calls the local action `suite` (COMPOSITE unless given) with `caller`."""
    files = {".github/workflows/ci.yml": WORKFLOW.format(caller=caller)}
    files[".github/actions/suite/action.yml"] = COMPOSITE.format(extra="") if action is None else action
    return _repo(tmp_path, {**files, **(more or {})})


def _schedule(root: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["schedule", str(root), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _audit(root: Path, capsys: pytest.CaptureFixture[str]) -> dict:
    main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    return json.loads(capsys.readouterr().out)


def test_a_composite_actions_steps_are_the_jobs_with_the_inputs_given(tmp_path, capsys):
    root = _suite(tmp_path, caller="\n        with:\n          filter: fast\n")
    doc = _schedule(root, capsys)
    (entry,) = doc["entries"]
    assert entry["selection"]["paths"] == ["tests/gpu"] and entry["selection"]["keyword"] == "fast"
    assert entry["origin"]["file"] == ".github/actions/suite/action.yml" and entry["origin"]["line"] == 15
    assert entry["origin"]["via"] == [".github/workflows/ci.yml:8"]
    assert ".github/actions/suite/action.yml" in doc["sources"]
    report = _audit(root, capsys)
    assert report["scheduled_tests"] == 1 and report["counts"]["unscheduled"]  # tests/cpu stays unscheduled


def test_an_input_not_given_takes_its_default(tmp_path, capsys):
    (entry,) = _schedule(_suite(tmp_path), capsys)["entries"]
    assert entry["selection"]["keyword"] == "slow"


def test_a_script_beside_the_action_is_followed_through_action_path(tmp_path, capsys):
    action = COMPOSITE.format(extra="\n    - shell: bash\n      run: bash ${{ github.action_path }}/more.sh")
    more = {".github/actions/suite/more.sh": "python -m pytest tests/cpu\n"}
    report = _audit(_suite(tmp_path, action=action, more=more), capsys)
    assert report["scheduled_tests"] == 2 and not report["counts"]["unscheduled"]


def test_a_false_if_on_the_calling_step_runs_none_of_its_steps(tmp_path, capsys):
    assert _schedule(_suite(tmp_path, caller="\n        if: ${{ false }}\n"), capsys)["entries"] == []


@pytest.mark.parametrize(
    ("action", "said"),
    [
        pytest.param("runs:\n  using: docker\n  image: Dockerfile\n", "runs docker (not a composite action)", id="docker"),
        pytest.param(None, "no action.yml or action.yaml", id="missing"),
        pytest.param("runs:\n  using: composite\n  steps:\n    - uses: ./.github/actions/suite\n", "uses itself", id="cycle"),
    ],
)
def test_a_local_action_not_read_leaves_the_tests_undetermined(tmp_path, capsys, action, said):
    files = {".github/workflows/ci.yml": WORKFLOW.format(caller="")}
    if action is not None:
        files[".github/actions/suite/action.yml"] = action
    report = _audit(_repo(tmp_path, files), capsys)
    assert not report["counts"]["unscheduled"] and report["undetermined_unread"] == 2
    assert any(said in u["reason"] for u in report["unread"])


def test_an_edited_action_is_read_again_through_the_schedule_cache(tmp_path):
    files = {
        ".github/workflows/ci.yml": WORKFLOW.format(caller=""),
        ".github/actions/suite/action.yml": COMPOSITE.format(extra=""),
    }
    root = _repo(tmp_path, files)
    runners = load_runners()
    from matrix.schedule.load import all_readers

    first = load_schedule(root, runners, all_readers(), cache_dir=tmp_path / "cache")
    assert [e.selection.keyword for e in first.entries] == ["slow"]
    (root / ".github/actions/suite/action.yml").write_text(COMPOSITE.format(extra="").replace("slow", "quick"), encoding="utf-8")
    again = load_schedule(root, runners, all_readers(), cache_dir=tmp_path / "cache")
    assert [e.selection.keyword for e in again.entries] == ["quick"]


LAUNCHED = """on: [pull_request]
jobs:
  gpu:
    runs-on: ubuntu-latest
    steps:
      - run: python3 "$GITHUB_WORKSPACE/tools/{script}" --target tests
"""


@pytest.mark.parametrize(
    ("script", "undetermined"),
    [
        pytest.param(
            "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'pytest', 'tests'])\n", True, id="starts-pytest"
        ),
        pytest.param("print('building the wheel')\n", False, id="builds"),
    ],
)
def test_a_python_script_that_starts_pytest_is_a_job_not_read(tmp_path, capsys, script, undetermined):
    root = _repo(tmp_path, {".github/workflows/ci.yml": LAUNCHED.format(script="run_ci.py"), "tools/run_ci.py": script})
    report = _audit(root, capsys)
    assert (report["undetermined_unread"] == 2) is undetermined
    assert bool(report["counts"]["unscheduled"]) is not undetermined


@pytest.mark.parametrize(
    ("text", "starts"),
    [
        pytest.param('"""Summarise what pytest wrote."""\nprint(1)\n', False, id="docstring"),
        pytest.param("# pytest runs elsewhere\nprint(1)\n", False, id="comment"),
        pytest.param("import pytest\nassert pytest.approx(1) == 1\n", False, id="imports-pytest-only"),
        pytest.param("import pytest, sys\nsys.exit(pytest.main(['tests']))\n", True, id="pytest-main"),
        pytest.param("from ci.pytest_runner import run_all\nrun_all()\n", True, id="runner-helper"),
        pytest.param("import subprocess\nsubprocess.run(['python3', '-m', 'pytest', 'tests'])\n", True, id="argv"),
        pytest.param("cmd = 'x'\nprint(f'python3 -m pytest {cmd} -x')\n", True, id="f-string"),
        pytest.param("def broken(:\n    pytest\n", True, id="unparsable"),
    ],
)
def test_which_scripts_start_pytest(text, starts):
    from matrix.schedule.commands.python_scripts import starts_pytest

    assert starts_pytest(text) is starts


GATED = """name: gated
inputs:
  run-gpu:
    default: 'false'
  folder:
    default: ''
runs:
  using: composite
  steps:
    - if: inputs.run-gpu == 'true'
      shell: bash
      run: python -m pytest ${{ inputs.folder || 'tests/gpu' }}
"""


@pytest.mark.parametrize(("given", "runs"), [("'true'", True), ("'false'", False), (None, False)])
def test_an_inputs_condition_and_expression_are_read_with_the_callers_values(tmp_path, capsys, given, runs):
    caller = f"\n        with:\n          run-gpu: {given}\n" if given is not None else ""
    entries = _schedule(_suite(tmp_path, caller=caller, action=GATED), capsys)["entries"]
    assert [e["selection"]["paths"] for e in entries] == ([["tests/gpu"]] if runs else [])
