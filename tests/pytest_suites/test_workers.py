"""The audit in worker processes: the same report as in one process, whatever the files' order and place."""

from __future__ import annotations

import os
import signal
from dataclasses import asdict
from pathlib import Path

import pytest

from matrix.core.runner_files import load_runners
from matrix.pytest_suites import collect, workers
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.run import AuditInput, run_audit
from tests.pytest_suites.conftest import write_tree

pytestmark = pytest.mark.skipif(not workers.can_fork(), reason="the workers are forked")

SKIPPING = "import pytest\nimport torch\n\n\n@pytest.mark.skipif(torch.cuda.device_count() < {n}, reason='gpus')\ndef test_{name}():\n    pass\n"
FILES = {
    "pytest.ini": "[pytest]\ntestpaths = tests\n",
    **{f"tests/test_{k}.py": SKIPPING.format(n=k % 3 + 1, name=f"t{k}") + "\n" * (k * 40) for k in range(9)},
    # named by a CI command outside testpaths: not in the discovery the workers start on
    "extra/test_named.py": SKIPPING.format(n=4, name="named"),
}
PLAN = '[[entry]]\njob = "j"\nlabels = ["1-gpu-h100"]\npytest = "pytest tests extra/test_named.py"\n'


def _audit(tmp_path: Path, jobs: int) -> PytestAuditReport:
    root = tmp_path / "repo"
    write_tree(root, FILES)
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    return run_audit(AuditInput(root=root, schedule_files=(plan,)), load_runners(), jobs=jobs)


def test_workers_give_the_report_of_one_process(tmp_path: Path) -> None:
    alone, shared = _audit(tmp_path, 1), _audit(tmp_path, 3)
    assert asdict(shared) == asdict(alone)
    # the file outside testpaths was collected after the schedule was read, and is judged like the others
    assert "extra/test_named.py::test_named" in {f.finding.scope for f in shared.findings}
    assert shared.files == 10 and len(shared.findings) == 14  # 7 tests skip, and their 7 files never run


def test_an_error_in_a_worker_is_raised_in_the_main_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = collect.Collector.collect

    def failing(self: collect.Collector, path: str) -> collect.TestFile:
        if path.endswith("test_4.py"):
            raise ValueError(f"planted failure on {path}")
        return real(self, path)

    monkeypatch.setattr(collect.Collector, "collect", failing)
    with pytest.raises(ValueError, match=r"planted failure on tests/test_4\.py"):
        _audit(tmp_path, 2)


@pytest.fixture
def dying(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker that takes tests/test_4.py is killed (SIGKILL) while it collects it."""
    real = collect.Collector.collect

    def collect_or_die(self: collect.Collector, path: str) -> collect.TestFile:
        if path.endswith("test_4.py"):
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, path)

    monkeypatch.setattr(collect.Collector, "collect", collect_or_die)


@pytest.mark.usefixtures("dying")
def test_a_worker_that_dies_is_an_error_not_a_short_report(tmp_path: Path) -> None:
    with pytest.raises(workers.WorkerError, match="stopped"):
        _audit(tmp_path, 2)


@pytest.mark.usefixtures("dying")
def test_the_command_says_a_dead_worker_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matrix.cli.main import main

    root = tmp_path / "repo"
    write_tree(root, FILES)
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN, encoding="utf-8")
    assert main(["pytest-audit", str(root), "--schedule-file", str(plan), "--jobs", "2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a worker reading test files stopped (exit code -9)" in err


def test_bad_input_read_while_the_workers_run_stops_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import multiprocessing

    from matrix.core.errors import ConfigError
    from matrix.pytest_suites import run

    started: list[int] = []
    real = workers.CollectingWorkers.__init__

    def starting(self: workers.CollectingWorkers, *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        started.extend(p.pid for p in self.processes)

    def refusing(*_: object) -> object:
        raise ConfigError("a workflow file the schedule reader refuses")

    monkeypatch.setattr(workers.CollectingWorkers, "__init__", starting)
    monkeypatch.setattr(run, "read_schedule", refusing)
    with pytest.raises(ConfigError, match="refuses"):
        _audit(tmp_path, 2)
    assert len(started) == 2  # they were running when the error came
    assert not multiprocessing.active_children()
