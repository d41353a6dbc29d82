"""Edge: the pytest side of an engaged audit (registered by matrix.plugin once a run engages it).

- the text of a report's `longrepr` as one short line, duck-typed so xdist's copies work too;
- GPU slots: one xdist worker per GPU (or N with --matrix-workers-per-gpu), which device each worker gets (pure);
- the per-run pytest hooks (`AuditHooks`);
- the xdist controller's side: hand workers the plan and a GPU each, learn the planned items from their ids.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from matrix.audit.items import strip_params
from matrix.audit.pytest_options import CRASHED_PROPERTY, MATRIX_FIXTURE, PAYLOAD_KEY, REPORT_CELL_ATTR, Role
from matrix.audit.reports import append_step_summary, summary_lines, write_all
from matrix.audit.session import AuditSession, facts_json, timings_from
from matrix.core.errors import SpecmatrixError, UsageError
from matrix.core.model import Cell
from matrix.core.textfiles import MAX_TEXT_BYTES, decode_python, read_limited

MESSAGE_LIMIT = 500
_SURROGATE = re.compile("[\ud800-\udfff]")


def _clip(text: str) -> str:
    # A lone surrogate (`pytest.skip("bad \udcff")`) cannot be encoded anywhere this text goes (terminal, JSON
    # file, XML): it becomes U+FFFD here, once, so no writer downstream can fail on it.
    text = _SURROGATE.sub("\ufffd", text.strip())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def skip_text(longrepr: object) -> str | None:
    """A skip's reason without pytest's `Skipped: ` prefix."""
    if isinstance(longrepr, tuple | list) and len(longrepr) == 3:
        return _clip(str(longrepr[2]).removeprefix("Skipped: "))
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return _clip(str(crash.message).removeprefix("Skipped: "))
    return _clip(str(longrepr)) if longrepr else None


def failure_text(longrepr: object) -> str | None:
    """The crash line of a failure (`AssertionError: ...`), or the text xdist put there for a dead worker."""
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return _clip(str(crash.message))
    if isinstance(longrepr, tuple | list) and len(longrepr) == 3:
        return _clip(str(longrepr[2]))
    if not longrepr:
        return None
    lines = [ln for ln in str(longrepr).splitlines() if ln.strip()]
    # A collection error is a whole traceback as text; its `E   ` lines say what went wrong.
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    return _clip(errors[-1] if errors else lines[0] if lines else "")


CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
GPU_INDEX_ENV = "SPECMATRIX_GPU_INDEX"
GPU_DEVICE_ENV = "SPECMATRIX_GPU"


def gpu_slots(env: Mapping[str, str], gpus: int) -> tuple[str, ...]:
    """The devices workers may pin: an existing CUDA_VISIBLE_DEVICES list, else 0..gpus-1."""
    visible = env.get(CUDA_VISIBLE_DEVICES)
    if visible is not None:
        return tuple(d.strip() for d in visible.split(",") if d.strip())
    return tuple(str(i) for i in range(gpus))


def shared_slots(slots: Sequence[str], per_gpu: int) -> tuple[str, ...]:
    """Each device offered per_gpu times, round robin, so the lowest free slots spread workers over the GPUs."""
    return tuple(device for _ in range(per_gpu) for device in slots)


def check_workers(workers: int, slots: Sequence[str], runner: str, per_gpu: int = 1) -> None:
    """More workers than GPUs (times the workers allowed per GPU) would crowd a device: refuse before any starts."""
    if workers > len(slots) * per_gpu:
        shown = ",".join(slots) or "none"
        allowed = f"; --matrix-workers-per-gpu {per_gpu} allows {len(slots) * per_gpu}" if per_gpu > 1 else ""
        raise UsageError(
            f"-n {workers} starts {workers} xdist workers but runner {runner!r} has {len(slots)} GPU(s) ({shown})"
            f"{allowed}; use -n {len(slots) * per_gpu} or fewer, or let workers share a GPU with "
            "--matrix-workers-per-gpu"
        )


class SlotPool:
    """Hands each live worker the lowest free slot, so a restarted worker takes over its dead predecessor's GPU."""

    def __init__(self, slots: Sequence[str]) -> None:
        self._slots = tuple(slots)
        self._owner: dict[int, str] = {}

    def take(self, worker: str) -> int:
        for index in range(len(self._slots)):
            if index not in self._owner:
                self._owner[index] = worker
                return index
        raise UsageError(f"no free GPU for xdist worker {worker} ({len(self._slots)} GPU(s), all in use)")

    def release(self, worker: str) -> None:
        for index, owner in list(self._owner.items()):
            if owner == worker:
                del self._owner[index]


def pinned_env(slot: int, slots: Sequence[str]) -> dict[str, str]:
    """What a worker on `slot` sets before anything initialises CUDA."""
    device = slots[slot]  # with workers sharing GPUs (shared_slots) the index is the device's, not the slot's
    return {CUDA_VISIBLE_DEVICES: device, GPU_INDEX_ENV: str(slots.index(device)), GPU_DEVICE_ENV: device}


_PHASES = frozenset({"setup", "call", "teardown"})


class AuditHooks:
    """The per-run hooks; registered as an object so report hooks reach the run's AuditSession directly."""

    def __init__(self, audit: AuditSession, config: pytest.Config) -> None:
        self.audit = audit
        self.config = config
        self.records = audit.settings.role is not Role.WORKER
        self.controller = audit.settings.role is Role.CONTROLLER

    def pytest_report_header(self) -> list[str]:
        plan = self.audit.plan
        if plan is None:
            return []
        run = sum(1 for e in plan.expectations.values() if e.outcome.value == "run")
        line = (
            f"specmatrix: runner {plan.runner.name} ({plan.runner.skip_policy.value} skip policy): "
            f"{len(plan.expectations)} cells, {run} expected to run"
        )
        return [line + (f"; {plan.detection_note}" if plan.detection_note else "")]

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if self.audit.planning_error is not None:
            raise pytest.UsageError(f"specmatrix: {self.audit.planning_error}")
        empty = self.audit.empty_tests
        if not empty:
            return
        dropped = [i for i in items if strip_params(i.nodeid) in empty]
        if dropped:
            items[:] = [i for i in items if strip_params(i.nodeid) not in empty]
            config.hook.pytest_deselected(items=dropped)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The collected matrix items, known exactly from their parameters (the xdist controller only sees ids)."""
        audit = self.audit
        if audit.settings.role is Role.LOCAL:
            audit.collected_ids = [item.nodeid for item in session.items]  # each one ends with a status
        if not audit.active:
            return
        for item in session.items:
            callspec = getattr(item, "callspec", None)
            if callspec is not None:
                cell = callspec.params.get(MATRIX_FIXTURE)
                if isinstance(cell, Cell):
                    audit.item_cells[item.nodeid] = cell.id
        if audit.settings.role is Role.LOCAL:
            for nodeid, cell_id in audit.item_cells.items():
                audit.plan_item(nodeid, cell_id)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A module that skipped or failed at import never yields items: plan its matrix tests from source."""
        if report.passed or not self.records:
            return
        skipped = report.skipped
        reason = skip_text(report.longrepr) if skipped else None
        error = None if skipped else failure_text(report.longrepr)
        planned = False
        if report.nodeid.endswith(".py"):
            try:
                source = decode_python(read_limited(self.config.rootpath / report.nodeid, MAX_TEXT_BYTES))
            except (OSError, ValueError, SyntaxError):
                source = ""
            try:
                planned = self.audit.plan_uncollected_module(report.nodeid, source, skip_reason=reason, error=error)
            except SpecmatrixError as exc:
                self.audit.planning_error = str(exc)
        if not planned:
            self.audit.accounts.record(report.nodeid, "setup", report.outcome, skip_reason=reason, message=error)

    @pytest.hookimpl(tryfirst=True)  # on a worker: before xdist serializes the report for the controller
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        audit = self.audit
        if not self.records:
            cell_id = audit.item_cells.get(report.nodeid)
            if cell_id is not None:
                setattr(report, REPORT_CELL_ATTR, cell_id)
            return
        outcome: str = report.outcome
        if outcome == "rerun":  # pytest-rerunfailures: a later attempt follows
            return
        if self.controller and report.when in _PHASES:
            cell_id = getattr(report, REPORT_CELL_ATTR, None)
            if not audit.active and cell_id is None:
                audit.reported_ordinary.add(report.nodeid)
            elif not audit.active:
                try:
                    audit.engage_from_report()
                except SpecmatrixError as exc:
                    audit.planning_error = str(exc)
                    return
            if audit.active:
                audit.confirm(report.nodeid, cell_id)
        # Recorded even before the audit engages: a test that ran before the first matrix item still counts.
        when: str = report.when
        if outcome == "passed" and when != "call" and not report.user_properties:
            audit.accounts.phase_passed(report.nodeid, when, report.duration, getattr(report, "start", None))
            return
        xfail = getattr(report, "wasxfail", None)
        skip_reason = message = None
        if outcome == "skipped" and xfail is None:
            skip_reason = skip_text(report.longrepr)
        elif outcome == "failed":
            message = failure_text(report.longrepr)
        node = getattr(report, "node", None)  # set by the xdist controller
        worker = str(node.gateway.id) if node is not None else None
        if when not in _PHASES and worker in audit.node_errors:
            message = f"{message}; worker error: {audit.node_errors[worker]}"
        props = report.user_properties
        crash = next((str(p[1]) for p in props if len(p) == 2 and p[0] == CRASHED_PROPERTY), None) if props else None
        if outcome == "failed" and crash is not None:
            when = "crashed"  # the test ran its cell in a child process that died: any non-phase counts as a crash
            message = f"{message}; {crash}" if message else crash
        audit.accounts.record(
            report.nodeid,
            when,
            outcome,
            duration=report.duration,
            start=getattr(report, "start", None),
            xfail_reason=xfail,
            skip_reason=skip_reason,
            message=message,
            worker=worker,
            timings=timings_from(props) if props else None,
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Build the report, write it, and fail the session on error findings (pytest's own counts stay as they are)."""
        audit = self.audit
        if not self.records or audit.settings.collect_only:
            return
        if audit.planning_error is not None:  # the audit could not plan: never let that pass for a clean run
            if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if not audit.active:
            return
        report = audit.finish(dt.date.today())
        # The error boundary of the run's end: a report that cannot be written is one line and a failed session,
        # never an INTERNALERROR that hides the audit.
        try:
            if audit.settings.report_path is not None:
                audit.written = [str(p) for p in write_all(report, audit.settings.report_path)]
            summary = append_step_summary(report, os.environ)
            if summary is not None:
                audit.written.append(f"{summary} (appended)")
        except (SpecmatrixError, OSError) as exc:
            reason = exc if isinstance(exc, SpecmatrixError) else (exc.strerror or exc)
            audit.written.append(f"could not write the report: {reason}")
            session.exitstatus = max(int(session.exitstatus), int(pytest.ExitCode.TESTS_FAILED))
        if report.errors and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        audit = self.audit
        if audit.planning_error is not None and self.records:
            terminalreporter.write_sep("=", "specmatrix skip audit", red=True)
            terminalreporter.write_line(f"specmatrix: {audit.planning_error}", red=True)
            return
        report = audit.report
        if report is None:
            return
        terminalreporter.write_sep("=", "specmatrix skip audit", red=bool(report.errors), green=not report.errors)
        for line in summary_lines(report, audit.written):
            terminalreporter.write_line(line.text, red=line.red, yellow=line.yellow)


class XdistController:
    """Registered only on an xdist controller; every hook here is optional so pytest without xdist never sees them."""

    def __init__(self, audit: AuditSession, slots: Sequence[str]) -> None:
        self.audit = audit
        self.slots = tuple(slots)
        self.pool = SlotPool(slots) if slots else None

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Detection happened here, before pinning; a worker pinned to one GPU must not detect again."""
        plan = self.audit.plan
        if plan is None:
            return
        payload: dict[str, object] = {"runner": plan.runner.name, "facts": facts_json(plan.facts)}
        if self.pool is not None:
            payload["slot"] = self.pool.take(str(node.gateway.id))
            payload["slots"] = list(self.slots)
        node.workerinput[PAYLOAD_KEY] = payload

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        worker = str(node.gateway.id)
        if self.pool is not None:
            self.pool.release(worker)
        if error is not None:
            self.audit.node_errors[worker] = str(error)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        try:
            self.audit.plan_from_ids(ids)
        except SpecmatrixError as exc:  # reported at the end: raising here would stop the xdist event loop
            self.audit.planning_error = str(exc)
