"""Edge: the per-run pytest hooks of an engaged audit (registered by matrix.plugin once a run engages it)."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pytest

from matrix.audit.nodeids import strip_params
from matrix.audit.pytest_options import CRASHED_PROPERTY, MATRIX_FIXTURE, REPORT_CELL_ATTR, Role
from matrix.audit.report_text import failure_text, skip_text
from matrix.audit.session import AuditSession
from matrix.audit.terminal import summary_lines
from matrix.audit.timing import timings_from
from matrix.audit.writers import append_step_summary, write_all
from matrix.core.errors import SpecmatrixError
from matrix.core.model import Cell
from matrix.core.textfiles import MAX_TEXT_BYTES, decode_python, read_limited

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
