"""Accounting: every planned item ends with exactly one status; reports are folded in as they arrive."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from matrix.audit.outcome import Observed, cell_status, observed_phase, outside_status
from matrix.core.model import Expectation, Outcome
from matrix.core.report import CellResult, CellStatus, OutsideResult

TIMING_KEYS = ("compile_seconds", "setup_seconds")
_PHASES = frozenset({"setup", "call", "teardown"})


@dataclass(frozen=True, kw_only=True, slots=True)
class PlannedItem:
    """One test function over one cell, known before anything runs."""

    nodeid: str
    test: str
    cell_id: str


class _Tally:
    """What the reports of one node id said so far (all attempts)."""

    __slots__ = ("attempts", "duration", "message", "running", "skip_reason", "start", "timings", "worker", "worst")

    def __init__(self) -> None:
        self.worst: Observed | None = None
        self.skip_reason: str | None = None
        self.message: str | None = None
        self.duration = 0.0
        self.start: float | None = None  # epoch seconds of the first phase that began (pytest's report.start)
        self.attempts = 0
        self.running = False  # between a setup and its teardown
        self.worker: str | None = None
        self.timings: dict[str, float] | None = None


class Accounts:
    """Planned items and the observations for them (and for tests outside the matrix)."""

    def __init__(self) -> None:
        self._planned: dict[str, PlannedItem] = {}
        self._tallies: dict[str, _Tally] = {}

    def plan(self, item: PlannedItem) -> None:
        self._planned.setdefault(item.nodeid, item)

    def unplan(self, nodeid: str) -> None:
        self._planned.pop(nodeid, None)

    def is_planned(self, nodeid: str) -> bool:
        return nodeid in self._planned

    @property
    def planned_count(self) -> int:
        return len(self._planned)

    def phase_passed(self, nodeid: str, when: str, duration: float, start: float | None = None) -> None:
        """The common case, kept cheap (20,000 items make 40,000 of these): a setup or teardown that passed."""
        tally = self._tallies.get(nodeid)
        if tally is None:
            tally = self._tallies[nodeid] = _Tally()
        tally.duration += duration
        if tally.start is None:
            tally.start = start
        if when == "setup":
            tally.attempts += 1
            tally.running = True
        else:
            tally.running = False

    def record(
        self,
        nodeid: str,
        when: str,
        outcome: str,
        *,
        duration: float = 0.0,
        start: float | None = None,
        xfail_reason: str | None = None,
        skip_reason: str | None = None,
        message: str | None = None,
        worker: str | None = None,
        timings: Mapping[str, float] | None = None,
    ) -> None:
        """Fold one phase report in; the worst observation across phases and attempts wins."""
        tally = self._tallies.get(nodeid)
        if tally is None:
            tally = self._tallies[nodeid] = _Tally()
        tally.duration += duration
        if tally.start is None:
            tally.start = start
        if when == "setup" or (when not in _PHASES and not tally.running):
            tally.attempts += 1  # a crash before any setup report is an attempt of its own
        tally.running = when in ("setup", "call")
        if worker is not None:
            tally.worker = worker
        if timings:
            tally.timings = dict(timings)
        observed = observed_phase(when, outcome, xfail_reason)
        if observed is None or (tally.worst is not None and observed <= tally.worst):
            return
        tally.worst = observed
        if observed is Observed.XFAILED:
            tally.skip_reason = f"xfail: {xfail_reason}"
        elif observed is Observed.SKIPPED:
            tally.skip_reason = f"xfail: {xfail_reason}" if xfail_reason else skip_reason
        if message is not None:
            tally.message = message

    def results(
        self, expectations: Mapping[str, Expectation], origin: float, *, collected: Iterable[str] = ()
    ) -> tuple[tuple[CellResult, ...], tuple[OutsideResult, ...]]:
        """One CellResult per planned item (in plan order) and one OutsideResult per other test.

        Other tests are those reported plus those `collected` but never reported (`not-run`: -x, Ctrl-C, a dead
        worker), so every collected test has exactly one status. `origin` is the session's start (epoch
        seconds); each item's `started` is counted from it.
        """
        cells = tuple(self._cell_result(item, expectations[item.cell_id], origin) for item in self._planned.values())
        outside = tuple(
            OutsideResult(
                nodeid=nodeid,
                status=outside_status(t.worst),
                skip_reason=t.skip_reason,
                duration=round(t.duration, 6),
                started=round(t.start - origin, 3) if t.start is not None else None,
                worker=t.worker,
            )
            for nodeid, t in self._tallies.items()
            if nodeid not in self._planned
        )
        missing = [n for n in dict.fromkeys(collected) if n not in self._planned and n not in self._tallies]
        never = tuple(OutsideResult(nodeid=n, status=outside_status(None)) for n in missing)
        return cells, outside + never

    def _cell_result(self, item: PlannedItem, exp: Expectation, origin: float) -> CellResult:
        tally = self._tallies.get(item.nodeid)
        observed = tally.worst if tally is not None else None
        status = cell_status(exp.outcome, observed)
        blocking = exp.blocking
        message = tally.message if tally is not None else None
        if status is CellStatus.NOT_RUN:
            message = "planned but never reported: the session stopped or its worker died before reaching it"
        elif tally is not None and tally.attempts > 1:
            message = f"{tally.attempts} attempts; worst counted" + (f": {message}" if message else "")
        timings = (tally.timings if tally is not None else None) or {}
        start = tally.start if tally is not None else None
        return CellResult(
            nodeid=item.nodeid,
            cell=item.cell_id,
            test=item.test,
            expected=exp.outcome.value,
            rule=blocking[0].rule.id if exp.outcome is Outcome.SKIP and blocking else None,
            reason=exp.reason,
            status=status,
            skip_reason=tally.skip_reason if tally is not None else None,
            message=message,
            duration=round(tally.duration, 6) if tally is not None else 0.0,
            started=round(start - origin, 3) if start is not None else None,
            compile_seconds=timings.get("compile_seconds"),
            setup_seconds=timings.get("setup_seconds"),
            worker=tally.worker if tally is not None else None,
        )
