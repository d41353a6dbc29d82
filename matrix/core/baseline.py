"""The baseline file every finding command reads (`--baseline`) and writes (`--write-baseline`), keyed from the
repository root.

Format (`specmatrix.baseline/2`, JSON)::

    {"schema": "specmatrix.baseline/2",
     "entries": [{"fingerprint": "…", "path": "test/registered/a/test_x.py",
                  "test": "test/registered/a/test_x.py::TestX", "kind": "silent-skip", "runner": "4-gpu-b200",
                  "reason": "…", "expires": "2027-01-31"}]}

`path` and `test` start at the repository root (the git top level above the audited folder, or `--root`), so a
run over a narrower folder (`test/registered/attention` instead of `test/registered`) still matches its entries,
and entries outside the folder audited are out of scope, not stale. `reason` and `expires` (ISO date or null) are
the maintainer's; the rest identifies the finding (no line numbers: edits do not churn it), and `fingerprint` is
`matrix.core.finding.fingerprint` of those four fields, the value SARIF's `partialFingerprints` carries.

The older `specmatrix.guards-baseline/1` keyed paths from the folder audited: it is read as relative to the folder
audited now, and the command says so once (`--write-baseline` rewrites it keyed from the root).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.finding import Finding, fingerprint
from matrix.core.jsonio import dumps_indented, loads_untrusted
from matrix.core.textfiles import read_text

BASELINE_SCHEMA = "specmatrix.baseline/2"
LEGACY_SCHEMA = "specmatrix.guards-baseline/1"  # paths from the folder audited
MAX_BASELINE_BYTES = 16 * 1024 * 1024
MAX_ENTRIES = 100_000
ANY_RUNNER = "*"  # the runner field of a finding that names none (an unparsable file, an unscheduled suite)
_FIELDS = ("path", "test", "kind", "runner")

Key = tuple[str, str, str, str]  # (path, test, kind, runner), path and test from the repository root


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
        return key_fingerprint((self.path, self.test, self.kind, self.runner))

    def expired(self, today: dt.date) -> bool:
        return self.expires is not None and self.expires < today


@dataclass(frozen=True, kw_only=True)
class Baseline:
    entries: tuple[BaselineEntry, ...]
    legacy: bool = False  # read from a /1 file: paths from the folder audited, not the repository root

    def by_fingerprint(self) -> dict[str, BaselineEntry]:
        return {e.fingerprint: e for e in self.entries}

    def keyed_from(self, prefix: str) -> Baseline:
        """Entries keyed from the repository root: a /1 file's paths are taken as relative to `prefix`."""
        if not self.legacy:
            return self
        moved = tuple(replace(e, path=in_repo(prefix, e.path), test=_test_key(prefix, e.path, e.test)) for e in self.entries)
        return Baseline(entries=moved)

    def under(self, prefix: str) -> Baseline:
        """Entries inside `prefix`, keyed from it (readers that key findings from the folder they audit)."""
        if self.legacy or not prefix:
            return self
        head = prefix + "/"
        kept = tuple(
            replace(e, path=e.path.removeprefix(head), test=e.test.removeprefix(head))
            for e in self.entries
            if e.path.startswith(head)
        )
        return Baseline(entries=kept, legacy=True)


def in_repo(prefix: str, path: str) -> str:
    """A path relative to the folder audited, as a path from the repository root (`prefix` is that folder's)."""
    return f"{prefix}/{path}" if prefix and path else path or prefix


def _test_key(prefix: str, path: str, test: str) -> str:
    """A finding's subject from the root: node ids and file subjects start with their path, other names do not."""
    return in_repo(prefix, test) if path and test.startswith(path) else test


def key_fingerprint(key: Key) -> str:
    """The one fingerprint of a finding: a baseline entry's, a gate's lookup, `Finding.fingerprint`, SARIF's
    `partialFingerprints` (a finding on several runners is keyed by their names joined with commas)."""
    return fingerprint(*key)


def keys_of(finding: Finding, prefix: str) -> list[Key]:
    """(path, test, kind, runner) from the repository root, one per runner of the finding (`*` when it names none)."""
    path = in_repo(prefix, finding.path)
    test = _test_key(prefix, finding.path, finding.scope)
    return [(path, test, finding.kind, runner) for runner in finding.runners or (ANY_RUNNER,)]


def stamped(findings: Iterable[Finding], prefix: str) -> tuple[Finding, ...]:
    """Every finding with its fingerprint set: the one of its baseline key (its runners joined when several)."""
    out = []
    for f in findings:
        key = (in_repo(prefix, f.path), _test_key(prefix, f.path, f.scope), f.kind, ",".join(f.runners) or ANY_RUNNER)
        out.append(replace(f, fingerprint=key_fingerprint(key)))
    return tuple(out)


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
    schema = doc.get("schema") if isinstance(doc, Mapping) else None
    if schema not in (BASELINE_SCHEMA, LEGACY_SCHEMA):
        raise ConfigError(f"{where}: not a specmatrix baseline (schema must be {BASELINE_SCHEMA!r})")
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
    return Baseline(entries=entries, legacy=schema == LEGACY_SCHEMA)


def read_baseline(path: Path) -> Baseline:
    return parse_baseline(read_text(path, ConfigError), str(path))


def legacy_note(path: Path, prefix: str) -> str:
    """The one line a command prints when it reads a /1 baseline (paths from the folder then audited)."""
    return (
        f"{path}: a {LEGACY_SCHEMA} baseline keys paths from the folder audited; read as relative to "
        f"{prefix or 'the repository root'} (--write-baseline rewrites it keyed from the repository root)"
    )


def baseline_document(entries: Iterable[BaselineEntry]) -> dict[str, Any]:
    """The JSON document for `entries`, sorted so a rewrite of the same findings is byte-identical."""
    ordered = sorted(entries, key=lambda e: (e.path, e.test, e.kind, e.runner))
    return {
        "schema": BASELINE_SCHEMA,
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


def baseline_text(entries: Iterable[BaselineEntry]) -> str:
    return dumps_indented(baseline_document(entries)) + "\n"


@dataclass(frozen=True, kw_only=True)
class BaselineComparison:
    """Which finding keys are new, which the baseline knows, and which entries are stale or expired."""

    new: frozenset[str]
    known: frozenset[str]
    stale: tuple[BaselineEntry, ...]
    expired: tuple[BaselineEntry, ...]


def _inside(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + "/")


def compare_keys(baseline: Baseline, keys: Iterable[Key], today: dt.date, prefix: str = "") -> BaselineComparison:
    """Match current finding keys against a baseline by fingerprint; entries outside `prefix` are not judged."""
    entries = baseline.by_fingerprint()
    current = {key_fingerprint(key) for key in keys}
    known = current & set(entries)
    expired = tuple(entries[f] for f in sorted(known) if entries[f].expired(today))
    stale = tuple(e for f, e in entries.items() if f not in current and _inside(e.path, prefix))
    return BaselineComparison(new=frozenset(current - known), known=frozenset(known), stale=stale, expired=expired)


def updated_entries(keys: Iterable[Key], previous: Baseline | None, prefix: str = "") -> list[BaselineEntry]:
    """Entries for the current findings, keeping the reason and expiry a maintainer wrote for ones already there,
    and the previous entries outside the folder audited (a narrower run does not drop the rest of the tree's)."""
    kept = previous.by_fingerprint() if previous is not None else {}
    out: dict[str, BaselineEntry] = {f: e for f, e in kept.items() if not _inside(e.path, prefix)}
    for path, test, kind, runner in keys:
        entry = BaselineEntry(path=path, test=test, kind=kind, runner=runner)
        old = kept.get(entry.fingerprint)
        out[entry.fingerprint] = old if old is not None else entry
    return list(out.values())
