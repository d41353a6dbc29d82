"""One run's audit: its frozen settings, lazy planning, item planning and the finished report.

- edge: the plugin's command-line options and the frozen settings resolved from them once per run;
- the `AuditSession`, kept in `config.stash`;
- edge: let a matrix test record how long kernel compilation and setup took (the `matrix_timing` fixture).
"""

from __future__ import annotations

import datetime as dt
import gc
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from matrix.audit.accounting import TIMING_KEYS, Accounts, PlannedItem
from matrix.audit.findings import AllowEntry, evaluate, judge, parse_allowlist
from matrix.audit.items import CellChooser, CellIdIndex, CellParameters, expand_select_args, matrix_tests, strip_params
from matrix.audit.pytest_options import ENGAGING, Role, role_of, worker_count
from matrix.core.detect import DETECT_ENV
from matrix.core.errors import SelectorError, UsageError
from matrix.core.finding import Finding
from matrix.core.loader import read_toml_file
from matrix.core.machine import MachineFacts
from matrix.core.model import Cell, SkipPolicy
from matrix.core.option_table import OPTIONS, OptionKind
from matrix.core.options import CliOverrides, Loaded, Options, load, resolve_options, warn_deprecated
from matrix.core.planning import Plan, plan_for
from matrix.core.report import Report, RunnerInfo, matrix_digest
from matrix.core.textfiles import read_text


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    options: Options
    engaged: bool
    role: Role
    workers: int
    workers_per_gpu: int
    report_path: Path | None
    select_args: tuple[str, ...]
    selects: tuple[str, ...]
    run_expected_skips: bool
    shard: str | None
    collect_only: bool


def _read_text(path: str) -> str:
    return read_text(Path(path), SelectorError, f"--matrix-select @{path}")


MAX_WORKERS_PER_GPU = 16


def _workers_per_gpu(value: Any) -> int:
    if not isinstance(value, int) or not 1 <= value <= MAX_WORKERS_PER_GPU:
        raise UsageError(f"--matrix-workers-per-gpu must be 1 to {MAX_WORKERS_PER_GPU}, got {value!r}")
    return value


def _allowlist(opt: Any, role: Role) -> Path | None:
    if opt.matrix_allow and not opt.matrix_allowlist and role is not Role.WORKER:  # one line per run, not per worker
        warn_deprecated("--matrix-allow")
    chosen = opt.matrix_allowlist or opt.matrix_allow
    return Path(chosen) if chosen else None


def settings_from(config: pytest.Config, env: Mapping[str, str]) -> AuditSettings:
    """Resolve the cascade (defaults, pyproject [tool.specmatrix], SPECMATRIX_* env, these options) once."""
    opt: Any = config.option
    cwd = config.invocation_params.dir
    given: dict[str, Any] = {}
    for spec in OPTIONS:
        if not spec.plugin_flag:
            continue
        value = getattr(opt, spec.plugin_attr, None)
        if spec.kind.accumulates:
            given[spec.field] = tuple(Path(v) if spec.kind is OptionKind.PATHS else v for v in value or ())
        elif spec.kind is OptionKind.PATH:
            if value:  # an empty --matrix "" names no file
                given[spec.field] = Path(value)
        elif value is not None:
            given[spec.field] = value
    given["allowlist"] = _allowlist(opt, role_of(config))  # with its deprecated spelling, --matrix-allow
    options = resolve_options(cli=CliOverrides(**given), env=env, cwd=cwd)
    engaged = any(getattr(opt, name) for name in ENGAGING) or options.runner != "auto"
    select_args = tuple(opt.matrix_select)
    return AuditSettings(
        options=options,
        engaged=engaged,
        role=role_of(config),
        workers=worker_count(config),
        workers_per_gpu=_workers_per_gpu(getattr(opt, "matrix_workers_per_gpu", 1)),
        report_path=Path(opt.matrix_report) if opt.matrix_report else None,
        select_args=select_args,
        selects=expand_select_args(select_args, _read_text),
        run_expected_skips=bool(opt.matrix_run_expected_skips),
        shard=opt.matrix_shard,
        collect_only=bool(config.getoption("collectonly", False)),
    )


LARGE_MATRIX = 2000  # cells; below this, freezing the plan for the garbage collector is not worth a full collection


def facts_json(facts: MachineFacts) -> str:
    """The controller's detection in SPECMATRIX_DETECT form, so a pinned worker (seeing one GPU) plans alike."""
    doc: dict[str, object] = {"gpus": facts.gpus, "versions": dict(facts.versions)}
    if facts.capability is not None:
        doc["capability"] = list(facts.capability)
    if facts.names:
        doc["name"] = facts.names[0]
    return json.dumps(doc)


def load_allowlist(path: Path) -> tuple[AllowEntry, ...]:
    return parse_allowlist(read_toml_file(path), str(path))


class AuditSession:
    """Everything the plugin knows in one pytest process; planning happens at most once."""

    def __init__(
        self,
        settings: AuditSettings,
        env: Mapping[str, str],
        *,
        payload: Mapping[str, object] | None = None,
        python_functions: Sequence[str] = ("test",),
        python_classes: Sequence[str] = ("Test",),
    ) -> None:
        self.settings = settings
        self.env = env
        self.payload = payload
        self.active = settings.engaged
        self.accounts = Accounts()
        self.plan: Plan | None = None
        self.allow: tuple[AllowEntry, ...] = ()
        self.planning_error: str | None = None
        self.empty_tests: set[str] = set()
        self.node_errors: dict[str, str] = {}
        self.report: Report | None = None
        self.written: list[str] = []
        self.started = time.time()
        self._functions = tuple(python_functions)
        self._classes = tuple(python_classes)
        self._loaded: Loaded | None = None
        self._chooser: CellChooser | None = None
        self._run_ids: frozenset[str] | None = None
        self._params: CellParameters | None = None
        self._by_selects: dict[tuple[str, ...], tuple[list[object], list[str]]] = {}
        self._index: CellIdIndex | None = None
        self._ids_planned = False
        self.collected_ids: Sequence[str] = ()
        # Ids a worker already reported as ordinary tests before the audit engaged: never matrix items.
        self.reported_ordinary: set[str] = set()
        self.item_cells: dict[str, str] = {}  # nodeid -> cell id of this process's collected matrix items

    # --- planning ---------------------------------------------------------------

    def loaded(self) -> Loaded:
        if self._loaded is None:
            self._loaded = load(self.settings.options)
            self._chooser = CellChooser(self._loaded.matrix.cells)
        return self._loaded

    def ensure_plan(self) -> Plan:
        """Judge every cell on the claimed runner (claim checked against this machine, or the controller's facts)."""
        if self.plan is not None:
            return self.plan
        loaded = self.loaded()
        runner = self.settings.options.runner
        env = self.env
        if self.payload is not None:
            runner = str(self.payload["runner"])
            env = {**env, DETECT_ENV: str(self.payload["facts"])}
        plan = plan_for(loaded, runner, env, claim=True)
        assert self._chooser is not None
        self._run_ids = self._chooser.chosen_all(self.settings.selects)
        self._params = CellParameters(loaded.matrix.cells, plan.expectations, run_expected_skips=self.settings.run_expected_skips)
        self.plan = plan
        self.active = True
        if len(loaded.matrix.cells) >= LARGE_MATRIX:
            # The plan is immutable and lives as long as the process: freeze it (with everything loaded so far)
            # so that the collector's full passes during a 20,000-item run stop re-walking it.
            gc.collect()
            gc.freeze()
        return plan

    def load_allowlist(self) -> None:
        path = self.settings.options.allowlist
        if path is not None:
            self.allow = load_allowlist(path)

    def cells_for(self, selects: tuple[str, ...]) -> tuple[Cell, ...]:
        """The run's cells narrowed by a test's `matrix` marks; a mark's selector is checked against the whole matrix."""
        self.ensure_plan()
        assert self._chooser is not None and self._run_ids is not None
        return self._chooser.in_order(self._chooser.chosen_all(selects) & self._run_ids)

    def parameters_for(self, selects: tuple[str, ...]) -> tuple[list[object], list[str]]:
        cached = self._by_selects.get(selects)
        if cached is None:
            cells = self.cells_for(selects)
            assert self._params is not None
            cached = self._by_selects[selects] = self._params.for_cells(cells)
        return cached

    def cell_index(self) -> CellIdIndex:
        if self._index is None:
            self._index = CellIdIndex(c.id for c in self.loaded().matrix.cells)
        return self._index

    # --- items ------------------------------------------------------------------

    def plan_item(self, nodeid: str, cell_id: str) -> None:
        self.accounts.plan(PlannedItem(nodeid=nodeid, test=strip_params(nodeid), cell_id=cell_id))

    def plan_from_ids(self, nodeids: Sequence[str]) -> None:
        """xdist controller: the matrix items among the ids the workers collected (every worker collects the same).

        The ids are read against the matrix's cell ids; each worker report then confirms or corrects its item.
        """
        self.collected_ids = nodeids
        if self.plan is None or self._ids_planned:
            return
        self._ids_planned = True
        index = self.cell_index()
        for nodeid in nodeids:
            cell_id = index.cell_in(nodeid)
            if cell_id is not None and nodeid not in self.reported_ordinary:
                self.plan_item(nodeid, cell_id)

    def engage_from_report(self) -> None:
        """A worker reported a matrix item to a controller that had no runner named: plan now."""
        self.ensure_plan()
        self.plan_from_ids(self.collected_ids)

    def confirm(self, nodeid: str, cell_id: str | None) -> None:
        """The worker knows for sure: an id that only looked like a matrix item is an ordinary test."""
        if cell_id is None:
            self.accounts.unplan(nodeid)
        elif not self.accounts.is_planned(nodeid):
            self.plan_item(nodeid, cell_id)

    def plan_uncollected_module(self, nodeid: str, source: str, *, skip_reason: str | None, error: str | None) -> bool:
        """A module that skipped (or failed) at import: plan its matrix tests from source and record that outcome.

        Returns False when the source shows no matrix test (the module is then an ordinary outside result).
        """
        tests = matrix_tests(source, functions=self._functions, classes=self._classes)
        if not tests:
            return False
        self.ensure_plan()
        assert self._chooser is not None and self._run_ids is not None
        for test in tests:
            try:
                ids = self._chooser.chosen_all(test.selects) & self._run_ids
            except SelectorError:
                ids = self._run_ids  # a broken select cannot hide cells: plan them all
            for cell in self._chooser.in_order(ids):
                item = f"{nodeid}::{test.name}[{cell.id}]"
                self.plan_item(item, cell.id)
                if error is not None:
                    self.accounts.record(item, "setup", "failed", message=f"module failed to import: {error}")
                else:
                    self.accounts.record(item, "setup", "skipped", skip_reason=f"module skipped at import: {skip_reason}")
        return True

    # --- the end ----------------------------------------------------------------

    def finish(self, today: dt.date) -> Report:
        """The report: every planned item's status, outside results judged by the allowlist, and the findings."""
        plan = self.ensure_plan()
        cells, outside = self.accounts.results(plan.expectations, self.started, collected=self.collected_ids)
        policy = plan.runner.skip_policy
        allow_findings: tuple[Finding, ...] = ()
        if policy is SkipPolicy.STRICT:
            verdict = judge(outside, self.allow, today)
            outside, allow_findings = verdict.outside, verdict.findings
        findings = evaluate(cells, outside, policy, allow_findings)
        runner = plan.runner
        extra: dict[str, object] = {
            "run_expected_skips": self.settings.run_expected_skips,
            "xdist_workers": self.settings.workers,
        }
        if self.settings.options.allowlist is not None:
            extra["allowlist"] = str(self.settings.options.allowlist)
        self.report = Report(
            matrix=self.loaded().matrix.name,
            matrix_digest=matrix_digest(self.loaded().matrix),
            runner=RunnerInfo(
                name=runner.name,
                gpus=runner.gpus,
                capability=runner.capability,
                labels=runner.labels,
                skip_policy=runner.skip_policy.value,
            ),
            versions=dict(plan.versions),
            detection_overridden=plan.facts.overridden,
            created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            cells=cells,
            outside=outside,
            findings=findings,
            shard=self.settings.shard,
            selectors=self.settings.select_args,
            wall_seconds=round(time.time() - self.started, 3),
            extra=extra,
        )
        return self.report


class MatrixTiming:
    """Adds `compile_seconds` / `setup_seconds` to the item's user_properties, which the report picks up.

    Tests without the fixture can append `("compile_seconds", 8.2)` to `request.node.user_properties` directly.
    """

    def __init__(self, user_properties: list[tuple[str, object]]) -> None:
        self._props = user_properties

    def record(self, key: str, seconds: float) -> None:
        if key not in TIMING_KEYS:
            raise ValueError(f"matrix_timing records {' or '.join(TIMING_KEYS)}, not {key!r}")
        self._props.append((key, float(seconds)))

    @contextmanager
    def _timed(self, key: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(key, time.perf_counter() - start)

    def compile(self) -> AbstractContextManager[None]:
        """`with matrix_timing.compile(): build()` records the block as compile_seconds."""
        return self._timed("compile_seconds")

    def setup(self) -> AbstractContextManager[None]:
        """`with matrix_timing.setup(): ...` records the block as setup_seconds."""
        return self._timed("setup_seconds")


def timings_from(user_properties: Sequence[tuple[str, object]]) -> dict[str, float]:
    """Sum every recorded compile/setup duration by key; other properties are left alone."""
    out: dict[str, float] = {}
    for prop in user_properties:
        if len(prop) == 2 and prop[0] in TIMING_KEYS and isinstance(prop[1], int | float) and not isinstance(prop[1], bool):
            out[prop[0]] = out.get(prop[0], 0.0) + float(prop[1])
    return out
