"""What the audit concludes from recorded statuses; the run and `specmatrix audit` both call `evaluate`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from matrix.core.finding import Severity
from matrix.core.model import Outcome, SkipPolicy
from matrix.core.report import CellResult, CellStatus, FindingKind, OutsideResult, Report, StoredFinding

# Findings about the allowlist file itself: a saved report cannot re-derive them, so they are carried over.
CARRIED_KINDS = frozenset({FindingKind.EXPIRED_ALLOW, FindingKind.UNUSED_ALLOW})


def _cell_finding(cell: CellResult) -> StoredFinding | None:
    skipped = cell.skip_reason or "no reason given"
    if cell.status is CellStatus.SKIPPED_UNEXPECTED:
        return StoredFinding(
            kind=FindingKind.UNEXPECTED_SKIP,
            severity=Severity.ERROR,
            subject=cell.nodeid,
            message=f"skipped ({skipped}) but the matrix says it must run ({cell.reason})",
        )
    if cell.status is CellStatus.SKIPPED_EXPECTED and cell.expected != Outcome.SKIP.value:
        # The status contradicts the recorded expectation (an edited or mis-merged report): a must-run cell skipped.
        return StoredFinding(
            kind=FindingKind.UNEXPECTED_SKIP,
            severity=Severity.ERROR,
            subject=cell.nodeid,
            message=f"recorded as an expected skip ({skipped}) but its expected outcome is {cell.expected!r}: it must run",
        )
    if cell.status is CellStatus.CRASHED:
        return StoredFinding(
            kind=FindingKind.CRASHED, severity=Severity.ERROR, subject=cell.nodeid, message=cell.message or "crashed"
        )
    if cell.status is CellStatus.NOT_RUN:
        return StoredFinding(
            kind=FindingKind.NOT_RUN, severity=Severity.ERROR, subject=cell.nodeid, message=cell.message or "not run"
        )
    if cell.expected != Outcome.SKIP.value:
        return None
    if cell.status is CellStatus.PASSED:
        return StoredFinding(
            kind=FindingKind.RULE_TOO_STRICT,
            severity=Severity.WARNING,
            subject=cell.nodeid,
            message=f"expected to skip ({cell.reason}) but ran and passed: rule {cell.rule} may be too strict",
        )
    if cell.status in (CellStatus.FAILED, CellStatus.ERROR):
        return StoredFinding(
            kind=FindingKind.GUARD_MISSING,
            severity=Severity.ERROR,
            subject=cell.nodeid,
            message=f"expected to skip ({cell.reason}) and it {cell.status.value} when run: "
            f"nothing rejects this configuration before it breaks ({cell.message or 'no message'})",
        )
    return None


def cell_findings(cells: Iterable[CellResult]) -> list[StoredFinding]:
    return [f for c in cells if (f := _cell_finding(c)) is not None]


def outside_findings(outside: Iterable[OutsideResult], policy: SkipPolicy) -> list[StoredFinding]:
    """On a strict runner every skip outside the matrix needs a live allowlist entry."""
    if policy is not SkipPolicy.STRICT:
        return []
    return [
        StoredFinding(
            kind=FindingKind.UNALLOWED_SKIP,
            severity=Severity.ERROR,
            subject=o.nodeid,
            message=f"skipped ({o.skip_reason or 'no reason given'}) on a strict runner and no live allowlist entry matches",
        )
        for o in outside
        if o.status == "skipped" and o.allowed_by is None
    ]


def evaluate(
    cells: Sequence[CellResult], outside: Sequence[OutsideResult], policy: SkipPolicy, carried: Iterable[StoredFinding] = ()
) -> tuple[StoredFinding, ...]:
    """Every finding, errors first, from statuses alone (plus the allowlist findings carried in)."""
    found = cell_findings(cells) + outside_findings(outside, policy) + [f for f in carried if f.kind in CARRIED_KINDS]
    return tuple(sorted(found, key=lambda f: (f.severity is not Severity.ERROR, f.kind is not FindingKind.UNEXPECTED_SKIP)))


def recheck(report: Report) -> tuple[StoredFinding, ...]:
    """Re-derive a saved report's findings from its recorded statuses."""
    return evaluate(report.cells, report.outside, SkipPolicy(report.runner.skip_policy), report.findings)
