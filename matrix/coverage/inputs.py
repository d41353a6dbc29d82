"""What `specmatrix report` reads: one adapter per input kind, each turning a decoded document into input records.

The page itself never looks at a document's own shape: each adapter maps its kind's findings to `FindingRow`, so a
new finding model changes the adapters only.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import PurePosixPath
from typing import Any

from matrix.core.errors import ReportError
from matrix.core.finding import Tool, registry
from matrix.core.report import from_json
from matrix.coverage.merge import ReportSource

MAX_LINE = 10**9  # a line number beyond this is corrupt input, not a source file


class InputKind(StrEnum):
    RUN_REPORT = "run report"
    GUARD_AUDIT = "guard audit"
    LEDGER_JOIN = "ledger join"
    PYTEST_AUDIT = "pytest audit"
    COVERAGE = "coverage merge"
    GAPS = "untested cells"


class RowSeverity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, kw_only=True)
class InputFile:
    """One file the page was built from, and when it was made."""

    label: str
    kind: InputKind
    schema: str
    created: str
    created_from: str  # "the document" (its own `created` field) or "file modified" (no such field)
    summary: str
    matrix: str | None = None
    scope: str = ""  # what the input is about, for the page's title: the audited root, the schedule, the runner


@dataclass(frozen=True, kw_only=True)
class FindingRow:
    """A finding as the page's table shows it."""

    origin: InputKind
    kind: str
    severity: RowSeverity
    path: str
    line: int | None
    subject: str
    runner: str
    message: str


@dataclass(frozen=True, kw_only=True)
class RunRow:
    """One test on one runner of a pytest audit's join (`pytest-audit --junit`): the static verdict, what the run
    did, and what the join concluded."""

    test: str
    path: str
    line: int | None
    runner: str
    static: str
    observed: str
    message: str
    join: str


@dataclass(frozen=True, kw_only=True)
class Document:
    """A decoded input file: where it came from, its content and the file's modification time (UTC, ISO 8601)."""

    label: str
    doc: Any
    modified: str


@dataclass(frozen=True, kw_only=True)
class Adapted:
    file: InputFile
    report: ReportSource | None = None
    findings: tuple[FindingRow, ...] = ()
    runs: tuple[RunRow, ...] = ()


Adapter = Callable[[Document], Adapted]


def iso_utc(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).isoformat(timespec="seconds")


def _field(doc: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str, default: Any = None) -> Any:
    value = doc.get(key, default)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):  # JSON true is no count
        raise ReportError(f"{where}: field {key!r} has the wrong type")
    return value


def _line(doc: Mapping[str, Any], where: str) -> int | None:
    line = _field(doc, "line", int, where, 0)
    if not 0 <= line <= MAX_LINE:
        raise ReportError(f"{where}: field 'line' must be a line number from 0 to {MAX_LINE}")
    return line or None


def _findings(doc: Mapping[str, Any], where: str) -> list[tuple[dict[str, Any], str]]:
    items = _field(doc, "findings", list, where, [])
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ReportError(f"{where}: findings[{i}]: not an object")
        out.append((item, f"{where}: findings[{i}]"))
    return out


def _joined(root: str, path: str) -> str:
    """A finding's file as the tool printed it: under its audited root unless that is the current directory."""
    root = root.replace("\\", "/").rstrip("/")
    return str(PurePosixPath(root) / path) if path and root not in ("", ".") else path


def _stamped(
    source: Document, doc: Mapping[str, Any], kind: InputKind, summary: str, *, matrix: str | None = None, scope: str = ""
) -> InputFile:
    """An input with no `created` field of its own: dated by its file's modification time."""
    return InputFile(
        label=source.label,
        kind=kind,
        schema=str(doc.get("schema")),
        created=source.modified,
        created_from="file modified",
        summary=summary,
        matrix=matrix,
        scope=scope,
    )


def _document(where: str, doc: Any) -> Mapping[str, Any]:
    if not isinstance(doc, dict):
        raise ReportError(f"{where}: not a JSON object")
    return doc


def run_report(source: Document) -> Adapted:
    """A plugin run report (`specmatrix.report/1`); its findings reach the page through the coverage merge."""
    report = from_json(source.doc, source.label)
    shard = f", shard {report.shard}" if report.shard else ""
    counts = ", ".join(f"{n} {k}" for k, n in report.counts.items() if n) or "no cells"
    return Adapted(
        file=InputFile(
            label=source.label,
            kind=InputKind.RUN_REPORT,
            schema=str(source.doc["schema"]),
            created=report.created,
            created_from="the document",
            summary=f"{report.runner.name}{shard}: {report.planned} planned ({counts}); {len(report.outside)} outside the matrix",
            matrix=report.matrix,
            scope=report.runner.name,
        ),
        report=ReportSource(label=source.label, report=report),
    )


def unfinished_run(source: Document) -> Adapted:
    """The marker a run writes over its report path before its first test: that run never finished."""
    where = source.label
    doc = _document(where, source.doc)
    created = _field(doc, "created", str, where)
    message = f"{where}: the run that was to write this report started at {created} and never finished (stopped or crashed)"
    return Adapted(
        file=InputFile(
            label=where,
            kind=InputKind.RUN_REPORT,
            schema=str(doc.get("schema")),
            created=created,
            created_from="the document",
            summary="unfinished: no results (the run was stopped or crashed before writing its report)",
        ),
        findings=(
            FindingRow(
                origin=InputKind.RUN_REPORT,
                kind="missing-report",
                severity=RowSeverity.ERROR,
                path=where,
                line=None,
                subject=f"pid {_field(doc, 'pid', int, where, 0)}",
                runner="",
                message=message,
            ),
        ),
    )


def _strings(f: Mapping[str, Any], key: str, fw: str) -> list[str]:
    value: list[Any] = _field(f, key, list, fw, [])
    if not all(isinstance(v, str) for v in value):
        raise ReportError(f"{fw}: field {key!r} must be a list of strings")
    return [str(v) for v in value]


def guard_audit(source: Document) -> Adapted:
    """`specmatrix guards --format json` (`specmatrix.guards/1`): static findings, each at a file and line."""
    return _static_audit(source, InputKind.GUARD_AUDIT, Tool.GUARDS, "files_scanned", "files read")


def pytest_audit(source: Document) -> Adapted:
    """`specmatrix pytest-audit --format json` (`specmatrix.pytest-audit/1`): the same fields per finding; files
    written before findings carried their severity take their kind's. With `--junit`, its `runs` section: each
    test's static verdict beside what each runner's run did."""
    adapted = _static_audit(source, InputKind.PYTEST_AUDIT, Tool.PYTEST_AUDIT, "files", "test files")
    doc = _document(source.label, source.doc)
    if "runs" not in doc:
        return adapted
    where = f"{source.label}: runs"
    runs = _field(doc, "runs", dict, source.label)
    root = _field(doc, "root", str, source.label, "")
    rows = []
    for i, item in enumerate(_field(runs, "tests", list, where, [])):
        rw = f"{where}: tests[{i}]"
        if not isinstance(item, dict):
            raise ReportError(f"{rw}: not an object")
        text = {
            key: _field(item, key, str, rw, "") for key in ("test", "path", "runner", "static", "observed", "message", "join")
        }
        rows.append(RunRow(**{**text, "path": _joined(root, text["path"])}, line=_line(item, rw)))
    counts = _field(runs, "counts", dict, where, {})
    said = ", ".join(f"{n} {k}" for k, n in counts.items() if isinstance(n, int) and not isinstance(n, bool) and n)
    summary = f"{adapted.file.summary}; runs joined: {said or 'nothing'}"
    return replace(adapted, file=replace(adapted.file, summary=summary), runs=tuple(rows))


def _severity(f: Mapping[str, Any], fw: str, tool: Tool) -> RowSeverity:
    """A known kind's severity from the registry (matrix/core/kinds.py), whatever the file says; for a kind this
    version does not know, the file's own (a newer writer), which must be one of the three."""
    kind = _field(f, "kind", str, fw)
    severity = f.get("severity")
    if severity is not None and (not isinstance(severity, str) or severity not in tuple(RowSeverity)):
        raise ReportError(f"{fw}: unknown severity {str(severity)[:40]!r}")
    spec = registry().get((tool, kind))
    if spec is not None:
        return RowSeverity(spec.severity.value)
    if severity is None:
        raise ReportError(f"{fw}: unknown {tool.value} finding kind {kind[:40]!r} and no severity")
    return RowSeverity(severity)


def _static_audit(source: Document, kind: InputKind, tool: Tool, files_key: str, files_word: str) -> Adapted:
    where = source.label
    doc = _document(where, source.doc)
    root = _field(doc, "root", str, where, "")
    rows = []
    for f, fw in _findings(doc, where):
        severity = _severity(f, fw, tool)
        runners = _strings(f, "runners", fw)
        reason, hint = _field(f, "reason", str, fw, ""), _field(f, "hint", str, fw, "")
        guard = _field(f, "guard", str, fw, "")
        message = "; ".join(part for part in (reason, f"guard: {guard}" if guard else "", f"fix: {hint}" if hint else "") if part)
        rows.append(
            FindingRow(
                origin=kind,
                kind=_field(f, "kind", str, fw),
                severity=severity,
                path=_joined(root, _field(f, "path", str, fw, "")),
                line=_line(f, fw),
                subject=_field(f, "test", str, fw, ""),
                runner=", ".join(runners),
                message=message,
            )
        )
    scanned = _field(doc, files_key, int, where, 0)
    exit_code = _field(doc, "exit_code", int, where, 0)
    return Adapted(
        file=_stamped(
            source, doc, kind, f"{root or '.'}: {scanned} {files_word}, {len(rows)} findings, exit {exit_code}", scope=root or "."
        ),
        findings=tuple(rows),
    )


def coverage_merge(source: Document) -> Adapted:
    """`specmatrix coverage`'s `coverage.json` (`specmatrix.coverage/1`): the merge's findings and totals (its cells
    are the reports' own: give the run reports themselves for the grid)."""
    where = source.label
    doc = _document(where, source.doc)
    rows = []
    for f, fw in _findings(doc, where):
        rows.append(
            FindingRow(
                origin=InputKind.COVERAGE,
                kind=_field(f, "kind", str, fw),
                severity=_severity(f, fw, Tool.COVERAGE),
                path="",
                line=None,
                subject=_field(f, "subject", str, fw, ""),
                runner=", ".join(_strings(f, "runners", fw)),
                message=_field(f, "message", str, fw, ""),
            )
        )
    totals = _field(doc, "totals", dict, where, {})
    shown = ", ".join(f"{n} {k}" for k, n in totals.items() if isinstance(n, int) and not isinstance(n, bool) and n)
    reports = _field(doc, "reports", list, where, [])
    return Adapted(
        file=_stamped(
            source,
            doc,
            InputKind.COVERAGE,
            f"{len(reports)} report(s) merged: {shown or 'no cells'}; {len(rows)} findings",
            scope=", ".join(_strings(doc, "runners", where)),
        ),
        findings=tuple(rows),
    )


def untested_cells(source: Document) -> Adapted:
    """`specmatrix gaps --format json` (`specmatrix.gaps/1`): the cells no runner of a CI schedule would run, each
    with the runners asked and why each one does not run it."""
    where = source.label
    doc = _document(where, source.doc)
    rows = []
    for f, fw in _findings(doc, where):
        detail = _field(f, "detail", str, fw, "")
        message = _field(f, "message", str, fw, "")
        rows.append(
            FindingRow(
                origin=InputKind.GAPS,
                kind=_field(f, "kind", str, fw),
                severity=_severity(f, fw, Tool.COVERAGE),
                path="",
                line=None,
                subject=_field(f, "subject", str, fw, ""),
                runner=", ".join(_strings(f, "runners", fw)),
                message="; ".join(part for part in (message, detail) if part),
            )
        )
    runners = _strings(doc, "runners", where)
    schedule = _field(doc, "schedule", str, where, "")
    return Adapted(
        file=_stamped(
            source,
            doc,
            InputKind.GAPS,
            f"{schedule or '.'}: {len(rows)} untested of {_field(doc, 'cells', int, where, 0)} cells "
            f"(runners: {', '.join(runners) or 'none'})",
            matrix=_field(doc, "matrix", str, where),
            scope=schedule or ".",
        ),
        findings=tuple(rows),
    )


def _ledger_severity(f: Mapping[str, Any], fw: str) -> RowSeverity:
    """The kind's severity (matrix/core/kinds.py); a finding a baseline or allowlist accepted is information."""
    if _field(f, "accepted_by", str, fw, ""):
        return RowSeverity.INFO
    return _severity(f, fw, Tool.LEDGER)


def _ledger_v2_fields(f: Mapping[str, Any], fw: str) -> tuple[str, str, str]:
    return _field(f, "subject", str, fw, ""), ", ".join(_strings(f, "runners", fw)), _field(f, "detail", str, fw, "")


def _ledger_v1_fields(f: Mapping[str, Any], fw: str) -> tuple[str, str, str]:
    static = _field(f, "static", str, fw, "")
    detail = f"static reason: {static}" if static and f.get("kind") == "settled" else static
    return _field(f, "test", str, fw, ""), _field(f, "runner", str, fw, ""), detail


def ledger_join(source: Document) -> Adapted:
    """`specmatrix ledger --format json` (`specmatrix.ledger-report/2`, core findings): what registered files really
    did on a runner."""
    return _ledger_join(source, _ledger_v2_fields)


def ledger_join_v1(source: Document) -> Adapted:
    """The same from `specmatrix.ledger-report/1`, which stored `test`, `runner` and `static` (a settled finding's
    reason without its "static reason: " prefix) in place of `subject`, `runners` and `detail`."""
    return _ledger_join(source, _ledger_v1_fields)


def _ledger_join(source: Document, fields: Callable[[Mapping[str, Any], str], tuple[str, str, str]]) -> Adapted:
    where = source.label
    doc = _document(where, source.doc)
    root = _field(doc, "root", str, where, "")
    rows = []
    for f, fw in _findings(doc, where):
        kind = _field(f, "kind", str, fw)
        subject, runner, detail = fields(f, fw)
        parts = [
            _field(f, "message", str, fw, ""),
            detail,
            f"accepted by {f['accepted_by']}" if _field(f, "accepted_by", str, fw, "") else "",
        ]
        rows.append(
            FindingRow(
                origin=InputKind.LEDGER_JOIN,
                kind=kind,
                severity=_ledger_severity(f, fw),
                path=_joined(root, _field(f, "path", str, fw, "")),
                line=_line(f, fw),
                subject=subject,
                runner=runner,
                message="; ".join(p for p in parts if p),
            )
        )
    ledgers = _field(doc, "ledgers", list, where, [])
    return Adapted(
        file=_stamped(
            source,
            doc,
            InputKind.LEDGER_JOIN,
            f"{root or '.'}: {len(ledgers)} ledger(s), {_field(doc, 'processes', int, where, 0)} process(es), "
            f"{len(rows)} findings, exit {_field(doc, 'exit_code', int, where, 0)}",
            scope=root or ".",
        ),
        findings=tuple(rows),
    )


def adapt(source: Document, adapters: Mapping[str, Adapter]) -> Adapted:
    """Pick the adapter by the document's schema; an unknown schema names the ones accepted."""
    schema = source.doc.get("schema") if isinstance(source.doc, dict) else None
    adapter = adapters.get(schema) if isinstance(schema, str) else None
    if adapter is None:
        shown = repr(schema)[:60] if schema is not None else "no schema field"
        raise ReportError(f"{source.label}: not an input `report` reads ({shown}; accepted: {', '.join(sorted(adapters))})")
    return adapter(source)


def one_matrix(matrix_name: str, files: Sequence[InputFile]) -> None:
    """Every run report must come from the matrix the page is drawn for: mixing two would mislabel every cell."""
    named = [f for f in files if f.matrix is not None]
    for f in named:
        if f.matrix != named[0].matrix:
            raise ReportError(
                f"cannot mix matrices: {named[0].label} is from matrix {named[0].matrix!r}, {f.label} from {f.matrix!r}"
            )
    if named and named[0].matrix != matrix_name:
        raise ReportError(
            f"{named[0].label} is from matrix {named[0].matrix!r} but the matrix given is {matrix_name!r} "
            "(pass that matrix's file with --matrix)"
        )
