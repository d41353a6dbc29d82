"""The matrix's cost model turned into a workload: cells a runner must run, timed and keyed by configuration."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import fmean

from matrix.core.errors import ConfigError
from matrix.core.kernel_config import kernel_config
from matrix.core.model import BackendCost, Cell, Expectation, Matrix, Outcome, RunnerProfile
from matrix.core.report import CellStatus, Report
from matrix.shard.workload import WorkItem, Workload

_RAN = frozenset({CellStatus.PASSED, CellStatus.FAILED, CellStatus.ERROR})


@dataclass(frozen=True, kw_only=True)
class Measured:
    """Durations seen in earlier reports: run seconds per cell (compile excluded) and compile seconds."""

    cell_seconds: Mapping[str, float] = field(default_factory=dict)
    compile_seconds: Mapping[str, float] = field(default_factory=dict)
    reports: int = 0


def measured_from(reports: Sequence[Report]) -> Measured:
    """Per cell: the sum over its tests in one report, averaged over the reports that ran it."""
    run: defaultdict[str, list[float]] = defaultdict(list)
    compiled: defaultdict[str, list[float]] = defaultdict(list)
    for report in reports:
        per_cell: defaultdict[str, float] = defaultdict(float)
        per_cell_compile: defaultdict[str, float] = defaultdict(float)
        for result in report.cells:
            if result.status not in _RAN:
                continue
            compile_part = result.compile_seconds or 0.0
            # A test's duration includes the JIT compile it triggered; the planner counts that once per shard.
            per_cell[result.cell] += max(0.0, result.duration - compile_part)
            per_cell_compile[result.cell] += compile_part
        for cell, seconds in per_cell.items():
            run[cell].append(seconds)
            if per_cell_compile[cell] > 0:
                compiled[cell].append(per_cell_compile[cell])
    return Measured(
        cell_seconds={c: fmean(v) for c, v in run.items()},
        compile_seconds={c: fmean(v) for c, v in compiled.items()},
        reports=len(reports),
    )


def cell_cost(matrix: Matrix, cell: Cell) -> BackendCost:
    """`[cost.backend.B]` for the cell's backend, else `[cost]` itself (its defaults when absent).

    Once a matrix prices some backends, a backend it forgot is an error: it would silently cost the default.
    """
    backend = cell.get("backend")
    if not matrix.cost.backends:
        return matrix.cost.default
    found = matrix.cost.backends.get(str(backend))
    if found is None:
        raise ConfigError(
            f"{matrix.source_path}: [cost.backend.{backend}] is missing (the other backends have one); add it, or drop "
            "every [cost.backend.*] table to cost all cells by [cost] cell_seconds"
        )
    return found


def config_key(matrix: Matrix, cell: Cell, impl: str | None) -> str:
    """Backend + implementation + the values of the backend's configuration axes."""
    cell_cost(matrix, cell)
    return kernel_config(matrix, cell, impl).key


def cached_configs(text: str, where: str) -> frozenset[str]:
    """Configurations a restored JIT cache holds: a cache manifest or key file (JSON with a `configs` list, see
    matrix/gpu/jitcache.py), or one configuration key per line (`#` comments)."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        import json

        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"{where}: not JSON: {exc}") from None
        configs = doc.get("configs") if isinstance(doc, dict) else None
        if not isinstance(configs, list) or not all(isinstance(c, str) for c in configs):
            raise ConfigError(f"{where}: no `configs` list of configuration keys")
        return frozenset(configs)
    return frozenset(w for line in text.splitlines() if (w := line.split("#", 1)[0].strip()))


def workload_for(
    matrix: Matrix,
    runner: RunnerProfile,
    expectations: Mapping[str, Expectation],
    measured: Measured | None = None,
    cached: frozenset[str] = frozenset(),
) -> Workload:
    """Only cells expected to RUN on the runner; measured durations replace the cost table where known.

    A configuration in `cached` (held by a restored JIT cache) compiles nothing: its setup cost is zero.
    """
    measured = measured or Measured()
    items: list[WorkItem] = []
    setup: dict[str, float] = {}
    observed_compile: defaultdict[str, list[float]] = defaultdict(list)
    for cell in matrix.cells:
        exp = expectations[cell.id]
        if exp.outcome is not Outcome.RUN:
            continue
        config = config_key(matrix, cell, exp.impl)
        cost = cell_cost(matrix, cell)
        seconds = measured.cell_seconds.get(cell.id, cost.cell_seconds)
        items.append(WorkItem(id=cell.id, config=config, seconds=seconds, file=f"{cell.group}/{config.split('/')[0]}"))
        setup.setdefault(config, cost.compile_seconds)
        if cell.id in measured.compile_seconds:
            observed_compile[config].append(measured.compile_seconds[cell.id])
    for config, seen in observed_compile.items():
        setup[config] = max(seen)
    for config in cached & setup.keys():
        setup[config] = 0.0
    return Workload(items=tuple(items), setup=setup, shard_seconds=matrix.cost.shard_seconds, workers=max(1, runner.gpus))
