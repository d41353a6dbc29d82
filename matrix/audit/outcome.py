"""Classify what pytest reported for an item into one audit status; pure."""

from __future__ import annotations

from enum import IntEnum

from matrix.core.model import Outcome
from matrix.core.report import CellStatus

NOT_RUN_XFAIL = "[NOTRUN]"


class Observed(IntEnum):
    """What an item did, worst last: when attempts disagree (xdist restarts, `--dist each`) the worst one counts."""

    PASSED = 1
    SKIPPED = 2
    XFAILED = 3
    FAILED = 4
    ERROR = 5
    CRASHED = 6


def observed_phase(when: str, outcome: str, xfail_reason: str | None) -> Observed | None:
    """One phase report as an observation; None for a phase that says nothing yet (a passed setup)."""
    if outcome == "skipped":
        if xfail_reason is None or xfail_reason.startswith(NOT_RUN_XFAIL):
            return Observed.SKIPPED  # xfail(run=False) never ran the test: a skip by another name
        return Observed.XFAILED
    if outcome == "failed":
        if when == "call":
            return Observed.FAILED
        if when in ("setup", "teardown"):
            return Observed.ERROR
        return Observed.CRASHED  # xdist's synthesized report for a dead worker has when="???"
    if when == "call":
        return Observed.PASSED  # includes a non-strict XPASS: the cell ran and passed
    return None


_RUN_CELL = {
    Observed.PASSED: CellStatus.PASSED,
    Observed.SKIPPED: CellStatus.SKIPPED_UNEXPECTED,
    # An xfail on a cell that must run hides that it did not pass; pytest files it under "skipped" too.
    Observed.XFAILED: CellStatus.SKIPPED_UNEXPECTED,
    Observed.FAILED: CellStatus.FAILED,
    Observed.ERROR: CellStatus.ERROR,
    Observed.CRASHED: CellStatus.CRASHED,
}

_SKIP_CELL = {
    **_RUN_CELL,
    Observed.SKIPPED: CellStatus.SKIPPED_EXPECTED,
    # Run on purpose (--matrix-run-expected-skips) and it did not pass: the rule is right.
    Observed.XFAILED: CellStatus.FAILED,
}


def cell_status(expected: Outcome, observed: Observed | None) -> CellStatus:
    """The one status of a planned item; nothing observed means it never ran."""
    if observed is None:
        return CellStatus.NOT_RUN
    return (_RUN_CELL if expected is Outcome.RUN else _SKIP_CELL)[observed]


_OUTSIDE = {
    Observed.PASSED: "passed",
    Observed.SKIPPED: "skipped",
    Observed.XFAILED: "xfailed",
    Observed.FAILED: "failed",
    Observed.ERROR: "error",
    Observed.CRASHED: "crashed",
}


def outside_status(observed: Observed | None) -> str:
    """Status of a test that does not use the matrix."""
    return "not-run" if observed is None else _OUTSIDE[observed]
