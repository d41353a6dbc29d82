"""Per-file results cache keyed by content hash, so an unchanged tree is audited in a fraction of a second.

One JSON file per combination of settings (runner profiles, suite map, workflows, installed modules) and of
this package's own source, so a change to either starts a fresh cache. Entries are keyed by the file's path
and a SHA-256 of its bytes, and sealed with a digest of that key and their content; each is checked against
the schema when read, so an edited or malformed entry is a miss, never a verdict. Only the files of the latest
run are kept. The cache is an optimisation: a
missing, unreadable or malformed cache file is ignored, and a failed write never fails the audit.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import OutputError
from matrix.core.finding import Finding
from matrix.core.jsonio import seal as sealed_digest
from matrix.core.textfiles import read_limited
from matrix.guards.audit import AuditSettings, FileAudit
from matrix.guards.model import GuardFindingKind, guard_finding
from matrix.guards.predicates import PREDICATES

# /3: entries hold core `Finding` fields (subject, source, message); a /2 file is a clean miss.
SCHEMA = "specmatrix.guards-cache/3"
ENV_VAR = "SPECMATRIX_CACHE_DIR"
MAX_CACHE_BYTES = 32 * 1024 * 1024  # one entry per audited file, about 1 KB each: sglang's tree is a few MB
_PACKAGE = Path(__file__).parent


def default_cache_dir(env: Mapping[str, str]) -> Path:
    """$SPECMATRIX_CACHE_DIR, else $XDG_CACHE_HOME/specmatrix, else ~/.cache/specmatrix."""
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR])
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "specmatrix"


def settings_key(settings: AuditSettings) -> str | None:
    """A hash of everything besides the file that decides its findings; None when that cannot be hashed."""
    if settings.predicates is not PREDICATES:
        return None  # a custom predicate table (tests) has no stable identity
    code = hashlib.sha256()
    for path in sorted(_PACKAGE.glob("*.py")):
        code.update(path.read_bytes())
    parts = (
        sorted((name, repr(p)) for name, p in settings.runners.items()),
        repr(settings.suite_map),
        sorted(settings.known_suites) if settings.known_suites is not None else None,
        settings.only_runners,
        sorted(settings.installed),
        repr(settings.schedule),
        code.hexdigest(),
    )
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:24]


def file_key(display: str, data: bytes) -> str:
    return hashlib.sha256(display.encode() + b"\0" + data).hexdigest()


def encode(audit: FileAudit | None) -> Any:
    if audit is None:
        return None
    return {"findings": [_fields(f) for f in audit.findings], "registered": audit.registered, "runners": list(audit.runners)}


def _fields(finding: Finding) -> dict[str, Any]:
    # Tool and severity follow from the kind; a guard finding has no detail, acceptance or fingerprint of its own.
    return {
        "kind": finding.kind,
        "path": finding.path,
        "line": finding.line,
        "subject": finding.subject,
        "runners": list(finding.runners),
        "source": finding.source,
        "message": finding.message,
        "hint": finding.hint,
    }


def seal(key: str, value: Any) -> str:
    """A digest of an entry bound to its file key: an entry edited by hand, or moved to another key, no longer matches."""
    return sealed_digest(SCHEMA, key, value)


class BadEntry(Exception):
    """A cache entry that does not match the schema; the file is audited again."""


_FINDING_TEXT = ("path", "subject", "source", "message", "hint")
_FINDING_KEYS = frozenset({"kind", "line", "runners", *_FINDING_TEXT})
_AUDIT_KEYS = frozenset({"findings", "registered", "runners"})
MAX_ENTRY_FINDINGS = 100_000


def _names(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise BadEntry(f"{where} must be a list of strings")
    return tuple(raw)


def _finding(raw: Any, display: str) -> Finding:
    if not isinstance(raw, dict) or set(raw) != _FINDING_KEYS:
        raise BadEntry("a finding must be an object with exactly " + ", ".join(sorted(_FINDING_KEYS)))
    for name in _FINDING_TEXT:
        if not isinstance(raw[name], str):
            raise BadEntry(f"finding {name!r} must be a string")
    line = raw["line"]
    if isinstance(line, bool) or not isinstance(line, int) or not 0 <= line < 2**31:
        raise BadEntry("finding 'line' must be a non-negative integer")
    if raw["path"] != display:
        raise BadEntry("a finding of another file")
    try:
        kind = GuardFindingKind(raw["kind"])
    except ValueError:
        raise BadEntry(f"unknown finding kind {raw['kind']!r}") from None
    return guard_finding(
        kind,
        path=raw["path"],
        line=line,
        test=raw["subject"] or raw["path"],
        runners=_names(raw["runners"], "finding 'runners'"),
        guard=raw["source"],
        reason=raw["message"],
        hint=raw["hint"],
    )


def decode(raw: Any, display: str) -> FileAudit | None:
    """An entry checked against the schema field by field; anything else raises `BadEntry`."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) != _AUDIT_KEYS:
        raise BadEntry("an entry must be null or an object with findings, registered and runners")
    findings = raw["findings"]
    if not isinstance(findings, list) or len(findings) > MAX_ENTRY_FINDINGS:
        raise BadEntry("'findings' must be a list")
    if not isinstance(raw["registered"], bool):
        raise BadEntry("'registered' must be true or false")
    return FileAudit(
        findings=tuple(_finding(f, display) for f in findings),
        registered=raw["registered"],
        runners=_names(raw["runners"], "'runners'"),
    )


class ResultCache:
    """Load once, look up by file key, save the entries of this run.

    Each entry is `{"seal": ..., "audit": ...}`; an entry whose seal does not match its key and content, or whose
    content does not match the schema, is a miss: the file is audited again and the entry rewritten.
    """

    def __init__(self, folder: Path | None, key: str | None):
        self.path = folder / f"guards-{key}.json" if folder is not None and key is not None else None
        self.old: dict[str, Any] = {}
        self.new: dict[str, Any] = {}
        if self.path is not None:
            self.old = self._load(self.path)

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            data = read_limited(path, MAX_CACHE_BYTES)
            if len(data) > MAX_CACHE_BYTES:
                return {}
            doc = json.loads(data)
        except (OSError, ValueError, RecursionError):
            return {}
        files = doc.get("files") if isinstance(doc, dict) and doc.get("schema") == SCHEMA else None
        return files if isinstance(files, dict) else {}

    def get(self, key: str, display: str) -> tuple[bool, FileAudit | None]:
        """(hit, audit); an entry that is unsealed, edited or off-schema is a miss."""
        entry = self.old.get(key)
        if not isinstance(entry, dict) or set(entry) != {"seal", "audit"} or entry["seal"] != seal(key, entry["audit"]):
            return False, None
        try:
            audit = decode(entry["audit"], display)
        except (BadEntry, RecursionError):
            return False, None
        self.new[key] = entry
        return True, audit

    def put(self, key: str, audit: FileAudit | None) -> None:
        if self.path is not None:
            value = encode(audit)
            self.new[key] = {"seal": seal(key, value), "audit": value}

    def save(self) -> None:
        if self.path is None or self.new == self.old:
            return
        # A read-only or full cache folder costs speed, never the audit.
        with contextlib.suppress(OutputError):
            write_text_atomic(self.path, json.dumps({"schema": SCHEMA, "files": self.new}, separators=(",", ":")))


def cache_folder(option: Path | None, disabled: bool, env: Mapping[str, str] | None = None) -> Path | None:
    if disabled:
        return None
    return option if option is not None else default_cache_dir(os.environ if env is None else env)
