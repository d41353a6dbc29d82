"""The pytest audit as text, JSON and Markdown; pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matrix.core.finding import Finding, Tool, spec_of
from matrix.core.gate import Gate, baseline_doc, entry_lines, gate_line, status_line
from matrix.core.json_report import JsonReport, Shape, json_report
from matrix.core.output import md_code, md_text
from matrix.core.writers import Block, Column, Style, Table, View, markdown_summary, text_report
from matrix.guards.model import GuardFindingKind, finding_fields
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.packs import GuardClass
from matrix.pytest_suites.undetermined import SHOWN_REASON_CHARS, SHOWN_REASONS, reason_counts
from matrix.pytest_suites.undetermined import summary_lines as undetermined_lines

SCHEMA = "specmatrix.pytest-audit/1"
_DISABLED = GuardFindingKind.DISABLED_BY_SKIP
_SHOWN = (
    GuardFindingKind.SILENT_SKIP,
    GuardFindingKind.NEVER_RUNS,
    GuardFindingKind.UNSCHEDULED,
    GuardFindingKind.UNPARSABLE,
    _DISABLED,
)
# Kinds about a whole file that no guard decides: counted in files, never by guard class.
_FILE_KINDS = (GuardFindingKind.UNSCHEDULED, GuardFindingKind.UNPARSABLE)


def _title(kind: GuardFindingKind) -> str:
    """How the pytest audit names a guard-audit kind (matrix/core/kinds.py, tool `pytest-audit`)."""
    return spec_of(Tool.PYTEST_AUDIT, kind.value).title


def summary_lines(report: PytestAuditReport) -> list[str]:
    lines = [
        f"{report.files} test files, {report.tests} tests ({report.scheduled_tests} scheduled) on "
        f"{', '.join(report.runners) or 'no runner'}; {report.undetermined} scheduled tests undetermined"
    ]
    for kind in _SHOWN:
        found = report.of_kind(kind)
        if found and kind is GuardFindingKind.NEVER_RUNS:
            files = sum(1 for f in found if not f.finding.subject)
            counted = " and ".join(c for c in (_count(len(found) - files, "test"), _count(files, "file")) if c[0] != "0")
            verb = "runs" if len(found) == 1 else "run"
            lines.append(f"{kind.value}: {counted} never {verb} in this CI ({_breakdown(report, kind)})")
        elif found and kind is _DISABLED:
            lines.append(f"{kind.value}: {len(found)} {_title(kind)}")
        elif found:
            lines.append(f"{kind.value}: {len(found)} {_title(kind)} ({_breakdown(report, kind)})")
    if report.unread_only:
        lines.append(f"undetermined: {report.unread_only} tests only a CI job that was not read may run")
    lines.append(f"jobs not read: {len(report.unread)}; unknown runner labels: {len(report.unknown_labels)}")
    return lines


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _breakdown(report: PytestAuditReport, kind: GuardFindingKind) -> str:
    """What a kind's findings are: files for a kind about whole files, else the kinds of fact that decided them."""
    if kind in _FILE_KINDS:
        return _count(len(report.of_kind(kind)), "file")
    return "by what decided it: " + ", ".join(f"{c.value} {n}" for c, n in report.class_counts(kind).items())


def to_text(report: PytestAuditReport, gate: Gate | None = None, *, runs: Sequence[str] = ()) -> str:
    """The findings, the jobs not read, the counts; with a baseline, its leftovers and the gate's status line.
    `runs`: the join's section (`joined_output.runs_text`), after the static findings."""
    lines = [f"{u.origin}: not read: {u.reason}" for u in report.unread]
    lines.extend(f"{u.origin}: unknown runner label {u.label!r}" for u in report.unknown_labels)
    summary = summary_lines(report)
    # The undetermined tests by reason, before the last line (jobs not read), which ends the output.
    lines.extend([*summary[:-1], *undetermined_lines(report.undetermined_tests), summary[-1]])
    if gate is not None and gate.with_baseline:
        lines += ["", *entry_lines(gate), gate_line(gate), status_line(gate)]
    shown = [f.finding for f in report.findings if f.finding.kind in _SHOWN]
    return text_report(TEXT_VIEW, shown, tail=[*runs, *lines]) + "\n"


def _line(g: Finding) -> list[str]:
    runners = f" on {', '.join(g.runners)}" if g.runners else ""
    guard = f" [{g.source}]" if g.source else ""
    return [f"{g.path}:{g.line}: {g.kind}: {g.scope}{runners}: {g.message}{guard}"]


TEXT_VIEW = View(tool=Tool.PYTEST_AUDIT, lines=_line)


def _shape(report: PytestAuditReport) -> Shape:
    # The guard audit's fields and the guard's class; the report writer adds the verdict fields.
    classes = {id(p.finding): p.guard_class.value for p in report.findings}
    return Shape(fields=lambda g: {**finding_fields(g), "guard_class": classes[id(g)]})


def to_json(
    report: PytestAuditReport, gate: Gate | None = None, *, exit_code: int | None = None, runs: Mapping[str, Any] | None = None
) -> str:
    """The report's envelope; `runs`: the join's section (`joined_output.runs_doc`), under `runs`."""
    head: dict[str, Any] = {
        "root": report.root,
        "files": report.files,
        "tests": report.tests,
        "scheduled_tests": report.scheduled_tests,
        "undetermined": report.undetermined,
        "undetermined_unread": report.unread_only,
        "runners": list(report.runners),
    }
    tail: dict[str, Any] = {
        "unread": [{"origin": str(u.origin), "reason": u.reason} for u in report.unread],
        "unknown_labels": [
            {"origin": str(u.origin), "label": u.label, "nearest": list(u.nearest)} for u in report.unknown_labels
        ],
        "assumptions": list(report.assumptions),
        "undetermined_tests": [t.doc() for t in report.undetermined_tests],
    }
    if runs is not None:
        tail["runs"] = runs
    if gate is not None and gate.with_baseline:
        tail["baseline"] = baseline_doc(gate)
    findings = [p.finding for p in report.findings]
    document = JsonReport(
        schema=SCHEMA,
        findings=findings,
        exit_code=exit_code if exit_code is not None else gate.exit_code if gate is not None else report.exit_code,
        head=head,
        tail=tail,
        shape=_shape(report),
        counts={k.value: {c.value: n for c, n in report.class_counts(k).items()} for k in _SHOWN},
        failing=len(gate.new_errors) if gate is not None else None,  # the findings hold the baselined ones too
    )
    return json_report(document) + "\n"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def count_table(report: PytestAuditReport) -> list[str]:
    """One row per kind; one column per guard class found (none on a clean run: header and separator still match)."""
    classes = sorted({c for k in _SHOWN for c in report.class_counts(k)}, key=lambda c: c.value)
    head = [_row(["finding", "total", *(c.value for c in classes)]), "|---|---:|" + "---:|" * len(classes)]
    rows = []
    for kind in _SHOWN:
        counts = report.class_counts(kind)
        total = len(report.of_kind(kind))
        rows.append(_row([kind.value, str(total), *(str(counts.get(c, 0)) for c in classes)]))
    return head + rows


def findings_table(classes: Mapping[int, GuardClass], *, files: bool) -> Table:
    """The table of one kind's findings: by file (a file that never runs) or by test, with each one's guard class."""
    guard_class = Column(header="class", value=lambda f: classes[id(f)].value, style=Style.RAW)
    runners = Column(header="runners", value=lambda f: ", ".join(f.runners))
    if files:
        return Table(
            columns=(
                Column(header="file", value=lambda f: f.path, style=Style.CODE, limit=200),
                guard_class,
                runners,
                Column(header="why", value=lambda f: f.message, limit=200),
            )
        )
    return Table(
        columns=(
            Column(header="test", value=lambda f: f.scope, style=Style.CODE, limit=160),
            guard_class,
            runners,
            Column(header="guard", value=lambda f: f.source, style=Style.CODE, limit=160),
        )
    )


def to_markdown(
    report: PytestAuditReport, gate: Gate | None = None, *, runs: tuple[Sequence[str], Sequence[Block]] = ((), ())
) -> str:
    """The summary; `runs`: the join's lines and blocks (`joined_output.runs_markdown`), after the static ones."""
    lines = ["## pytest audit", "", *(f"- {md_text(line)}" for line in summary_lines(report)), "", *count_table(report), ""]
    if gate is not None and gate.with_baseline:
        lines += [md_text(gate_line(gate)), ""]
    classes = {id(f.finding): f.guard_class for f in report.findings}
    blocks = []
    for kind, files in (
        (GuardFindingKind.NEVER_RUNS, True),
        (GuardFindingKind.UNSCHEDULED, True),
        (GuardFindingKind.SILENT_SKIP, False),
        (_DISABLED, False),
    ):
        found = [f.finding for f in report.of_kind(kind)]
        if found:
            summary = f"{kind.value}: {len(found)} {md_text(_title(kind))}"
            blocks.append(Block(summary=summary, table=findings_table(classes, files=files), findings=found, gap=True))
    lines += runs[0]
    blocks += runs[1]
    tail = _undetermined_markdown(report)
    if report.unread:
        tail += ["Jobs not read (declare them):", ""]
        tail += [f"- {md_code(str(u.origin), 200)}: {md_text(u.reason, 200)}" for u in report.unread]
        tail.append("")
    return markdown_summary(lines, blocks, tail)


def _undetermined_markdown(report: PytestAuditReport) -> list[str]:
    """The undetermined tests by reason, most frequent first (bounded: the JSON lists every test)."""
    if not report.undetermined_tests:
        return []
    counts = reason_counts(report.undetermined_tests)
    lines = [f"Undetermined tests by reason ({len(report.undetermined_tests)} tests; `--format json` lists each):", ""]
    lines += [_row(["tests", "reason"]), "|---:|---|"]
    lines += [_row([str(n), md_text(r, SHOWN_REASON_CHARS)]) for r, n in counts[:SHOWN_REASONS]]
    if len(counts) > SHOWN_REASONS:
        left = sum(n for _, n in counts[SHOWN_REASONS:])
        lines.append(_row([str(left), md_text(f"{len(counts) - SHOWN_REASONS} other reasons")]))
    return [*lines, ""]
