from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from matrix.core.expect import effective_versions, expectations
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Expectation, Matrix, Outcome, RunnerProfile
from matrix.core.report import CellResult, CellStatus, Report, RunnerInfo, write_report
from matrix.shard.cost import workload_for
from matrix.shard.workload import Workload

B200_DETECT = '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}'


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in (
        "SPECMATRIX_DETECT",
        "SPECMATRIX_MATRIX",
        "SPECMATRIX_RUNNERS",
        "SPECMATRIX_RUNNER",
        "GITHUB_OUTPUT",
        "GITHUB_STEP_SUMMARY",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="session")
def default_matrix() -> Matrix:
    return load_matrix()


@pytest.fixture(scope="session")
def runners() -> dict[str, RunnerProfile]:
    return dict(load_runners())


_EXPECTATIONS: dict[tuple[int, RunnerProfile], tuple[Matrix, Mapping[str, Expectation]]] = {}


def expectations_of(matrix: Matrix, runner: RunnerProfile) -> Mapping[str, Expectation]:
    """The matrix's expectations on `runner` without pinned versions, computed once per (matrix object, runner).

    The helpers below build expected values from them for dozens of tests; the code under test computes its own.
    """
    key = (id(matrix), runner)
    cached = _EXPECTATIONS.get(key)
    if cached is None or cached[0] is not matrix:  # the matrix kept alive with its entry, so its id stays its own
        cached = _EXPECTATIONS[key] = (matrix, expectations(matrix, runner, effective_versions(matrix, {})))
    return cached[1]


def run_cells(matrix: Matrix, runner: RunnerProfile) -> list[str]:
    exps = expectations_of(matrix, runner)
    return [c.id for c in matrix.cells if exps[c.id].outcome is Outcome.RUN]


@pytest.fixture(scope="session")
def b200_workload(default_matrix, runners) -> Workload:
    runner = runners["4-gpu-b200"]
    return workload_for(default_matrix, runner, expectations(default_matrix, runner, effective_versions(default_matrix, {})))


def make_report(
    matrix: Matrix,
    runner: RunnerProfile,
    statuses: Mapping[str, CellStatus],
    *,
    durations: Mapping[str, float] | None = None,
    compile_seconds: Mapping[str, float] | None = None,
    shard: str | None = None,
) -> Report:
    exps = expectations_of(matrix, runner)
    cells = []
    for cell_id, status in statuses.items():
        exp = exps[cell_id]
        cells.append(
            CellResult(
                nodeid=f"tests/test_cells.py::test_cell[{cell_id}]",
                cell=cell_id,
                test="test_cell",
                expected=exp.outcome.value,
                rule=exp.blocking[0].rule.id if exp.blocking else None,
                reason=exp.reason,
                status=status,
                duration=(durations or {}).get(cell_id, 0.5),
                compile_seconds=(compile_seconds or {}).get(cell_id),
            )
        )
    return Report(
        matrix=matrix.name,
        runner=RunnerInfo(name=runner.name, gpus=runner.gpus, capability=runner.capability, labels=runner.labels),
        versions={},
        detection_overridden=True,
        created="2026-07-20T00:00:00Z",
        cells=tuple(cells),
        shard=shard,
    )


@pytest.fixture
def report_file(tmp_path, default_matrix) -> Callable[..., Path]:
    def write(name: str, runner: RunnerProfile, statuses: Mapping[str, CellStatus], **kw: object) -> Path:
        path = tmp_path / "reports" / name
        write_report(make_report(default_matrix, runner, statuses, **kw), path)  # type: ignore[arg-type]
        return path

    return write
