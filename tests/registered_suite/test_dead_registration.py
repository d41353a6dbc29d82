"""An unscheduled registration of a file that still runs through another one is dead (a warning), not lost runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.core.loader import load_runners
from matrix.guards.model import GuardFindingKind as K
from matrix.registered_suite import audit_tree
from matrix.schedule.load import load_schedule

RUNNERS = load_runners()
WORKFLOW = """
on: pull_request
jobs:
  blackwell:
    runs-on: 4-gpu-b200
    steps:
      - run: python3 test/run_suite.py --hw cuda --suite base-b-test-4-gpu-b200
"""


def write(root: Path, rel: str, registrations: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    body = f"from sglang.test.ci.ci_register import register_cuda_ci\n{registrations}\n\ndef test_it():\n    assert True\n"
    path.write_text(textwrap.dedent(body), encoding="utf-8")


def test_dead_on_the_same_runner_elsewhere_and_lost(tmp_path):
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "w.yml").write_text(WORKFLOW)
    suite = tmp_path / "test"
    b200 = 'register_cuda_ci(est_time=9, stage="base-b", runner_config="4-gpu-b200")\n'
    write(suite, "test_same_runner.py", b200 + 'register_cuda_ci(est_time=9, suite="base-b-test-4-gpu-b200", nightly=True)\n')
    write(suite, "test_other_runner.py", b200 + 'register_cuda_ci(est_time=9, stage="base-b", runner_config="1-gpu-large")\n')
    write(suite, "test_runs_nowhere.py", 'register_cuda_ci(est_time=9, stage="base-b", runner_config="1-gpu-large")\n')
    report = audit_tree(suite, RUNNERS, schedule=load_schedule(tmp_path, RUNNERS))
    got = {(f.path, f.kind): f for f in report.findings if f.kind in (K.UNSCHEDULED, K.DEAD_REGISTRATION)}
    assert set(got) == {
        ("test_same_runner.py", K.DEAD_REGISTRATION),
        ("test_other_runner.py", K.DEAD_REGISTRATION),
        ("test_runs_nowhere.py", K.UNSCHEDULED),
    }
    assert "on the same runner (4-gpu-b200)" in got[("test_same_runner.py", K.DEAD_REGISTRATION)].message
    assert "on 4-gpu-b200 (not on 1-gpu-h100)" in got[("test_other_runner.py", K.DEAD_REGISTRATION)].message
    assert not got[("test_same_runner.py", K.DEAD_REGISTRATION)].failing
    assert got[("test_runs_nowhere.py", K.UNSCHEDULED)].failing


def test_a_file_another_platform_runs_is_dead_not_lost(tmp_path):
    workflow = WORKFLOW + (
        "  rocm:\n    runs-on: linux-mi325-1gpu-sglang\n    steps:\n"
        "      - run: python3 test/run_suite.py --hw amd --suite stage-r-rocm-small\n"
    )
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "w.yml").write_text(workflow)
    suite = tmp_path / "test"
    rocm = "from sglang.test.ci.ci_register import register_amd_ci\n"
    write(
        suite,
        "test_rocm_runs_it.py",
        rocm + 'register_amd_ci(est_time=9, suite="stage-r-rocm-small")\nregister_cuda_ci(est_time=9, suite="gone")\n',
    )
    write(
        suite,
        "test_rocm_unscheduled.py",
        rocm + 'register_amd_ci(est_time=9, suite="stage-r-gone")\nregister_cuda_ci(est_time=9, suite="gone")\n',
    )
    report = audit_tree(suite, RUNNERS, schedule=load_schedule(tmp_path, RUNNERS))
    got = {(f.path, f.kind): f for f in report.findings if f.kind in (K.UNSCHEDULED, K.DEAD_REGISTRATION)}
    assert set(got) == {("test_rocm_runs_it.py", K.DEAD_REGISTRATION), ("test_rocm_unscheduled.py", K.UNSCHEDULED)}
    message = got[("test_rocm_runs_it.py", K.DEAD_REGISTRATION)].message
    assert "register_amd_ci (suite stage-r-rocm-small) on linux-mi325-1gpu-sglang" in message
