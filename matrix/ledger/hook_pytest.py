"""The pytest half of the ledger hook: a plugin object registered with every pytest plugin manager.

Imported by `matrix.ledger.hook` only once the process has imported `_pytest.config`.
"""

from __future__ import annotations

import os
from typing import Any

from matrix.ledger.hook import State, record_test, relative, text


class _PytestLedger:
    """A pytest plugin object: one record per test (its worst phase) and one per skipped or broken collector."""

    def __init__(self, state: State) -> None:
        self.state = state
        self.root = ""
        self.outcomes: dict[str, tuple[str, str]] = {}

    def pytest_configure(self, config: Any) -> None:
        self.root = str(config.rootpath)

    def _file_and_id(self, nodeid: str) -> tuple[str, str]:
        path, sep, rest = nodeid.partition("::")
        file = relative(self.state, os.path.join(self.root, path))
        return file, f"{file}{sep}{rest}"

    def pytest_collectreport(self, report: Any) -> None:
        try:
            if report.outcome == "passed" or "::" in report.nodeid or not report.nodeid:
                return
            file, test_id = self._file_and_id(report.nodeid)
            status = "skipped" if report.outcome == "skipped" else "error"
            record_test(self.state, file, test_id, status, _longrepr_reason(report))
        except Exception:
            pass

    def pytest_runtest_logreport(self, report: Any) -> None:
        try:
            if getattr(report, "node", None) is not None:
                return  # an xdist controller hears its workers' reports; each worker records its own
            status, reason = _pytest_status(report)
            previous = self.outcomes.get(report.nodeid)
            if status is not None and (previous is None or _RANK[status] > _RANK[previous[0]]):
                self.outcomes[report.nodeid] = (status, reason)
            if report.when == "teardown":
                final = self.outcomes.pop(report.nodeid, None)
                if final is not None:
                    file, test_id = self._file_and_id(report.nodeid)
                    record_test(self.state, file, test_id, final[0], final[1])
        except Exception:
            pass

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        try:
            self.state.exit_status = int(exitstatus)
            self.state.exit_how = "pytest"
        except Exception:
            pass


_RANK = {"passed": 0, "xfailed": 1, "xpassed": 1, "skipped": 2, "failed": 3, "error": 4}


def _longrepr_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return text(str(longrepr[2]).removeprefix("Skipped: "))
    rendered = str(getattr(report, "longreprtext", "") or "")
    lines = [line for line in rendered.splitlines() if line.strip()]
    return text(lines[-1].strip()) if lines else ""


def _pytest_status(report: Any) -> tuple[str | None, str]:
    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        return ("xfailed" if report.skipped else "xpassed"), str(wasxfail)
    if report.skipped:
        return "skipped", _longrepr_reason(report)
    if report.failed:
        return ("failed" if report.when == "call" else "error"), _longrepr_reason(report)
    return ("passed" if report.when == "call" else None), ""


def patch_pytest_config(state: State, config_module: Any) -> None:
    manager = config_module.PytestPluginManager
    if getattr(manager, "_specmatrix_ledger", False):
        return
    original = manager.__init__

    def patched(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        try:  # noqa: SIM105  (contextlib is not loaded at start-up; the hook imports nothing it does not need)
            self.register(_PytestLedger(state), "specmatrix-ledger")
        except Exception:
            pass

    manager.__init__ = patched
    manager._specmatrix_ledger = True
