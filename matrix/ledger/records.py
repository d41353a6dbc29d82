"""Read ledgers written by the hook: bounded, line by line, every unreadable line reported rather than fatal."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, BinaryIO

from matrix.core.errors import ReportError, UsageError
from matrix.core.textfiles import SpecialFileError, open_regular

LEDGER_VERSION = 1
MAX_LINE_BYTES = 1024 * 1024
MAX_RECORDS = 5_000_000
MAX_TEXT = 8192
_CHUNK = 64 * 1024


class TestStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    XFAILED = "xfailed"
    XPASSED = "xpassed"


@dataclass(frozen=True, kw_only=True)
class RunnerSeen:
    """What a process said about its machine; `gpus` is None when it could not tell."""

    source: str
    gpus: int | None = None
    capability: tuple[int, int] | None = None
    name: str | None = None
    error: str | None = None

    def describe(self) -> str:
        if self.gpus is None:
            return f"unknown machine ({self.source}{': ' + self.error if self.error else ''})"
        if not self.gpus:
            return f"no GPU ({self.source})"
        cap = f", sm{self.capability[0]}{self.capability[1]}" if self.capability else ""
        name = f" x {self.name}" if self.name else ""
        return f"{self.gpus}{name} GPU(s){cap} ({self.source})"


@dataclass(frozen=True, kw_only=True)
class Where:
    ledger: str
    line: int

    def __str__(self) -> str:
        return f"{self.ledger}:{self.line}"


@dataclass(frozen=True, kw_only=True)
class TestRecord:
    where: Where
    file: str
    test: str
    status: TestStatus
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class ExitRecord:
    where: Where
    status: int
    how: str
    tests: int


@dataclass(frozen=True, kw_only=True)
class Process:
    """One process's records: its script (or what ran it), machine, test outcomes and exit, if it got that far."""

    where: Where
    pid: int
    script: str
    runner: RunnerSeen
    tests: tuple[TestRecord, ...]
    exit: ExitRecord | None


@dataclass(frozen=True, kw_only=True)
class BadLine:
    where: Where
    problem: str
    torn: bool = False


@dataclass(frozen=True, kw_only=True)
class LedgerRead:
    processes: tuple[Process, ...]
    bad_lines: tuple[BadLine, ...]
    records: int


class _Bad(Exception):
    pass


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2**62:
        raise _Bad(f"field {key!r} must be an integer")
    return value


def _str(data: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = data.get(key, None if required else "")
    if not isinstance(value, str):
        raise _Bad(f"field {key!r} must be a string")
    return value[:MAX_TEXT]


def _runner(raw: Any) -> RunnerSeen:
    if not isinstance(raw, Mapping):
        raise _Bad("field 'runner' must be an object")
    source = str(raw.get("source", "unknown"))[:200]
    error = raw.get("error")
    gpus = raw.get("gpus")
    if error is not None or gpus is None:
        return RunnerSeen(source=source, error=str(error)[:200] if error is not None else None)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or not 0 <= gpus <= 4096:
        raise _Bad("runner 'gpus' must be a non-negative integer")
    cap = raw.get("capability")
    capability: tuple[int, int] | None = None
    if cap is not None:
        if not (isinstance(cap, list) and len(cap) == 2 and all(isinstance(c, int) and not isinstance(c, bool) for c in cap)):
            raise _Bad("runner 'capability' must be [major, minor]")
        capability = (cap[0], cap[1])
    name = raw.get("name")
    return RunnerSeen(source=source, gpus=gpus, capability=capability, name=str(name)[:200] if name is not None else None)


def _told(raw: Any, known: RunnerSeen) -> RunnerSeen:
    """`raw`'s runner facts where it has them, else what was `known`."""
    try:
        seen = _runner(raw)
    except _Bad:
        return known
    return seen if seen.gpus is not None else known


def _record(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _Bad("not a JSON object")
    if data.get("ledger") != LEDGER_VERSION:
        raise _Bad(f'not a specmatrix ledger record (want "ledger": {LEDGER_VERSION})')
    if data.get("kind") not in ("process", "test", "exit"):
        raise _Bad("field 'kind' must be process, test or exit")
    _int(data, "pid")
    time = data.get("time")
    if isinstance(time, bool) or not isinstance(time, int | float) or not math.isfinite(time):
        raise _Bad("field 'time' must be a number")
    if data["kind"] == "test":
        _str(data, "file")
        _str(data, "test")
        try:
            TestStatus(str(data.get("status")))
        except ValueError:
            raise _Bad(f"unknown test status {str(data.get('status'))[:40]!r}") from None
        _str(data, "reason", required=False)
    elif data["kind"] == "exit":
        _int(data, "status")
        _int(data, "tests")
    else:
        _str(data, "script")
    return data


def _lines(handle: BinaryIO) -> Iterator[tuple[bytes | None, bool]]:
    """(line without its newline, or None when longer than the limit; whether it ended with a newline)."""
    while True:
        chunk = handle.readline(MAX_LINE_BYTES + 1)
        if not chunk:
            return
        if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
            ended = False
            while True:  # skip the rest of an over-long line without holding it
                more = handle.readline(_CHUNK)
                if not more or more.endswith(b"\n"):
                    ended = bool(more)
                    break
            yield None, ended
            continue
        ended = chunk.endswith(b"\n")
        yield (chunk[:-1] if ended else chunk), ended


class _Builder:
    """Groups records into processes: a `process` record opens one; later records of that pid belong to it."""

    def __init__(self) -> None:
        self.open: dict[int, dict[str, Any]] = {}
        self.done: list[dict[str, Any]] = []

    def add(self, where: Where, data: dict[str, Any]) -> None:
        pid = data["pid"]
        current = self.open.get(pid)
        kind = data["kind"]
        if kind == "process" or current is None or current["exit"] is not None:
            if current is not None:
                self.done.append(current)
            script = data.get("script", "") if kind == "process" else ""
            current = {
                "where": where,
                "pid": pid,
                "script": script,
                "runner": _runner(data.get("runner")),
                "tests": [],
                "exit": None,
            }
            self.open[pid] = current
            if kind == "process":
                return
        if current["runner"].gpus is None:
            # The process record could not tell its machine (or was cut), but a later record of the same process
            # does: its facts judge the process, rather than leaving every record of it unjudged.
            current["runner"] = _told(data.get("runner"), current["runner"])
        if kind == "test":
            current["tests"].append(
                TestRecord(
                    where=where,
                    file=data["file"][:MAX_TEXT],
                    test=data["test"][:MAX_TEXT],
                    status=TestStatus(data["status"]),
                    reason=str(data.get("reason", ""))[:MAX_TEXT],
                )
            )
        else:
            current["exit"] = ExitRecord(
                where=where, status=data["status"], how=str(data.get("how", ""))[:200], tests=data["tests"]
            )

    def processes(self) -> tuple[Process, ...]:
        every = sorted([*self.done, *self.open.values()], key=lambda p: (p["where"].ledger, p["where"].line))
        return tuple(
            Process(
                where=p["where"], pid=p["pid"], script=p["script"], runner=p["runner"], tests=tuple(p["tests"]), exit=p["exit"]
            )
            for p in every
        )


def read_ledger(path: Path, label: str | None = None) -> LedgerRead:
    """Every record of one ledger; a missing file is a `UsageError`, a file with no readable line a `ReportError`."""
    name = label or str(path)
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        raise UsageError(f"{name}: no such ledger (was SPECMATRIX_LEDGER set and the hook installed?)") from None
    except SpecialFileError as exc:
        raise UsageError(f"{name}: is {exc.kind}, not a regular file") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    builder = _Builder()
    bad: list[BadLine] = []
    records = 0
    try:
        with os.fdopen(fd, "rb") as handle:
            for number, (raw, ended) in enumerate(_lines(handle), start=1):
                where = Where(ledger=name, line=number)
                if raw is None:
                    bad.append(BadLine(where=where, problem=f"line longer than {MAX_LINE_BYTES} bytes", torn=not ended))
                    continue
                if not raw.strip():
                    continue
                try:
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        raise _Bad("not UTF-8 text") from None
                    try:
                        data = json.loads(text)
                    except RecursionError:
                        raise _Bad("JSON nested too deeply") from None
                    except ValueError as exc:
                        raise _Bad(f"not JSON ({str(exc)[:80]})") from None
                    builder.add(where, _record(data))
                except _Bad as exc:
                    torn = not ended
                    problem = f"torn last line ({exc})" if torn else str(exc)
                    bad.append(BadLine(where=where, problem=problem, torn=torn))
                    continue
                records += 1
                if records > MAX_RECORDS:
                    raise ReportError(f"{name}: more than {MAX_RECORDS} records; split the ledger per job")
    except OSError as exc:
        raise UsageError(f"{name}: cannot read: {exc.strerror or exc}") from None
    if bad and not records:
        raise ReportError(f"{name}: not a specmatrix ledger (no readable record; line {bad[0].where.line}: {bad[0].problem})")
    if not records:
        # An empty ledger proves nothing ran, not that everything passed.
        raise ReportError(f"{name}: empty ledger, no record (was the hook installed and SPECMATRIX_LEDGER set on the test step?)")
    return LedgerRead(processes=builder.processes(), bad_lines=tuple(bad), records=records)
