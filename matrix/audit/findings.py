"""What the audit concludes from recorded statuses, and the allowlist that accepts skips outside the matrix.

The run and `specmatrix audit` both call `evaluate`. The allowlist (skips outside the matrix on strict runners)
is TOML `[[allow]]` entries, each with an expiry. Pure.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from matrix.core.errors import UsageError
from matrix.core.finding import Finding, Severity
from matrix.core.model import Outcome, SkipPolicy
from matrix.core.report import CellResult, CellStatus, FindingKind, OutsideResult, Report, audit_finding

# Findings about the allowlist file itself: a saved report cannot re-derive them, so they are carried over.
CARRIED_KINDS = frozenset({FindingKind.EXPIRED_ALLOW, FindingKind.UNUSED_ALLOW})


def _cell_finding(cell: CellResult) -> Finding | None:
    skipped = cell.skip_reason or "no reason given"
    if cell.status is CellStatus.SKIPPED_UNEXPECTED:
        return audit_finding(
            kind=FindingKind.UNEXPECTED_SKIP,
            subject=cell.nodeid,
            message=f"skipped ({skipped}) but the matrix says it must run ({cell.reason})",
        )
    if cell.status is CellStatus.SKIPPED_EXPECTED and cell.expected != Outcome.SKIP.value:
        # The status contradicts the recorded expectation (an edited or mis-merged report): a must-run cell skipped.
        return audit_finding(
            kind=FindingKind.UNEXPECTED_SKIP,
            subject=cell.nodeid,
            message=f"recorded as an expected skip ({skipped}) but its expected outcome is {cell.expected!r}: it must run",
        )
    if cell.status is CellStatus.CRASHED:
        return audit_finding(kind=FindingKind.CRASHED, subject=cell.nodeid, message=cell.message or "crashed")
    if cell.status is CellStatus.NOT_RUN:
        return audit_finding(kind=FindingKind.NOT_RUN, subject=cell.nodeid, message=cell.message or "not run")
    if cell.expected != Outcome.SKIP.value:
        return None
    if cell.status is CellStatus.PASSED:
        return audit_finding(
            kind=FindingKind.RULE_TOO_STRICT,
            subject=cell.nodeid,
            message=f"expected to skip ({cell.reason}) but ran and passed: rule {cell.rule} may be too strict",
        )
    if cell.status in (CellStatus.FAILED, CellStatus.ERROR):
        return audit_finding(
            kind=FindingKind.GUARD_MISSING,
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
        audit_finding(
            kind=FindingKind.UNALLOWED_SKIP,
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
    return tuple(sorted(found, key=lambda f: (f.severity is not Severity.ERROR, f.kind != FindingKind.UNEXPECTED_SKIP)))


def recheck(report: Report) -> tuple[Finding, ...]:
    """Re-derive a saved report's findings from its recorded statuses."""
    return evaluate(report.cells, report.outside, SkipPolicy(report.runner.skip_policy), report.findings)


_KEYS = {"test", "reason", "expires", "link"}


@dataclass(frozen=True, kw_only=True)
class AllowEntry:
    """Skips of tests matching `test` (a node-id glob) whose reason matches `reason` (a regex) are allowed until `expires`."""

    label: str
    test: str
    reason: re.Pattern[str]
    expires: dt.date
    link: str

    def covers(self, nodeid: str, skip_reason: str) -> bool:
        return fnmatch.fnmatchcase(nodeid, self.test) and self.reason.search(skip_reason) is not None


def _text(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where}: '{key}' must be a non-empty string")
    return value


def _date(value: Any, where: str) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    raise UsageError(f"{where}: 'expires' must be a date such as 2026-09-30, got {value!r}")


def parse_allowlist(doc: Mapping[str, Any], source: str) -> tuple[AllowEntry, ...]:
    """Validate a parsed allowlist document; every problem is one line naming the file and the entry."""
    unknown = sorted(set(doc) - {"allow"})
    if unknown:
        raise UsageError(f"{source}: unknown top-level key {unknown[0]!r} (entries go in [[allow]] tables)")
    raw = doc.get("allow", [])
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise UsageError(f"{source}: 'allow' must be an array of tables ([[allow]])")
    entries: list[AllowEntry] = []
    for i, entry in enumerate(raw):
        where = f"{source}: [[allow]] #{i + 1}"
        extra = sorted(set(entry) - _KEYS)
        if extra:
            raise UsageError(f"{where}: unknown key {extra[0]!r} (allowed: {', '.join(sorted(_KEYS))})")
        test = _text(entry, "test", where)
        pattern = _text(entry, "reason", where)
        try:
            reason = re.compile(pattern)
        except re.error as exc:
            raise UsageError(f"{where}: 'reason' is not a valid regular expression: {exc}") from None
        if "expires" not in entry:
            raise UsageError(f"{where}: 'expires' is required (a date after which the skip must be gone)")
        entries.append(
            AllowEntry(
                label=f"{source}#{i + 1} ({test})",
                test=test,
                reason=reason,
                expires=_date(entry["expires"], where),
                link=_text(entry, "link", where),
            )
        )
    return tuple(entries)


@dataclass(frozen=True, kw_only=True)
class AllowVerdict:
    outside: tuple[OutsideResult, ...]  # with allowed_by filled where a live entry matched
    findings: tuple[Finding, ...]  # expired and unused entries


def judge(outside: Sequence[OutsideResult], entries: Sequence[AllowEntry], today: dt.date) -> AllowVerdict:
    """Match each skip to the first live entry; expired entries are errors, live entries that matched nothing warnings."""
    live = [e for e in entries if e.expires >= today]
    used: set[str] = set()
    judged: list[OutsideResult] = []
    for result in outside:
        if result.status != "skipped":
            judged.append(result)
            continue
        entry = next((e for e in live if e.covers(result.nodeid, result.skip_reason or "")), None)
        if entry is None:
            judged.append(result)
            continue
        used.add(entry.label)
        judged.append(replace(result, allowed_by=f"{entry.label} until {entry.expires.isoformat()}: {entry.link}"))
    findings = [
        audit_finding(
            kind=FindingKind.EXPIRED_ALLOW,
            subject=e.label,
            message=f"expired on {e.expires.isoformat()}: fix the skip or renew the entry ({e.link})",
        )
        for e in entries
        if e.expires < today
    ]
    findings += [
        audit_finding(
            kind=FindingKind.UNUSED_ALLOW,
            subject=e.label,
            message=f"matched no skip in this run: remove it if the skip is gone ({e.link})",
        )
        for e in live
        if e.label not in used
    ]
    return AllowVerdict(outside=tuple(judged), findings=tuple(findings))
