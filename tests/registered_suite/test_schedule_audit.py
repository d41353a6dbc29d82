"""The audit on a schedule read from workflows: which suite runs on which runner label, --nightly or not, which env."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.errors import ConfigError
from matrix.core.loader import load_runners
from matrix.guards.model import GuardFindingKind
from matrix.registered_suite import audit_tree
from matrix.schedule.load import load_schedule as _load

K = GuardFindingKind
WORKFLOWS = Path(__file__).parent.parent / "guards" / "fixture_workflows"
RUNNERS = load_runners()


def load_schedule(root: Path):
    return _load(root, RUNNERS)


def parse_workflow(text: str, tmp: Path):
    folder = tmp / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "w.yml").write_text(text, encoding="utf-8")
    return load_schedule(tmp).entries


def test_suites_runners_nightly_and_env_are_read():
    schedule = load_schedule(WORKFLOWS)
    runs = {(r.selection.suite, r.selection.nightly, r.labels) for r in schedule.entries}
    assert runs == {
        ("base-b-test-1-gpu-large", False, ("1-gpu-h100",)),
        ("base-b-test-4-gpu-b200", False, ("4-gpu-b200",)),
        ("base-b-test-8-gpu-b200", False, ("8-gpu-b200",)),
        ("nightly-4-gpu-b200", True, ("4-gpu-b200",)),
    }
    b200 = next(r for r in schedule.entries if r.selection.suite == "base-b-test-4-gpu-b200")
    assert dict(b200.env) == {"SGLANG_IS_IN_CI": "true", "SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
    assert str(b200.origin).startswith(".github/workflows/pr-test.yml:")
    assert str(b200.origin).endswith(" job stage-b-blackwell")
    assert b200.profiles == ("4-gpu-b200",)


def test_commented_out_and_if_false_jobs_do_not_count():
    suites = {e.selection.suite for e in load_schedule(WORKFLOWS).entries}
    assert "base-b-test-1-gpu-small" not in suites  # the job is commented out
    assert "base-b-test-4-gpu-h100" not in suites  # `if: false`


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("python3 run_suite.py --suite a", [("a", False, None)]),
        ("python3 test/run_suite.py --hw=cuda --suite=b --nightly", [("b", True, "cuda")]),
        ("cd test && python3 run_suite.py --suite c \\\n  --nightly --timeout-per-file 60", [("c", True, None)]),
        ("# python3 run_suite.py --suite d", []),
        ("python3 run_suite.py --suite ${{ inputs.suite }}", []),  # unread, listed as such
        ("python3 other.py --suite e", []),
    ],
)
def test_run_suite_command_lines(script, expected, tmp_path):
    text = f"on: push\njobs:\n  j:\n    runs-on: x\n    steps:\n      - run: {script!r}\n"
    found = [(r.selection.suite, r.selection.nightly, r.selection.hw) for r in parse_workflow(text, tmp_path)]
    assert found == expected


def test_registrations_no_job_selects_in_both_nightly_directions(shared_suite, runners):
    report = audit_tree(shared_suite, runners, schedule=load_schedule(WORKFLOWS))
    # Unscheduled where the file runs nowhere, dead where another registration still runs it: the same reasons.
    reasons = {f.path: f.message for f in (*report.of_kind(K.UNSCHEDULED), *report.of_kind(K.DEAD_REGISTRATION))}
    assert (
        "nightly=True, but suite base-b-test-4-gpu-b200 only runs without --nightly"
        in reasons["scheduling/test_nightly_flag_on_pr_suite.py"]
    )
    assert (
        "nightly=False, but suite nightly-4-gpu-b200 only runs with --nightly"
        in reasons["scheduling/test_nightly_without_flag.py"]
    )
    assert "no workflow job runs suite base-b-test-1-gpu-small" in reasons["interprocedural/test_shadowed_predicate.py"]
    assert "scheduling/test_nightly_with_flag.py" not in reasons


def test_workflow_env_decides_ci_guards(shared_suite, runners, tmp_path):
    folder = tmp_path / "wf"
    (folder / ".github" / "workflows").mkdir(parents=True)
    (folder / ".github" / "workflows" / "ci.yml").write_text(
        "on: push\njobs:\n  a:\n    runs-on: 1-gpu-h100\n    env:\n      SGLANG_IS_IN_CI: 'false'\n    steps:\n"
        "      - run: python3 run_suite.py --suite base-b-test-1-gpu-large\n",
        encoding="utf-8",
    )
    report = audit_tree(shared_suite / "ci_facts", runners, schedule=load_schedule(folder))
    # is_in_ci() is false where the job says so: the class runs on the H100 job.
    assert not [f for f in report.findings if f.scope.endswith("TestLongContextSweep")]


@pytest.mark.parametrize(
    ("text", "message"),
    [("jobs: [unclosed", "malformed YAML"), ("- a\n- b\n", "must be a mapping"), ("jobs: 3\n", "jobs must be a mapping")],
)
def test_bad_workflow_is_exit_2_with_one_line(capsys, tmp_path, shared_suite, text, message):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "bad.yml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_schedule(tmp_path)
    code = main(["guards", str(shared_suite), "--workflows", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
