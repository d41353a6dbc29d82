"""pytest plugin entry point (pytest11): parametrize `matrix_cell` tests over the matrix and audit every skip.

See docs/skip-audit.md. The deciding logic lives in matrix/audit/; this module only wires it to pytest's hooks.
The entry point loads this module into every pytest run of the environment, so it imports only pytest and
`matrix.audit.pytest_options`; the audit machinery is imported when a run engages it (a `--matrix-*` option,
`SPECMATRIX_RUNNER`, a `[tool.specmatrix]` table, or the first `matrix_cell` test or report).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pytest

from matrix.audit.pytest_options import (
    CRASHED_PROPERTY,
    MATRIX_FIXTURE,
    PAYLOAD_KEY,
    REPORT_CELL_ATTR,
    Role,
    add_options,
    engaged_at_start,
    role_of,
)

if TYPE_CHECKING:
    from matrix.audit.session import AuditSession
    from matrix.audit.timing import MatrixTiming
    from matrix.core.model import Cell

MARKER = (
    "matrix(select): run this matrix_cell test only over the cells the selector keeps (syntax of `specmatrix cells --select`)"
)
__all__ = ["CRASHED_PROPERTY", "MATRIX_FIXTURE", "REPORT_CELL_ATTR"]
_AUDIT = pytest.StashKey["AuditSession"]()
_DORMANT = pytest.StashKey["DormantHooks"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Pin this worker's GPU first (before any plugin or conftest can initialise CUDA), then plan if asked to."""
    config.addinivalue_line("markers", MARKER)
    role = role_of(config)
    payload: dict[str, Any] | None = None
    if role is Role.WORKER:
        payload = config.workerinput.get(PAYLOAD_KEY)  # type: ignore[attr-defined]
    if payload is None and not engaged_at_start(config):
        # Nothing asks for the audit yet: wait (cheaply) for a matrix test, keeping what happens meanwhile.
        dormant = DormantHooks(config, role)
        config.stash[_DORMANT] = dormant
        config.pluginmanager.register(dormant, "specmatrix-dormant")
        return
    _engage(config, role, payload, at_start=True)


def _engage(config: pytest.Config, role: Role, payload: dict[str, Any] | None, *, at_start: bool) -> AuditSession:
    """Load the audit machinery and register its hooks; raises pytest.UsageError on bad input (one line)."""
    from matrix.audit.gpus import check_workers, gpu_slots, pinned_env, shared_slots
    from matrix.audit.hooks import AuditHooks
    from matrix.audit.session import AuditSession
    from matrix.audit.settings import settings_from
    from matrix.audit.writers import mark_in_progress, report_paths
    from matrix.audit.xdist_controller import XdistController
    from matrix.core.errors import SpecmatrixError

    if payload is not None and "slot" in payload:
        os.environ.update(pinned_env(int(payload["slot"]), tuple(payload["slots"])))
    try:
        settings = settings_from(config, os.environ)
        audit = AuditSession(
            settings,
            os.environ,
            payload=payload,
            python_functions=config.getini("python_functions"),
            python_classes=config.getini("python_classes"),
        )
        if settings.report_path is not None:
            report_paths(settings.report_path)
        if role is not Role.WORKER:
            audit.load_allowlist()
        if settings.engaged:
            audit.ensure_plan()  # woken by a matrix test instead, the audit plans there and reports errors once
        slots: tuple[str, ...] = ()
        plan = audit.plan
        if role is Role.CONTROLLER and at_start and plan is not None and plan.runner.gpus > 0 and plan.facts.gpus > 0:
            devices = gpu_slots(os.environ, plan.facts.gpus)
            check_workers(settings.workers, devices, plan.runner.name, settings.workers_per_gpu)
            slots = shared_slots(devices, settings.workers_per_gpu)
        if settings.report_path is not None and role is not Role.WORKER and not settings.collect_only:
            # Before any test runs: a run that dies from here on leaves a marker `specmatrix audit` rejects,
            # never the previous run's report.
            mark_in_progress(settings.report_path)
    except SpecmatrixError as exc:
        raise pytest.UsageError(f"specmatrix: {exc}") from None
    config.stash[_AUDIT] = audit
    config.pluginmanager.register(AuditHooks(audit, config), "specmatrix-audit")
    if role is Role.CONTROLLER:
        config.pluginmanager.register(XdistController(audit, slots), "specmatrix-xdist-controller")
    return audit


def _audit(config: pytest.Config) -> AuditSession:
    """This run's audit, engaging it now if it was dormant (the first matrix test of a run that named no option)."""
    audit = config.stash.get(_AUDIT, None)
    if audit is not None:
        return audit
    return config.stash[_DORMANT].wake()


class DormantHooks:
    """Stands in until a run engages the audit: keeps the few facts the audit needs later, then replays them.

    Costs a list append per report; a run that never sees a matrix test never imports the audit machinery.
    """

    def __init__(self, config: pytest.Config, role: Role) -> None:
        self.config = config
        self.role = role
        self.collect_reports: list[pytest.CollectReport] = []
        self.test_reports: list[pytest.TestReport] = []
        self.collected: list[tuple[Any, Any]] = []  # (node, ids) from xdist workers
        self.nodes_down: list[tuple[Any, object | None]] = []
        self.awake = False

    def wake(self) -> AuditSession:
        self.awake = True
        self.config.pluginmanager.unregister(self)
        audit = _engage(self.config, self.role, None, at_start=False)
        hooks = self.config.pluginmanager.get_plugin("specmatrix-audit")
        assert hooks is not None  # _engage registered it
        controller = self.config.pluginmanager.get_plugin("specmatrix-xdist-controller")
        if controller is not None:
            for node, ids in self.collected:
                controller.pytest_xdist_node_collection_finished(node=node, ids=ids)
            for node, error in self.nodes_down:
                controller.pytest_testnodedown(node=node, error=error)
        for creport in self.collect_reports:
            hooks.pytest_collectreport(report=creport)
        for treport in self.test_reports:
            hooks.pytest_runtest_logreport(report=treport)
        self.collect_reports.clear()
        self.test_reports.clear()
        return audit

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.passed or self.role is Role.WORKER:
            return
        self.collect_reports.append(report)
        if report.nodeid.endswith(".py") and self._mentions_matrix(report.nodeid):
            self.wake()  # a module that skipped or failed at import may hold matrix tests: plan them from source

    def _mentions_matrix(self, nodeid: str) -> bool:
        try:
            from matrix.core.textfiles import MAX_TEXT_BYTES, decode_python, read_limited

            return MATRIX_FIXTURE in decode_python(read_limited(self.config.rootpath / nodeid, MAX_TEXT_BYTES))
        except (OSError, ValueError, SyntaxError):
            return False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.role is Role.WORKER:
            return
        self.test_reports.append(report)
        if self.role is Role.CONTROLLER and getattr(report, REPORT_CELL_ATTR, None) is not None:
            self.wake()  # replays this report too

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Any) -> None:
        self.collected.append((node, ids))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        self.nodes_down.append((node, error))


def _marker_selects(definition: pytest.Function) -> tuple[str, ...]:
    selects: list[str] = []
    for mark in definition.iter_markers("matrix"):
        value = mark.kwargs.get("select", mark.args[0] if mark.args else None)
        if not isinstance(value, str) or set(mark.kwargs) - {"select"} or len(mark.args) > 1:
            pytest.fail(f"specmatrix: {definition.nodeid}: use @pytest.mark.matrix(select='<selector>')", pytrace=False)
        selects.append(value)
    return tuple(selects)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if MATRIX_FIXTURE not in metafunc.fixturenames:
        return
    from matrix.core.errors import SelectorError, SpecmatrixError

    audit = _audit(metafunc.config)
    selects = _marker_selects(metafunc.definition)
    values: list[object] = []
    ids: list[str] = []
    try:
        values, ids = audit.parameters_for(selects)
    except SelectorError as exc:
        pytest.fail(f"specmatrix: {metafunc.definition.nodeid}: {exc}", pytrace=False)
    except SpecmatrixError as exc:
        audit.planning_error = str(exc)  # raised once, as a usage error, when collection ends
    if not values:
        audit.empty_tests.add(metafunc.definition.nodeid)  # this shard has no cell for it: deselected, not skipped
    metafunc.parametrize(MATRIX_FIXTURE, values, ids=ids)


@pytest.fixture
def matrix_cell(request: pytest.FixtureRequest) -> Cell:
    """The matrix cell this test runs for; the plugin parametrizes every test that requests it."""
    pytest.fail("matrix_cell is parametrized by the specmatrix plugin: request it as a test (or fixture) argument", pytrace=False)


@pytest.fixture
def matrix_timing(request: pytest.FixtureRequest) -> MatrixTiming:
    """Record compile_seconds / setup_seconds for this item's report entry."""
    from matrix.audit.timing import MatrixTiming

    return MatrixTiming(request.node.user_properties)
