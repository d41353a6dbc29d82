"""Verdicts per test: what each CI command leaves out, conftest opt-ins, tests only unread jobs may pick, and the
reason given for every test left undetermined."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.render import to_json, to_markdown, to_text

Audit = Callable[..., PytestAuditReport]

THREE_TESTS = """
import pytest

class TestQueue:
    def test_push(self):
        pass

    def test_pop(self):
        pass

@pytest.mark.heavy
def test_bulk_load():
    pass
"""


def _never(report: PytestAuditReport) -> dict[str, str]:
    """Per-test never-runs findings: node id -> reason."""
    return {f.finding.scope: f.finding.message for f in report.of_kind(GuardFindingKind.NEVER_RUNS) if "::" in f.finding.scope}


@pytest.mark.parametrize(
    ("command", "left_out", "said"),
    [
        pytest.param("pytest tests -k 'not bulk'", {"test_bulk_load"}, "-k 'not bulk'", id="keyword"),
        pytest.param("pytest tests -m 'not heavy'", {"test_bulk_load"}, "-m 'not heavy'", id="marker"),
        pytest.param(
            "pytest tests --deselect tests/test_q.py::TestQueue::test_pop", {"TestQueue::test_pop"}, "--deselect", id="deselect"
        ),
        pytest.param(
            "pytest tests/test_q.py::TestQueue::test_push",
            {"TestQueue::test_pop", "test_bulk_load"},
            "names only the node ids tests/test_q.py::TestQueue::test_push",
            id="node-id",
        ),
        pytest.param("pytest tests/test_q.py::TestQueue", {"test_bulk_load"}, "names only the node ids", id="class-node-id"),
    ],
)
def test_a_test_every_command_leaves_out_never_runs(
    audit: Audit, schedule: Callable[..., str], command: str, left_out: set[str], said: str
) -> None:
    report = audit({"tests/test_q.py": THREE_TESTS}, schedule(("1-gpu-h100", command)))
    never = _never(report)
    assert set(never) == {f"tests/test_q.py::{t}" for t in left_out}
    assert all(said in why and "deselected by every CI command that collects its file" in why for why in never.values())
    assert all(f.guard_class.value == "selection" for f in report.of_kind(GuardFindingKind.NEVER_RUNS))
    assert report.scheduled_tests == 3 - len(left_out) and report.undetermined == 0
    assert not report.of_kind(GuardFindingKind.UNSCHEDULED) and report.exit_code == 1


def test_a_test_another_command_runs_is_no_finding(audit: Audit, schedule: Callable[..., str]) -> None:
    plan = schedule(("1-gpu-h100", "pytest tests -m 'not heavy'"), ("8-gpu-h200", "pytest tests -m heavy"))
    report = audit({"tests/test_q.py": THREE_TESTS}, plan)
    assert not report.findings and report.scheduled_tests == 3


def test_every_test_of_a_file_left_out_is_a_file_that_never_runs(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {"tests/test_q.py": THREE_TESTS, "tests/test_r.py": "def test_r():\n    pass\n"}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests -k 'test_r'")))
    whole = [f.finding for f in report.of_kind(GuardFindingKind.NEVER_RUNS) if not f.finding.subject]
    assert [f.path for f in whole] == ["tests/test_q.py"]
    assert "are deselected by every CI command that collects the file" in whole[0].message


RUN_PERF = """
import pytest

def pytest_addoption(parser):
    parser.addoption("--run-perf", action="store_true", default=False, help="run the perf tests")

def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-perf"):
        return
    skip_perf = pytest.mark.skip(reason="pass --run-perf")
    for item in items:
        if "perf" in item.keywords:
            item.add_marker(skip_perf)
"""
PERF_TESTS = "import pytest\n\n@pytest.mark.perf\ndef test_latency():\n    pass\n\ndef test_basic():\n    pass\n"


def test_a_perf_marker_no_job_opts_into_never_runs(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {"tests/conftest.py": RUN_PERF, "tests/test_perf.py": PERF_TESTS}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests")))
    never = _never(report)
    assert set(never) == {"tests/test_perf.py::test_latency"}
    assert "config.getoption('--run-perf') is False" in never["tests/test_perf.py::test_latency"]
    (finding,) = report.of_kind(GuardFindingKind.NEVER_RUNS)
    assert finding.guard_class.value == "command-line option" and "pass the option" in finding.finding.hint
    assert report.undetermined == 0 and not report.of_kind(GuardFindingKind.SILENT_SKIP)


def test_a_job_that_passes_the_option_runs_the_perf_test(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {"tests/conftest.py": RUN_PERF, "tests/test_perf.py": PERF_TESTS}
    opted = audit(files, schedule(("1-gpu-h100", "pytest tests --run-perf")))
    assert not opted.findings and opted.undetermined == 0 and opted.scheduled_tests == 2
    # Given through the configuration's addopts: the same.
    files["pytest.ini"] = "[pytest]\naddopts = --run-perf\n"
    through_addopts = audit(files, schedule(("1-gpu-h100", "pytest tests")))
    assert not through_addopts.findings and through_addopts.undetermined == 0


ENV_OPT_IN = """
import os
import pytest

def pytest_runtest_setup(item):
    if item.get_closest_marker("nightly") and os.environ.get("RUN_NIGHTLY") != "1":
        pytest.skip("set RUN_NIGHTLY=1")
"""


def test_a_marker_opted_into_by_a_variable_no_job_sets_never_runs(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {
        "tests/conftest.py": ENV_OPT_IN,
        "tests/test_n.py": "import pytest\n\n@pytest.mark.nightly\ndef test_soak():\n    pass\n",
    }
    report = audit(files, schedule(("1-gpu-h100", "pytest tests")))
    assert set(_never(report)) == {"tests/test_n.py::test_soak"}
    set_it = schedule(("1-gpu-h100", "pytest tests"), env='env = { RUN_NIGHTLY = "1" }')
    assert not audit(files, set_it).findings


DESELECTING_HOOK = """
import pytest

def pytest_addoption(parser):
    group = parser.getgroup("perf")
    group.addoption("--run-perf", action="store_true")

def pytest_collection_modifyitems(config, items):
    if config.getoption("run_perf"):
        return
    dropped = [item for item in items if item.get_closest_marker("perf")]
    config.hook.pytest_deselected(items=dropped)
    items[:] = [item for item in items if not item.get_closest_marker("perf")]
"""


def test_a_hook_that_deselects_unless_opted_in(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {"tests/conftest.py": DESELECTING_HOOK, "tests/test_perf.py": PERF_TESTS}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests")))
    never = _never(report)
    assert set(never) == {"tests/test_perf.py::test_latency"} and "deselects it" in never["tests/test_perf.py::test_latency"]


def test_a_hook_that_changes_the_tests_in_a_way_not_read_leaves_them_undetermined(
    audit: Audit, schedule: Callable[..., str]
) -> None:
    hook = "def pytest_collection_modifyitems(config, items):\n    del items[3:]\n"
    report = audit({"tests/conftest.py": hook, "tests/test_perf.py": PERF_TESTS}, schedule(("1-gpu-h100", "pytest tests")))
    assert report.undetermined == 2 and not report.findings
    reorder = "def pytest_collection_modifyitems(config, items):\n    items[:] = sorted(items, key=lambda i: i.name)\n"
    assert audit({"tests/conftest.py": reorder}, schedule(("1-gpu-h100", "pytest tests"))).undetermined == 0


PICKED = """on: [pull_request]
jobs:
  changed:
    runs-on: {runner}
    steps:
      - run: pytest $(git diff --name-only origin/main -- tests | grep test_)
"""
BLACKWELL = """
import pytest
import torch

@pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 10, reason="sm100 only")
def test_new_arch():
    pass

def test_anywhere():
    pass
"""


BY_SCRIPT = {
    ".github/workflows/ci.yml": PICKED.format(runner="1-gpu-h100").replace(
        "pytest $(git diff --name-only origin/main -- tests | grep test_)", "bash ci/changed.sh"
    ),
    "ci/changed.sh": "set -e\npytest $(git diff --name-only origin/main -- tests | grep test_)\n",
}


@pytest.mark.parametrize(
    "ci",
    [
        pytest.param({".github/workflows/ci.yml": PICKED.format(runner="1-gpu-h100")}, id="a-step"),
        pytest.param(BY_SCRIPT, id="a-script-the-step-runs"),
    ],
)
def test_a_test_skipped_on_every_runner_any_job_uses_never_runs_though_the_picking_job_is_unread(
    audit: Audit, ci: dict[str, str]
) -> None:
    report = audit({"tests/test_b.py": BLACKWELL, **ci})
    never = _never(report)
    assert set(never) == {"tests/test_b.py::test_new_arch"}
    assert "any CI job can send it to" in never["tests/test_b.py::test_new_arch"]
    # The guardless test may or may not be picked: undetermined, with the job that may pick it as the reason.
    (doubt,) = report.undetermined_tests
    assert doubt.test == "tests/test_b.py::test_anywhere" and doubt.cause.value == "unread"
    assert "only a CI job not read may run it (" in doubt.reason and "known only at run time" in doubt.reason


def test_an_unread_job_on_an_unknown_runner_leaves_the_test_undetermined(audit: Audit) -> None:
    report = audit({"tests/test_b.py": BLACKWELL, ".github/workflows/ci.yml": PICKED.format(runner="[self-hosted, rack-7]")})
    assert not _never(report) and report.unread_only == 2


IMPORTS_CUTLASS = """
import pytest

cutlass = pytest.importorskip("cutlass")

def test_gemm():
    pass

def test_conv():
    pass
"""


def test_an_undetermined_test_names_every_runner_it_is_undetermined_on(audit: Audit, schedule: Callable[..., str]) -> None:
    report = audit({"tests/test_k.py": IMPORTS_CUTLASS}, schedule(("1-gpu-h100", "pytest tests"), ("4-gpu-b200", "pytest tests")))
    listed = {t["test"]: t for t in json.loads(to_json(report))["undetermined_tests"]}
    assert sorted(listed["tests/test_k.py::test_gemm"]["runners"]) == ["1-gpu-h100", "4-gpu-b200"]


def test_every_undetermined_test_is_listed_with_its_reason(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {"tests/test_k.py": IMPORTS_CUTLASS, "tests/test_p.py": "def test_p():\n    pass\n"}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests")))
    assert report.undetermined == 2
    doc = json.loads(to_json(report))
    listed = {t["test"]: t for t in doc["undetermined_tests"]}
    assert set(listed) == {"tests/test_k.py::test_gemm", "tests/test_k.py::test_conv"}
    gemm = listed["tests/test_k.py::test_gemm"]
    assert gemm["path"] == "tests/test_k.py" and gemm["line"] == 5 and gemm["runner"] == "1-gpu-h100"
    assert gemm["reason"].startswith("guard reads whether cutlass is installed") and gemm["cause"] == "guard"
    assert doc["assumptions"] and "2 tests are undetermined" in doc["assumptions"][-1]
    assert gemm["runners"] == ["1-gpu-h100"]
    text = to_text(report)
    assert "undetermined tests by reason (2 tests, 1 reasons" in text
    assert "  2 tests: guard reads whether cutlass is installed" in text
    assert "| 2 | guard reads whether cutlass is installed" in to_markdown(report)


def test_the_text_summary_of_undetermined_tests_is_bounded(audit: Audit, schedule: Callable[..., str]) -> None:
    """Thirty modules each missing another package: thirty reasons, eight shown, the rest counted on one line."""
    files = {f"tests/test_m{i}.py": f"import pytest\npytest.importorskip('pkg{i}')\ndef test_m():\n    pass\n" for i in range(30)}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests")))
    text = to_text(report)
    reasons = [line for line in text.splitlines() if line.startswith("  1 test: guard reads whether pkg")]
    assert len(reasons) == 8 and "  ... 22 more tests under 22 other reasons" in text
    assert len(json.loads(to_json(report))["undetermined_tests"]) == 30


def test_a_selection_doubt_is_named_as_the_reason(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {"t/test_m.py": "def test_plain():\n    pass\n", "t/conftest.py": "import os\ncollect_ignore = os.listdir('x')\n"}
    report = audit(files, schedule(("1-gpu-h100", "pytest t")))
    (doubt,) = report.undetermined_tests
    assert doubt.cause.value == "selection" and doubt.runner is None
    assert "t/conftest.py sets collect_ignore in a way not read" in doubt.reason


def test_unscheduled_files_are_counted_as_files(tmp_path: Path, audit: Audit, schedule: Callable[..., str]) -> None:
    files = {f"other/test_{i}.py": "def test_x():\n    pass\n" for i in range(3)}
    report = audit({**files, "tests/test_a.py": "def test_a():\n    pass\n"}, schedule(("1-gpu-h100", "pytest tests")))
    text = to_text(report)
    assert "unscheduled: 3 test files no CI entry selects (3 files)" in text and "unknown 3" not in text


def test_a_missing_folder_is_said_to_be_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matrix.cli.main import main

    assert main(["pytest-audit", str(tmp_path / "nosuchdir")]) == 2
    err = capsys.readouterr().err
    assert "nosuchdir does not exist" in err and ".github/workflows" not in err


def test_each_fix_text_applies_to_its_case(audit: Audit, schedule: Callable[..., str]) -> None:
    files = {
        "tests/test_arch.py": "import pytest, torch\n\n@pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 10, "
        "reason='sm100')\ndef test_arch():\n    pass\n",
        "tests/test_env.py": "import os, pytest\n\n@pytest.mark.skipif(not os.environ.get('WITH_NCCL'), reason='nccl')\n"
        "def test_env():\n    pass\n",
        "tests/test_off.py": "import pytest\n\n@pytest.mark.skip(reason='flaky')\ndef test_off():\n    pass\n\ndef test_on():\n    pass\n",
        "tests/test_q.py": THREE_TESTS,
        "other/test_u.py": "def test_u():\n    pass\n",
    }
    report = audit(files, schedule(("1-gpu-h100", "pytest tests -k 'not bulk'")))
    hints = {f.finding.scope: f.finding.hint for f in report.findings}
    assert hints["tests/test_arch.py::test_arch"].startswith("schedule it on a runner whose GPU the guard admits")
    assert hints["tests/test_arch.py"].startswith("schedule the file on a runner whose GPU the guard admits")
    assert hints["tests/test_env.py::test_env"].startswith("set the variable the guard reads")
    assert "remove the skip" in hints["tests/test_off.py::test_off"]
    assert hints["tests/test_q.py::test_bulk_load"].startswith("drop the deselection")
    assert hints["other/test_u.py"].startswith("add the file to what a CI job runs")
    assert not any("where the guard is false" in h for h in hints.values())


def test_a_node_id_that_names_no_test_stops_the_command(audit: Audit, schedule: Callable[..., str]) -> None:
    """pytest reports "not found" and runs nothing: every file the command names never runs through it."""
    files = {"tests/test_q.py": THREE_TESTS, "tests/test_r.py": "def test_r():\n    pass\n"}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests/test_q.py::TestQueue::test_peek tests/test_r.py")))
    never = {f.finding.scope: f.finding.message for f in report.of_kind(GuardFindingKind.NEVER_RUNS)}
    assert set(never) == {"tests/test_q.py", "tests/test_r.py"} and report.scheduled_tests == 0
    assert "tests/test_q.py::TestQueue::test_peek: not found (no test matches this node id)" in never["tests/test_r.py"]
    classes = {f.guard_class.value for f in report.of_kind(GuardFindingKind.NEVER_RUNS)}
    assert classes == {"collection error"}


def test_an_option_declared_where_pytest_loads_it_late_keeps_its_default(audit: Audit, schedule: Callable[..., str]) -> None:
    """A conftest below the command's start folders is loaded while collecting: its option has its default there."""
    files = {"tests/perf/conftest.py": RUN_PERF, "tests/perf/test_perf.py": PERF_TESTS}
    report = audit(files, schedule(("1-gpu-h100", "pytest tests")))
    assert set(_never(report)) == {"tests/perf/test_perf.py::test_latency"}


CONFCUTDIR_JOB = """on: [pull_request]
jobs:
  cluster:
    runs-on: ubuntu-latest
    steps:
      - run: |
          cd gateway
          pytest e2e/cluster/ --confcutdir=e2e/cluster -v
"""


def test_a_confcutdir_of_the_checkout_is_read_where_the_command_runs(audit: Audit) -> None:
    """pytest checks that --confcutdir is a folder where it runs (the job's folder, not the audit's): the command is
    read, so it selects only its own folder, and a test elsewhere is not called a skip on its runner."""
    files = {
        ".github/workflows/ci.yml": CONFCUTDIR_JOB,
        "gateway/e2e/cluster/test_pods.py": "def test_pods():\n    pass\n",
        "kernels/test_gpu.py": "import pytest, torch\n\n@pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')\n"
        "def test_gpu():\n    pass\n",
    }
    report = audit(files)
    assert report.scheduled_tests == 1 and report.undetermined == 0
    assert {f.finding.scope for f in report.findings} == {"kernels/test_gpu.py"}  # unscheduled, not a silent skip
    missing = dict(
        files, **{".github/workflows/ci.yml": CONFCUTDIR_JOB.replace("--confcutdir=e2e/cluster", "--confcutdir=e2e/gone")}
    )
    refused = audit(missing)
    assert refused.undetermined >= 1 and not refused.of_kind(GuardFindingKind.SILENT_SKIP)
