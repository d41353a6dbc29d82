"""What the audit concludes from recorded statuses; the run and `specmatrix audit` both call `evaluate`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from matrix.core.model import Outcome, SkipPolicy
from matrix.core.report import CellResult, CellStatus, Finding, FindingKind, OutsideResult, Report, Severity

# Findings about the allowlist file itself: a saved report cannot re-derive them, so they are carried over.
CARRIED_KINDS = frozenset({FindingKind.EXPIRED_ALLOW, FindingKind.UNUSED_ALLOW})


def _cell_finding(cell: CellResult) -> Finding | None:
    skipped = cell.skip_reason or "no reason given"
    if cell.status is CellStatus.SKIPPED_UNEXPECTED:
        return Finding(
            kind=FindingKind.UNEXPECTED_SKIP,
            severity=Severity.ERROR,
            subject=cell.nodeid,
            message=f"skipped ({skipped}) but the matrix says it must run ({cell.reason})",
        )
    if cell.status is CellStatus.SKIPPED_EXPECTED and cell.expected != Outcome.SKIP.value:
        # The status contradicts the recorded expectation (an edited or mis-merged report): a must-run cell skipped.
        return Finding(
            kind=FindingKind.UNEXPECTED_SKIP,
            severity=Severity.ERROR,
            subject=cell.nodeid,
            message=f"recorded as an expected skip ({skipped}) but its expected outcome is {cell.expected!r}: it must run",
        )
    if cell.status is CellStatus.CRASHED:
        return Finding(kind=FindingKind.CRASHED, severity=Severity.ERROR, subject=cell.nodeid, message=cell.message or "crashed")
    if cell.status is CellStatus.NOT_RUN:
        return Finding(kind=FindingKind.NOT_RUN, severity=Severity.ERROR, subject=cell.nodeid, message=cell.message or "not run")
    if cell.expected != Outcome.SKIP.value:
        return None
    if cell.status is CellStatus.PASSED:
        return Finding(
            kind=FindingKind.RULE_TOO_STRICT,
            severity=Severity.WARNING,
            subject=cell.nodeid,
            message=f"expected to skip ({cell.reason}) but ran and passed: rule {cell.rule} may be too strict",
        )
    if cell.status in (CellStatus.FAILED, CellStatus.ERROR):
        return Finding(
            kind=FindingKind.GUARD_MISSING,
            severity=Severity.ERROR,
            subject=cell.nodeid,
            message=f"expected to skip ({cell.reason}) and it {cell.status.value} when run: "
            f"nothing rejects this configuration before it breaks ({cell.message or 'no message'})",
        )
    return None


def cell_findings(cells: Iterable[CellResult]) -> list[Finding]:
    return [f for c in cells if (f := _cell_finding(c)) is not None]


def outside_findings(outside: Iterable[OutsideResult], policy: SkipPolicy) -> list[Finding]:
    """On a strict runner every skip outside the matrix needs a live allowlist entry."""
    if policy is not SkipPolicy.STRICT:
        return []
    return [
        Finding(
            kind=FindingKind.UNALLOWED_SKIP,
            severity=Severity.ERROR,
            subject=o.nodeid,
            message=f"skipped ({o.skip_reason or 'no reason given'}) on a strict runner and no live allowlist entry matches",
        )
        for o in outside
        if o.status == "skipped" and o.allowed_by is None
    ]


def evaluate(
    cells: Sequence[CellResult], outside: Sequence[OutsideResult], policy: SkipPolicy, carried: Iterable[Finding] = ()
) -> tuple[Finding, ...]:
    """Every finding, errors first, from statuses alone (plus the allowlist findings carried in)."""
    found = cell_findings(cells) + outside_findings(outside, policy) + [f for f in carried if f.kind in CARRIED_KINDS]
    return tuple(sorted(found, key=lambda f: (f.severity is not Severity.ERROR, f.kind is not FindingKind.UNEXPECTED_SKIP)))


def recheck(report: Report) -> tuple[Finding, ...]:
    """Re-derive a saved report's findings from its recorded statuses."""
    return evaluate(report.cells, report.outside, SkipPolicy(report.runner.skip_policy), report.findings)
