"""The allowlist for skips outside the matrix on strict runners: TOML `[[allow]]` entries, each with an expiry."""

from __future__ import annotations

import datetime as dt
import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from matrix.core.errors import UsageError
from matrix.core.finding import Severity
from matrix.core.report import FindingKind, OutsideResult, StoredFinding

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
    findings: tuple[StoredFinding, ...]  # expired and unused entries


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
        StoredFinding(
            kind=FindingKind.EXPIRED_ALLOW,
            severity=Severity.ERROR,
            subject=e.label,
            message=f"expired on {e.expires.isoformat()}: fix the skip or renew the entry ({e.link})",
        )
        for e in entries
        if e.expires < today
    ]
    findings += [
        StoredFinding(
            kind=FindingKind.UNUSED_ALLOW,
            severity=Severity.WARNING,
            subject=e.label,
            message=f"matched no skip in this run: remove it if the skip is gone ({e.link})",
        )
        for e in live
        if e.label not in used
    ]
    return AllowVerdict(outside=tuple(judged), findings=tuple(findings))
