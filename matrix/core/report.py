"""The run report (schema `specmatrix.report/1`): records, JSON round-trip and validation."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import ReportError
from matrix.core.textfiles import read_text

SCHEMA = "specmatrix.report/1"


class CellStatus(StrEnum):
    """Exactly one per planned item; planned == sum of statuses, always."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED_EXPECTED = "skipped-expected"
    SKIPPED_UNEXPECTED = "skipped-unexpected"
    CRASHED = "crashed"
    NOT_RUN = "not-run"


class FindingKind(StrEnum):
    UNEXPECTED_SKIP = "unexpected-skip"
    GUARD_MISSING = "guard-missing"
    RULE_TOO_STRICT = "rule-too-strict"
    CRASHED = "crashed"
    NOT_RUN = "not-run"
    UNALLOWED_SKIP = "unallowed-skip"
    EXPIRED_ALLOW = "expired-allow"
    UNUSED_ALLOW = "unused-allow"
    MISSING_REPORT = "missing-report"
    NEVER_RAN = "never-ran"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, kw_only=True)
class CellResult:
    """One planned item: a test function over one matrix cell."""

    nodeid: str
    cell: str
    test: str
    expected: str  # "run" | "skip"
    rule: str | None  # the rule that decided a skip, or None for RUN
    reason: str
    status: CellStatus
    skip_reason: str | None = None
    message: str | None = None
    duration: float = 0.0
    started: float | None = None  # seconds after the session began that the item's first phase began
    compile_seconds: float | None = None
    setup_seconds: float | None = None
    worker: str | None = None


@dataclass(frozen=True, kw_only=True)
class OutsideResult:
    """A test that does not use the matrix (ordinary skipif etc.)."""

    nodeid: str
    status: str  # passed | failed | error | skipped
    skip_reason: str | None = None
    allowed_by: str | None = None
    duration: float = 0.0
    started: float | None = None  # seconds after the session began, as for cells
    worker: str | None = None


@dataclass(frozen=True, kw_only=True)
class Finding:
    kind: FindingKind
    severity: Severity
    subject: str  # nodeid, cell id, allowlist entry or file
    message: str


@dataclass(frozen=True, kw_only=True)
class RunnerInfo:
    name: str
    gpus: int
    capability: tuple[int, int] | None
    labels: tuple[str, ...] = ()
    skip_policy: str = "lenient"  # "lenient" | "strict": whether skips outside the matrix need an allowlist entry


@dataclass(frozen=True, kw_only=True)
class Report:
    matrix: str
    runner: RunnerInfo
    versions: Mapping[str, str]
    detection_overridden: bool
    created: str
    cells: tuple[CellResult, ...]
    outside: tuple[OutsideResult, ...] = ()
    findings: tuple[Finding, ...] = ()
    shard: str | None = None
    selectors: tuple[str, ...] = ()
    wall_seconds: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def counts(self) -> dict[str, int]:
        counter = Counter(c.status.value for c in self.cells)
        return {s.value: counter.get(s.value, 0) for s in CellStatus}

    @property
    def planned(self) -> int:
        return len(self.cells)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)


def to_json(report: Report) -> dict[str, Any]:
    # The item lists are flat records: vars() is ~10x faster than asdict's deep copy for 20,000 cells.
    doc = asdict(replace(report, cells=(), outside=(), findings=()))
    doc["cells"] = [dict(vars(c)) for c in report.cells]
    doc["outside"] = [dict(vars(o)) for o in report.outside]
    doc["findings"] = [dict(vars(f)) for f in report.findings]
    doc["schema"] = SCHEMA
    doc["counts"] = report.counts
    doc["planned"] = report.planned
    return doc


def write_report(report: Report, path: Path) -> None:
    """Write atomically so a killed run never leaves a half-written report."""
    # No indent: the indenting encoder is pure Python and several times slower on a 20,000-cell report.
    write_text_atomic(path, json.dumps(to_json(report), sort_keys=False) + "\n")


def _need(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in doc:
        raise ReportError(f"{where}: missing field {key!r}")
    value = doc[key]
    if not isinstance(value, kind):
        raise ReportError(f"{where}: field {key!r} has the wrong type")
    return value


def _optional_number(doc: Mapping[str, Any], key: str, where: str) -> float | None:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReportError(f"{where}: field {key!r} has the wrong type")
    return float(value)


def _enum(enum: type[StrEnum], value: Any, where: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        raise ReportError(f"{where}: unknown value {value!r}") from None


def _objects(items: Any, where: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Each entry of a list of objects with its position for error messages (`cells[3]`)."""
    for i, item in enumerate(items):
        item_where = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise ReportError(f"{item_where}: not an object")
        yield item, item_where


def from_json(doc: Any, where: str) -> Report:
    """Validate a decoded report; every problem names the file and the field."""
    if not isinstance(doc, dict):
        raise ReportError(f"{where}: not a JSON object")
    schema = doc.get("schema")
    if schema != SCHEMA:
        raise ReportError(f"{where}: unknown schema {schema!r} (expected {SCHEMA!r})")
    runner_doc = _need(doc, "runner", dict, where)
    cap = runner_doc.get("capability")
    runner = RunnerInfo(
        name=_need(runner_doc, "name", str, f"{where}: runner"),
        gpus=_need(runner_doc, "gpus", int, f"{where}: runner"),
        capability=(cap[0], cap[1]) if isinstance(cap, list) and len(cap) == 2 else None,
        labels=tuple(runner_doc.get("labels", ())),
        skip_policy=_need(runner_doc, "skip_policy", str, f"{where}: runner") if "skip_policy" in runner_doc else "lenient",
    )
    if runner.skip_policy not in ("lenient", "strict"):
        raise ReportError(f"{where}: runner: unknown skip_policy {runner.skip_policy!r}")
    cells: list[CellResult] = []
    for c, cw in _objects(_need(doc, "cells", list, where), f"{where}: cells"):
        cells.append(
            CellResult(
                nodeid=_need(c, "nodeid", str, cw),
                cell=_need(c, "cell", str, cw),
                test=_need(c, "test", str, cw),
                expected=_need(c, "expected", str, cw),
                rule=c.get("rule"),
                reason=_need(c, "reason", str, cw),
                status=_enum(CellStatus, _need(c, "status", str, cw), f"{cw}: status"),
                skip_reason=c.get("skip_reason"),
                message=c.get("message"),
                duration=_optional_number(c, "duration", cw) or 0.0,
                started=_optional_number(c, "started", cw),
                compile_seconds=_optional_number(c, "compile_seconds", cw),
                setup_seconds=_optional_number(c, "setup_seconds", cw),
                worker=c.get("worker"),
            )
        )
    outside = []
    for o, ow in _objects(doc.get("outside", []), f"{where}: outside"):
        outside.append(
            OutsideResult(
                nodeid=_need(o, "nodeid", str, ow),
                status=_need(o, "status", str, ow),
                skip_reason=o.get("skip_reason"),
                allowed_by=o.get("allowed_by"),
                duration=_optional_number(o, "duration", ow) or 0.0,
                started=_optional_number(o, "started", ow),
                worker=o.get("worker"),
            )
        )
    findings = []
    for f, fw in _objects(doc.get("findings", []), f"{where}: findings"):
        findings.append(
            Finding(
                kind=_enum(FindingKind, _need(f, "kind", str, fw), f"{fw}: kind"),
                severity=_enum(Severity, _need(f, "severity", str, fw), f"{fw}: severity"),
                subject=_need(f, "subject", str, fw),
                message=_need(f, "message", str, fw),
            )
        )
    report = Report(
        matrix=_need(doc, "matrix", str, where),
        runner=runner,
        versions=_need(doc, "versions", dict, where),
        detection_overridden=bool(doc.get("detection_overridden", False)),
        created=_need(doc, "created", str, where),
        cells=tuple(cells),
        outside=tuple(outside),
        findings=tuple(findings),
        shard=doc.get("shard"),
        selectors=tuple(doc.get("selectors", ())),
        wall_seconds=_optional_number(doc, "wall_seconds", where),
        extra=doc.get("extra", {}),
    )
    if "planned" in doc and doc["planned"] != report.planned:
        raise ReportError(f"{where}: says {doc['planned']} planned but lists {report.planned} cells (truncated?)")
    if "counts" in doc and doc["counts"] != report.counts:
        raise ReportError(f"{where}: field 'counts' does not match the statuses of its cells (planned must equal their sum)")
    return report


def read_report(path: Path) -> Report:
    """Load one report; a corrupt or truncated file is a ReportError naming it."""
    text = read_text(path, ReportError)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: corrupt or truncated JSON ({exc.msg} at line {exc.lineno})") from None
    return from_json(doc, str(path))


def read_reports(paths: Sequence[Path]) -> list[Report]:
    return [read_report(p) for p in paths]
