"""Per-file results cache keyed by content hash, so an unchanged tree is audited in a fraction of a second.

One JSON file per combination of settings (runner profiles, suite map, workflows, installed modules) and of
this package's own source, so a change to either starts a fresh cache. Entries are keyed by the file's path
and a SHA-256 of its bytes; only the files of the latest run are kept. The cache is an optimisation: a
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
from matrix.guards.audit import AuditSettings, FileAudit
from matrix.guards.model import GuardFinding, GuardFindingKind
from matrix.guards.predicates import PREDICATES

SCHEMA = "specmatrix.guards-cache/1"
ENV_VAR = "SPECMATRIX_CACHE_DIR"
MAX_CACHE_BYTES = 256 * 1024 * 1024
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
    return {"findings": [f.fields() for f in audit.findings], "registered": audit.registered, "runners": list(audit.runners)}


def decode(raw: Any) -> FileAudit | None:
    if raw is None:
        return None
    findings = tuple(
        GuardFinding(**{**f, "kind": GuardFindingKind(f["kind"]), "runners": tuple(f["runners"])}) for f in raw["findings"]
    )
    return FileAudit(findings=findings, registered=bool(raw["registered"]), runners=tuple(raw["runners"]))


class ResultCache:
    """Load once, look up by file key, save the entries of this run."""

    def __init__(self, folder: Path | None, key: str | None):
        self.path = folder / f"guards-{key}.json" if folder is not None and key is not None else None
        self.old: dict[str, Any] = {}
        self.new: dict[str, Any] = {}
        if self.path is not None:
            self.old = self._load(self.path)

    @staticmethod
    def _load(path: Path) -> dict[str, Any]:
        try:
            if path.stat().st_size > MAX_CACHE_BYTES:
                return {}
            doc = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            return {}
        files = doc.get("files") if isinstance(doc, dict) and doc.get("schema") == SCHEMA else None
        return files if isinstance(files, dict) else {}

    def get(self, key: str) -> tuple[bool, FileAudit | None]:
        """(hit, audit); an entry that does not decode is a miss."""
        if key not in self.old:
            return False, None
        try:
            audit = decode(self.old[key])
        except (KeyError, TypeError, ValueError):
            return False, None
        self.new[key] = self.old[key]
        return True, audit

    def put(self, key: str, audit: FileAudit | None) -> None:
        if self.path is not None:
            self.new[key] = encode(audit)

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
