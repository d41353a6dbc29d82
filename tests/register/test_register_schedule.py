"""`register` writes only the modules a scheduled job runs, audited as `specmatrix guards` audits them."""

from __future__ import annotations

from pathlib import Path

from matrix.cli.main import main
from matrix.guards.model import GuardFindingKind
from matrix.registered_suite.tree import audit_tree
from matrix.schedule.load import load_schedule

# A CI that runs the base-b stage on the B200 and the H100 pool only; the 8-GPU B200 job runs another stage.
WORKFLOW = """
on: pull_request
jobs:
  b200:
    runs-on: 4-gpu-b200
    steps:
      - run: python3 test/run_suite.py --hw cuda --suite base-b-test-4-gpu-b200
  h100:
    runs-on: 1-gpu-h100
    steps:
      - run: python3 test/run_suite.py --hw cuda --suite base-b-test-1-gpu-large
  big:
    runs-on: 8-gpu-b200
    steps:
      - run: python3 test/run_suite.py --hw cuda --suite base-c-test-8-gpu-b200
"""


def repo(tmp_path: Path) -> Path:
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "pr.yml").write_text(WORKFLOW)
    return tmp_path


def test_only_scheduled_runner_configs_are_written_and_the_rest_are_named(tmp_path, capsys, runners):
    root = repo(tmp_path)
    out = root / "test" / "registered" / "specmatrix"  # not there yet: the schedule is found above it
    assert main(["register", "--out", str(out)]) == 0
    written = sorted(p.name for p in out.iterdir())
    assert written == ["test_specmatrix_1_gpu_large.py", "test_specmatrix_4_gpu_b200.py"]
    err = capsys.readouterr().err
    assert (
        "left out 8-gpu-b200 (test_specmatrix_8_gpu_b200.py): unscheduled: no workflow job runs suite base-b-test-8-gpu-b200"
        in err
    )
    assert "left out 4-gpu-gb300" in err
    # What was written is clean by the guard audit on the same schedule.
    report = audit_tree(out, runners, schedule=load_schedule(root, runners))
    assert [f for f in report.findings if f.severity in ("error", "warning")] == []
    assert set(report.runners) == {"1-gpu-h100", "4-gpu-b200"}
    assert not report.of_kind(GuardFindingKind.UNSCHEDULED)


def test_workflows_elsewhere_and_no_workflows(tmp_path, capsys):
    root = repo(tmp_path / "ci")
    assert (
        main(
            [
                "register",
                "--out",
                str(tmp_path / "a"),
                "--workflows",
                str(root),
                "--runner",
                "8-gpu-b200",
                "--runner",
                "4-gpu-b200",
            ]
        )
        == 0
    )
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["test_specmatrix_4_gpu_b200.py"]
    assert main(["register", "--out", str(root / "b"), "--no-workflows", "--runner", "8-gpu-b200"]) == 0
    assert [p.name for p in (root / "b").iterdir()] == ["test_specmatrix_8_gpu_b200.py"]


def test_nothing_scheduled_is_exit_2(tmp_path, capsys):
    root = repo(tmp_path)
    assert main(["register", "--out", str(root / "out"), "--runner", "8-gpu-b200"]) == 2
    assert "nothing to write: no module is run by a scheduled job" in capsys.readouterr().err
    assert not (root / "out").exists() or not any((root / "out").iterdir())
