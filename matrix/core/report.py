"""The run report (schema `specmatrix.report/1`): records, JSON round-trip and validation."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import ConfigError, ReportError
from matrix.core.finding import Finding, Severity, Tool, spec_of
from matrix.core.jsonio import MAX_DEPTH, depth_of, dumps_strict, loads_untrusted
from matrix.core.textfiles import read_text
from matrix.core.versions import checked_versions

if TYPE_CHECKING:
    from matrix.core.model import Matrix

SCHEMA = "specmatrix.report/1"
# Written at session start over the report path, replaced by the report when the run finishes: a run that dies
# before writing leaves this marker (which `audit` rejects), never the previous run's report.
IN_PROGRESS_SCHEMA = "specmatrix.report-in-progress/1"
MAX_SECONDS = 1e9  # any duration or offset beyond 30 years is corrupt; bounding it keeps every sum finite


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


def audit_finding(*, kind: FindingKind, subject: str, message: str) -> Finding:
    """A skip-audit or coverage finding as the report stores it; its severity is its kind's (matrix/core/kinds.py)."""
    tool = Tool.COVERAGE if kind in COVERAGE_KINDS else Tool.AUDIT
    return Finding(tool=tool, kind=kind.value, subject=subject, message=message)


def stored_severity(kind: FindingKind, stored: Severity, where: str) -> None:
    """A report's stored severity must be its kind's: a file that says otherwise was written by another table."""
    tool = Tool.COVERAGE if kind in COVERAGE_KINDS else Tool.AUDIT
    decided = spec_of(tool, kind.value).severity
    if stored is not decided:
        raise ConfigError(f"{where}: finding kind {tool.value}/{kind.value} is {decided.value}, not {stored.value}")


# The kinds only the coverage merge produces; the rest come from the skip audit (matrix/core/kinds.py).
COVERAGE_KINDS = frozenset({FindingKind.MISSING_REPORT, FindingKind.NEVER_RAN})


@dataclass(frozen=True, kw_only=True)
class RunnerInfo:
    name: str
    gpus: int
    capability: tuple[int, int] | None
    labels: tuple[str, ...] = ()
    skip_policy: str = "lenient"  # "lenient" | "strict": whether skips outside the matrix need an allowlist entry


def matrix_digest(matrix: Matrix) -> str:
    """What a report was judged against, beyond the matrix's name: a digest of everything that decides a cell's
    expected outcome (axes, cells, rules, implementations, pins, cost model, layout), not of where the file lies."""
    decided = (
        matrix.name,
        matrix.axes,
        matrix.cells,
        matrix.rules,
        matrix.impls,
        sorted(matrix.pins.items()),
        matrix.cost,
        matrix.page_promotions,
        matrix.swa_combinations,
        matrix.coverage,
    )
    return "sha256:" + hashlib.sha256(repr(decided).encode("utf-8", "backslashreplace")).hexdigest()


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
    # `matrix_digest(matrix)` of the matrix the run was planned from; None in reports written before it was kept.
    matrix_digest: str | None = None

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
    if report.matrix_digest is None:
        del doc["matrix_digest"]  # a report that was given none says nothing, as the older ones do
    doc["cells"] = [dict(vars(c)) for c in report.cells]
    doc["outside"] = [dict(vars(o)) for o in report.outside]
    # The stored fields only (schema specmatrix.report/1): the rest of a `Finding` follows from its kind.
    doc["findings"] = [
        {"kind": f.kind, "severity": f.severity.value, "subject": f.subject, "message": f.message} for f in report.findings
    ]
    doc["schema"] = SCHEMA
    doc["counts"] = report.counts
    doc["planned"] = report.planned
    return doc


def write_report(report: Report, path: Path) -> None:
    """Write atomically so a killed run never leaves a half-written report."""
    # No indent: the indenting encoder is pure Python and several times slower on a 20,000-cell report.
    write_text_atomic(path, dumps_strict(to_json(report), where=str(path)) + "\n")


def in_progress_document(created: str, pid: int) -> str:
    """The marker a session writes over its report path before any test runs."""
    doc = {"schema": IN_PROGRESS_SCHEMA, "created": created, "pid": pid}
    return json.dumps(doc) + "\n"


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
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= MAX_SECONDS:
        raise ReportError(f"{where}: field {key!r} has the wrong type (seconds, a number from 0 to {MAX_SECONDS:g})")
    return float(value)


def _optional_str(doc: Mapping[str, Any], key: str, where: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise ReportError(f"{where}: field {key!r} must be a string or null")
    return value


def _str_list(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ReportError(f"{where}: field {key!r} must be a list of strings")
    return tuple(value)


def _capability(value: Any, where: str) -> tuple[int, int] | None:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and all(type(c) is int and 0 <= c < 100 for c in value)):
        raise ReportError(f"{where}: field 'capability' must be [major, minor] or null")
    return (value[0], value[1])


def _clip(value: Any, width: int = 60) -> str:
    text = repr(value) if not isinstance(value, list | dict) else type(value).__name__
    return text if len(text) <= width else text[:width] + "..."


def _enum(enum: type[StrEnum], value: Any, where: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        raise ReportError(f"{where}: unknown value {_clip(value)}") from None


def _list_field(doc: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise ReportError(f"{where}: field {key!r} must be a list")
    return value


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
    if schema == IN_PROGRESS_SCHEMA:
        raise ReportError(
            f"{where}: the run writing this report never finished (it was stopped or crashed before writing it); rerun it"
        )
    if schema != SCHEMA:
        raise ReportError(f"{where}: unknown schema {_clip(schema)} (expected {SCHEMA!r})")
    runner_doc = _need(doc, "runner", dict, where)
    gpus = _need(runner_doc, "gpus", int, f"{where}: runner")
    if isinstance(gpus, bool) or not 0 <= gpus <= 1024:
        raise ReportError(f"{where}: runner: field 'gpus' must be an integer from 0 to 1024")
    runner = RunnerInfo(
        name=_need(runner_doc, "name", str, f"{where}: runner"),
        gpus=gpus,
        capability=_capability(runner_doc.get("capability"), f"{where}: runner"),
        labels=_str_list(runner_doc, "labels", f"{where}: runner"),
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
                rule=_optional_str(c, "rule", cw),
                reason=_need(c, "reason", str, cw),
                status=_enum(CellStatus, _need(c, "status", str, cw), f"{cw}: status"),
                skip_reason=_optional_str(c, "skip_reason", cw),
                message=_optional_str(c, "message", cw),
                duration=_optional_number(c, "duration", cw) or 0.0,
                started=_optional_number(c, "started", cw),
                compile_seconds=_optional_number(c, "compile_seconds", cw),
                setup_seconds=_optional_number(c, "setup_seconds", cw),
                worker=_optional_str(c, "worker", cw),
            )
        )
    outside = []
    for o, ow in _objects(_list_field(doc, "outside", where), f"{where}: outside"):
        outside.append(
            OutsideResult(
                nodeid=_need(o, "nodeid", str, ow),
                status=_need(o, "status", str, ow),
                skip_reason=_optional_str(o, "skip_reason", ow),
                allowed_by=_optional_str(o, "allowed_by", ow),
                duration=_optional_number(o, "duration", ow) or 0.0,
                started=_optional_number(o, "started", ow),
                worker=_optional_str(o, "worker", ow),
            )
        )
    findings = []
    for f, fw in _objects(_list_field(doc, "findings", where), f"{where}: findings"):
        kind = _enum(FindingKind, _need(f, "kind", str, fw), f"{fw}: kind")
        stored_severity(kind, _enum(Severity, _need(f, "severity", str, fw), f"{fw}: severity"), fw)
        findings.append(audit_finding(kind=kind, subject=_need(f, "subject", str, fw), message=_need(f, "message", str, fw)))
    extra = doc.get("extra", {})
    if not isinstance(extra, dict) or depth_of(extra) > MAX_DEPTH:
        raise ReportError(f"{where}: field 'extra' must be an object at most {MAX_DEPTH} levels deep")
    report = Report(
        matrix=_need(doc, "matrix", str, where),
        runner=runner,
        versions=checked_versions(_need(doc, "versions", dict, where), f"{where}: versions", ReportError),
        detection_overridden=_need(doc, "detection_overridden", bool, where) if "detection_overridden" in doc else False,
        created=_need(doc, "created", str, where),
        cells=tuple(cells),
        outside=tuple(outside),
        findings=tuple(findings),
        shard=_optional_str(doc, "shard", where),
        selectors=_str_list(doc, "selectors", where),
        wall_seconds=_optional_number(doc, "wall_seconds", where),
        extra=extra,
        matrix_digest=_optional_str(doc, "matrix_digest", where),
    )
    seen: set[str] = set()
    for nodeid in [c.nodeid for c in cells] + [o.nodeid for o in outside]:
        if nodeid in seen:
            raise ReportError(f"{where}: node id {nodeid!r} is listed twice; each test has exactly one status")
        seen.add(nodeid)
    if "planned" in doc and doc["planned"] != report.planned:
        raise ReportError(f"{where}: says {_clip(doc['planned'])} planned but lists {report.planned} cells (truncated?)")
    if "counts" in doc and doc["counts"] != report.counts:
        raise ReportError(f"{where}: field 'counts' does not match the statuses of its cells (planned must equal their sum)")
    return report


def read_report(path: Path) -> Report:
    """Load one report; a corrupt or truncated file is a ReportError naming it."""
    doc = loads_untrusted(read_text(path, ReportError), str(path), ReportError)
    return from_json(doc, str(path))


def read_reports(paths: Sequence[Path]) -> list[Report]:
    return [read_report(p) for p in paths]
