"""Baseline of acknowledged error findings: stable fingerprints (path, test, kind, runner; no line numbers).

Format (`specmatrix.guards-baseline/1`, JSON)::

    {"schema": "specmatrix.guards-baseline/1",
     "entries": [{"fingerprint": "…", "path": "test/a/test_x.py", "test": "test/a/test_x.py::TestX",
                  "kind": "silent-skip", "runner": "4-gpu-b200", "reason": "…", "expires": "2027-01-31"}]}

`reason` and `expires` (ISO date or null) are the maintainer's; the rest identifies the finding. The static audit
(`specmatrix guards --baseline`) and the runtime ledger (`specmatrix ledger --baseline`) read the same file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.jsonio import loads_untrusted
from matrix.core.textfiles import read_text

SCHEMA = "specmatrix.guards-baseline/1"
MAX_BASELINE_BYTES = 16 * 1024 * 1024
MAX_ENTRIES = 100_000
_FIELDS = ("path", "test", "kind", "runner")


def fingerprint(path: str, test: str, kind: str, runner: str) -> str:
    """A short stable hash of what identifies a finding; line numbers are left out so edits do not churn it."""
    text = "\0".join((path, test, kind, runner))
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class BaselineEntry:
    path: str
    test: str
    kind: str
    runner: str
    reason: str = ""
    expires: dt.date | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.path, self.test, self.kind, self.runner)

    def expired(self, today: dt.date) -> bool:
        return self.expires is not None and self.expires < today


@dataclass(frozen=True, kw_only=True)
class Baseline:
    entries: tuple[BaselineEntry, ...]

    def by_fingerprint(self) -> dict[str, BaselineEntry]:
        return {e.fingerprint: e for e in self.entries}


def _entry(raw: Any, where: str) -> BaselineEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: an entry must be an object")
    values: dict[str, str] = {}
    for key in _FIELDS:
        value = raw.get(key)
        if not isinstance(value, str) or not value or len(value) > 4096:
            raise ConfigError(f"{where}: field {key!r} must be a non-empty string")
        values[key] = value
    reason = raw.get("reason", "")
    if not isinstance(reason, str):
        raise ConfigError(f"{where}: field 'reason' must be a string")
    expires_raw = raw.get("expires")
    expires: dt.date | None = None
    if expires_raw is not None:
        if not isinstance(expires_raw, str):
            raise ConfigError(f"{where}: field 'expires' must be an ISO date (YYYY-MM-DD) or null")
        try:
            expires = dt.date.fromisoformat(expires_raw)
        except ValueError:
            raise ConfigError(f"{where}: field 'expires' must be an ISO date (YYYY-MM-DD), not {expires_raw[:40]!r}") from None
    entry = BaselineEntry(reason=reason, expires=expires, **values)
    given = raw.get("fingerprint")
    if given is not None and given != entry.fingerprint:
        raise ConfigError(f"{where}: fingerprint {str(given)[:40]!r} does not match its path/test/kind/runner")
    return entry


def parse_baseline(text: str, where: str) -> Baseline:
    """Validate an untrusted baseline document; any problem is one `ConfigError` line."""
    if len(text) > MAX_BASELINE_BYTES:
        raise ConfigError(f"{where}: baseline larger than {MAX_BASELINE_BYTES} bytes")
    doc = loads_untrusted(text, where, ConfigError, what="baseline JSON", malformed="malformed")
    if not isinstance(doc, Mapping) or doc.get("schema") != SCHEMA:
        raise ConfigError(f"{where}: not a specmatrix guard baseline (schema must be {SCHEMA!r})")
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, list) or len(raw_entries) > MAX_ENTRIES:
        raise ConfigError(f"{where}: 'entries' must be a list of at most {MAX_ENTRIES} objects")
    entries = tuple(_entry(raw, f"{where}: entry {i + 1}") for i, raw in enumerate(raw_entries))
    first: dict[str, int] = {}
    for number, entry in enumerate(entries, start=1):
        seen = first.setdefault(entry.fingerprint, number)
        if seen != number:
            # Two entries for one finding: whichever won would silently drop the other's expiry or reason.
            raise ConfigError(
                f"{where}: entry {number} repeats entry {seen} (same path, test, kind and runner, fingerprint "
                f"{entry.fingerprint}); keep one of them"
            )
    return Baseline(entries=entries)


def read_baseline(path: Path) -> Baseline:
    return parse_baseline(read_text(path, ConfigError), str(path))


def baseline_document(entries: Iterable[BaselineEntry]) -> dict[str, Any]:
    """The JSON document for `entries`, sorted so a rewrite of the same findings is byte-identical."""
    ordered = sorted(entries, key=lambda e: (e.path, e.test, e.kind, e.runner))
    return {
        "schema": SCHEMA,
        "entries": [
            {
                "fingerprint": e.fingerprint,
                "path": e.path,
                "test": e.test,
                "kind": e.kind,
                "runner": e.runner,
                "reason": e.reason,
                "expires": e.expires.isoformat() if e.expires else None,
            }
            for e in ordered
        ],
    }


# --- comparing findings with a baseline (used by `specmatrix guards --baseline` / `--write-baseline`) ---------

ANY_RUNNER = "*"  # the runner field of a finding that names none (an unparsable file, an unscheduled suite)


def finding_keys(path: str, test: str, kind: str, runners: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """(path, test, kind, runner) for each runner of one finding; one entry with `*` when it names none."""
    names = list(runners) or [ANY_RUNNER]
    return [(path, test, kind, runner) for runner in names]


@dataclass(frozen=True, kw_only=True)
class BaselineComparison:
    """Which finding keys are new, which the baseline knows, and which entries are stale or expired."""

    new: frozenset[str]
    known: frozenset[str]
    stale: tuple[BaselineEntry, ...]
    expired: tuple[BaselineEntry, ...]


def compare_keys(baseline: Baseline, keys: Iterable[tuple[str, str, str, str]], today: dt.date) -> BaselineComparison:
    """Match current finding keys against a baseline by fingerprint (no line numbers, so edits do not churn it)."""
    entries = baseline.by_fingerprint()
    current = {fingerprint(*key) for key in keys}
    known = current & set(entries)
    expired = tuple(entries[f] for f in sorted(known) if entries[f].expired(today))
    stale = tuple(e for f, e in entries.items() if f not in current)
    return BaselineComparison(new=frozenset(current - known), known=frozenset(known), stale=stale, expired=expired)


def updated_entries(keys: Iterable[tuple[str, str, str, str]], previous: Baseline | None) -> list[BaselineEntry]:
    """Entries for the current findings, keeping the reason and expiry a maintainer wrote for ones already there."""
    kept = previous.by_fingerprint() if previous is not None else {}
    out: dict[str, BaselineEntry] = {}
    for path, test, kind, runner in keys:
        entry = BaselineEntry(path=path, test=test, kind=kind, runner=runner)
        old = kept.get(entry.fingerprint)
        out[entry.fingerprint] = old if old is not None else entry
    return list(out.values())


def baseline_text(entries: Iterable[BaselineEntry]) -> str:
    return json.dumps(baseline_document(entries), indent=2) + "\n"
