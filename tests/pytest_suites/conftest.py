"""Builders for the pytest-audit tests: a small checkout written into tmp_path, audited in-process."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from matrix.core.runner_files import load_runners
from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.run import AuditInput, run_audit

# Profiles the fixtures name besides the built-in ones: CUDA versions chosen to sit on either side of
# flashinfer's thresholds (12.8 for sm100a / sm120a, 12.9 for sm100f / sm121a).
EXTRA_RUNNERS = """
[runner.b200-cu128]
gpus = 1
capability = [10, 0]
labels = ["b200-cu128"]
cuda = "12.8"

[runner.b200-cu129]
gpus = 1
capability = [10, 0]
labels = ["b200-cu129"]
cuda = "12.9"

[runner.sm120-cu128]
gpus = 1
capability = [12, 0]
labels = ["sm120-cu128"]
cuda = "12.8"

[runner.sm121-cu128]
gpus = 1
capability = [12, 1]
labels = ["sm121-cu128"]
cuda = "12.8"

[runner.h100-2gpu-torchrun]
gpus = 2
capability = [9, 0]
labels = ["h100-2gpu-torchrun"]
cuda = "12.9"
"""

Audit = Callable[..., PytestAuditReport]


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def schedule_toml(*entries: tuple[str, str], markers: Mapping[str, str] | None = None, env: str = "") -> str:
    """A declared schedule: (labels, pytest command) pairs."""
    out = ['[schedule]\nsource = ".github/workflows/ci.yml"\n']
    for labels, command in entries:
        out.append(f"[[entry]]\njob = {labels!r}\nlabels = [{labels!r}]\npytest = {command!r}\n{env}\n")
    if markers:
        out.append("[markers]\n" + "".join(f"{k} = {v!r}\n" for k, v in markers.items()))
    return "\n".join(out)


@pytest.fixture
def audit(tmp_path: Path) -> Audit:
    """audit(files, schedule_text, buildkite={name: yaml}) -> the report of that checkout."""
    runners = tmp_path / "runners.toml"
    runners.write_text(EXTRA_RUNNERS, encoding="utf-8")
    profiles = load_runners((runners,))

    def run(
        files: Mapping[str, str],
        schedule: str | None = None,
        buildkite: Mapping[str, str] | None = None,
        installed: frozenset[str] = frozenset(),
    ) -> PytestAuditReport:
        root = tmp_path / "repo"
        root.mkdir(exist_ok=True)
        write_tree(root, files)
        schedule_files: tuple[Path, ...] = ()
        if schedule is not None:
            path = tmp_path / "schedule.toml"
            path.write_text(schedule, encoding="utf-8")
            schedule_files = (path,)
        buildkite_files = []
        for name, text in (buildkite or {}).items():
            write_tree(root, {name: text})
            buildkite_files.append(root / name)
        inputs = AuditInput(root=root, schedule_files=schedule_files, buildkite_files=tuple(buildkite_files), installed=installed)
        return run_audit(inputs, profiles)

    return run


def _skipping(report: PytestAuditReport) -> dict[str, str]:
    kinds = (GuardFindingKind.SILENT_SKIP, GuardFindingKind.DISABLED_BY_SKIP)
    return {f.finding.scope: f.guard_class.value for k in kinds for f in report.of_kind(k)}


@pytest.fixture
def skipping() -> Callable[[PytestAuditReport], dict[str, str]]:
    """nodeid -> guard class of every test that skips on every runner it is sent to (deliberately or not)."""
    return _skipping


@pytest.fixture
def schedule() -> Callable[..., str]:
    return schedule_toml


@pytest.fixture(scope="session")
def oracle_stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stub torch and reporting plugin real pytest runs with in the differential tests."""
    from tests.pytest_suites.test_pytest_oracle import stub_folder

    return stub_folder(tmp_path_factory.mktemp("oracle-stub"))


@dataclass(frozen=True, kw_only=True)
class Gauge:
    """The gauge-kit project (tests/pytest_suites/junit_fixture.py) and the JUnit XML real pytest wrote for it."""

    root: Path
    runs: dict[str, Path]  # runner label -> its JUnit file
    base: Path  # a folder for more runs


@pytest.fixture(scope="session")
def gauge(tmp_path_factory: pytest.TempPathFactory) -> Gauge:
    from tests.pytest_suites.junit_fixture import write_project, write_runs

    base = tmp_path_factory.mktemp("gauge")
    root = write_project(base / "proj")
    return Gauge(root=root, runs=write_runs(root, base / "runs"), base=base)
