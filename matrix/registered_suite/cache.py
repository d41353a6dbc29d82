"""The guard audit's results cache: one entry per audited file, keyed by its path and a hash of its bytes.

One file per combination of settings (runner profiles, suite map, workflows, installed modules) and of this
package's own source, so a change to either starts a fresh cache. Each entry is sealed with a digest of its key
and its text and checked against the schema when read, so an edited or malformed entry is a miss, never a
verdict. Only the files of the latest run are kept. The cache is an optimisation: a missing, unreadable or
malformed cache file is ignored, and a failed write never fails the audit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import OutputError
from matrix.core.finding import Finding, Tool
from matrix.core.jsonio import canonical, seal_text
from matrix.core.textfiles import read_limited
from matrix.guards.model import GuardFindingKind, finding_fields
from matrix.guards.predicates import PREDICATES
from matrix.registered_suite.audit import AuditSettings, FileAudit

# /3: entries hold core `Finding` fields (subject, source, message); a /2 file is a clean miss.
# /4: an entry holds its audit as the canonical JSON text the seal is taken over, so a warm run checks a seal by
# hashing that text rather than writing the audit out again; a /3 file is a clean miss.
# /5: the file is lines, `KEY SEAL TEXT`, under a first line naming the schema (the /4 file held each text as a
# JSON string, whose quotes were escaped on writing and unescaped on reading), and a finding in TEXT is a list of
# its `finding_fields` values rather than an object (no key names to write, read and check); a /4 file is a miss.
CACHE_SCHEMA = "specmatrix.guards-cache/5"
MAX_CACHE_BYTES = 32 * 1024 * 1024  # one entry per audited file, about 1 KB each: sglang's tree is a few MB
_PACKAGE = Path(__file__).parent


def settings_key(settings: AuditSettings) -> str | None:
    """A hash of everything besides the file that decides its findings; None when that cannot be hashed."""
    if settings.predicates is not PREDICATES:
        return None  # a custom predicate table (tests) has no stable identity
    code = hashlib.sha256()
    for path in sorted(_PACKAGE.glob("*.py")):
        code.update(path.read_bytes())
    # A schedule from the schedule cache is keyed by the digest of the CI files it was read from (its content
    # follows from them); any other by its repr (sglang's 600 entries: 10 ms of repr and hashing a run).
    known = None
    if settings.schedule is not None:
        from matrix.schedule.cache import fingerprint  # imported only by a run with a schedule

        known = fingerprint(settings.schedule)
    parts = (
        sorted((name, repr(p)) for name, p in settings.runners.items()),
        repr(settings.suite_map),
        sorted(settings.known_suites) if settings.known_suites is not None else None,
        settings.only_runners,
        sorted(settings.installed),
        f"read from CI files {known}" if known is not None else repr(settings.schedule),
        f"matrix {settings.intent.key}" if settings.intent is not None else None,
        code.hexdigest(),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def file_key(display: str, data: bytes) -> str:
    """SHA-256 of the display path, a NUL and the bytes (fed in two parts: the bytes are not copied)."""
    digest = hashlib.sha256(display.encode() + b"\0")
    digest.update(data)
    return digest.hexdigest()


# A finding in an entry: the values of `finding_fields`, in this order.
ENTRY_FIELDS = ("kind", "path", "line", "test", "runners", "guard", "reason", "hint")


def encode(audit: FileAudit | None) -> Any:
    """An entry: each finding as the list of its `finding_fields` values (tool and severity follow from the kind)."""
    if audit is None:
        return None
    findings = []
    for finding in audit.findings:
        fields = finding_fields(finding)
        findings.append([fields[name] for name in ENTRY_FIELDS])
    return {"findings": findings, "registered": audit.registered, "runners": list(audit.runners)}


def entry_text(audit: FileAudit | None) -> str:
    """The text an entry stores: `encode(audit)` as canonical JSON (ASCII, so never a line break in it)."""
    return canonical(encode(audit))


def seal(key: str, text: str) -> str:
    """A digest of an entry's text bound to its file key: an entry edited by hand, or moved to another key, no longer matches."""
    return seal_text(CACHE_SCHEMA, key, text)


class BadEntry(Exception):
    """A cache entry that does not match the schema; the file is audited again."""


_AUDIT_KEYS = frozenset({"findings", "registered", "runners"})
MAX_ENTRY_FINDINGS = 100_000
_KINDS = frozenset(kind.value for kind in GuardFindingKind)
_LINE_LIMIT = 2**31
_SHAPE = "a finding must be a list of " + ", ".join(ENTRY_FIELDS)
_DECODER = json.JSONDecoder()
_new = object.__new__
_set = object.__setattr__


def _finding(raw: Any, display: str) -> Finding:
    """`guard_finding(...)` of an entry's finding, checked field by field.

    The record is built with its fields set at once, not through `Finding.__init__` (14 frozen-field assignments):
    a warm run builds one per cached finding, thousands of them. `tests/registered_suite/test_results_cache.py` holds it
    equal, field for field and in field order, to what `guard_finding` builds."""
    if type(raw) is not list or len(raw) != len(ENTRY_FIELDS):
        raise BadEntry(_SHAPE)
    kind, path, line, test, runners, guard, reason, hint = raw
    if type(kind) is not str or kind not in _KINDS:
        raise BadEntry(f"unknown finding kind {kind[:40]!r}" if type(kind) is str else "finding 'kind' must be a string")
    if type(path) is not str or path != display:
        raise BadEntry("a finding of another file")
    if type(line) is not int or not 0 <= line < _LINE_LIMIT:
        raise BadEntry("finding 'line' must be a non-negative integer")
    if type(test) is not str or type(guard) is not str or type(reason) is not str or type(hint) is not str:
        raise BadEntry("finding 'test', 'guard', 'reason' and 'hint' must be strings")
    if type(runners) is not list:
        raise BadEntry("finding 'runners' must be a list of strings")
    for name in runners:
        if type(name) is not str:
            raise BadEntry("finding 'runners' must be a list of strings")
    finding: Finding = _new(Finding)
    _set(
        finding,
        "__dict__",
        {
            "tool": Tool.GUARDS,
            "kind": kind,
            "subject": "" if test == path else test,
            "message": reason,
            "path": path,
            "line": line,
            "runners": tuple(runners),
            "hint": hint,
            "detail": "",
            "source": guard,
            "accepted_by": "",
            "fingerprint": "",
            "evidence": "",
        },
    )
    return finding


def _names(raw: Any, where: str) -> tuple[str, ...]:
    if type(raw) is not list or not all(type(n) is str for n in raw):
        raise BadEntry(f"{where} must be a list of strings")
    return tuple(raw)


def decode(raw: Any, display: str) -> FileAudit | None:
    """An entry checked against the schema field by field; anything else raises `BadEntry`."""
    if raw is None:
        return None
    if type(raw) is not dict or raw.keys() != _AUDIT_KEYS:
        raise BadEntry("an entry must be null or an object with findings, registered and runners")
    findings = raw["findings"]
    if type(findings) is not list or len(findings) > MAX_ENTRY_FINDINGS:
        raise BadEntry("'findings' must be a list")
    if type(raw["registered"]) is not bool:
        raise BadEntry("'registered' must be true or false")
    return FileAudit(
        findings=tuple([_finding(f, display) for f in findings]),
        registered=raw["registered"],
        runners=_names(raw["runners"], "'runners'"),
    )


_HEAD = CACHE_SCHEMA + "\n"


def parse_cache(data: bytes) -> dict[str, tuple[str, str]]:
    """The entries of a cache file, key -> (seal, text); a file of another schema, or not ASCII, holds none, and a
    line that is not `KEY SEAL TEXT` (a truncated last line) is left out. Nothing here is trusted: `get` checks."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        return {}
    if not text.startswith(_HEAD):
        return {}
    entries: dict[str, tuple[str, str]] = {}
    lines = text.split("\n")
    for line in lines[1:]:
        parts = line.split(" ", 2)
        if len(parts) == 3:
            entries[parts[0]] = (parts[1], parts[2])
    return entries


def cache_text(entries: Mapping[str, tuple[str, str]]) -> str:
    """The file `parse_cache` reads: the schema's line, then `KEY SEAL TEXT` per entry."""
    return _HEAD + "".join([f"{key} {sealed} {text}\n" for key, (sealed, text) in entries.items()])


class ResultCache:
    """Load once, look up by file key, save the entries of this run.

    Each entry is a seal and TEXT, the audit as canonical JSON (`entry_text`); an entry whose seal does not match
    its key and text, whose text is not JSON, or whose content does not match the schema, is a miss: the file is
    audited again and the entry rewritten.
    """

    def __init__(self, folder: Path | None, key: str | None):
        self.path = folder / f"guards-{key}.cache" if folder is not None and key is not None else None
        self.old: dict[str, tuple[str, str]] = {}
        self.new: dict[str, tuple[str, str]] = {}
        if self.path is not None:
            self.old = self._load(self.path)

    @staticmethod
    def _load(path: Path) -> dict[str, tuple[str, str]]:
        try:
            data = read_limited(path, MAX_CACHE_BYTES)
        except OSError:
            return {}
        return parse_cache(data) if len(data) <= MAX_CACHE_BYTES else {}

    def get(self, key: str, display: str) -> tuple[bool, FileAudit | None]:
        """(hit, audit); an entry that is unsealed, edited or off-schema is a miss."""
        entry = self.old.get(key)
        if entry is None or entry[0] != seal(key, entry[1]):
            return False, None
        text = entry[1]
        try:
            # `raw_decode` is `json.loads` without its two whitespace scans (a canonical text has none); what
            # follows the value must then be nothing.
            raw, end = _DECODER.raw_decode(text)
            if end != len(text):
                return False, None
            audit = decode(raw, display)
        except (BadEntry, ValueError, RecursionError):
            return False, None
        self.new[key] = entry
        return True, audit

    def put(self, key: str, audit: FileAudit | None, sealed: tuple[str, str] | None = None) -> None:
        """Store an entry; `sealed` is (text, seal) when a worker already wrote them (`entry_text`, `seal`)."""
        if self.path is not None:
            if sealed is None:
                text = entry_text(audit)
                sealed = (text, seal(key, text))
            self.new[key] = (sealed[1], sealed[0])

    def save(self) -> None:
        if self.path is None or self.new == self.old:
            return
        # A read-only or full cache folder costs speed, never the audit.
        with contextlib.suppress(OutputError):
            write_text_atomic(self.path, cache_text(self.new))
