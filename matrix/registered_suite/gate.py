"""What a guard audit says: its text, JSON and Markdown, over the shared gate (`matrix.core.gate`).

The gate applies `--show` and `--baseline` to a report; the writers render the report with it. GitHub
annotations and SARIF are the shared writers of `matrix.core.output`; the baseline file is `matrix.core.baseline`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

from matrix.core.baseline import (
    ANY_RUNNER,
    BASELINE_SCHEMA,
    Baseline,
    BaselineEntry,
    baseline_document,
    baseline_text,
    parse_baseline,
    read_baseline,
    updated_entries,
)
from matrix.core.finding import Finding, Severity, Tool, fingerprint, kinds_of, spec_of
from matrix.core.gate import Gate, baseline_doc, entry_lines, error_keys, gate_line
from matrix.core.gate import gate as gate_findings
from matrix.core.gate import status_line as gate_status
from matrix.core.json_report import JsonReport, Shape, json_document, json_report
from matrix.core.output import md_code, md_text
from matrix.core.writers import Block, Column, Style, Table, View, markdown_summary, text_report
from matrix.guards.model import GuardFindingKind, GuardReport, finding_fields

__all__ = [  # the baseline's names, where callers of the guard audit have always found them
    "ANY_RUNNER",
    "BASELINE_SCHEMA",
    "Baseline",
    "BaselineEntry",
    "Gate",
    "baseline_document",
    "baseline_text",
    "error_keys",
    "fingerprint",
    "gate",
    "parse_baseline",
    "read_baseline",
    "updated_entries",
]

# --- the baseline and the gate ----------------------------------------------------------------------------------------
# Both are the shared ones of `matrix.core.baseline` and `matrix.core.gate`; a guard report passes its findings.


def gate(
    report: GuardReport,
    *,
    show: Severity,
    baseline: Baseline | None = None,
    today: dt.date | None = None,
    prefix: str = "",
) -> Gate:
    """`matrix.core.gate.gate` over a guard report's findings (`prefix`: the audited folder from the repository root)."""
    return gate_findings(report.findings, show=show, baseline=baseline, today=today, prefix=prefix)


# --- the writers ------------------------------------------------------------------------------------------------------
# Text, JSON (`specmatrix.guards/1`) and Markdown renderings of a guard report.

REPORT_SCHEMA = "specmatrix.guards/1"
Kind = GuardFindingKind
# The order groups are listed in: the registry's (matrix/core/kinds.py).
ORDER = tuple(Kind(spec.name) for spec in kinds_of(Tool.GUARDS))


def title(kind: GuardFindingKind) -> str:
    return spec_of(Tool.GUARDS, kind.value).title


def shown_path(report: GuardReport, finding: Finding) -> str:
    return str(PurePosixPath(report.root.replace("\\", "/")) / finding.path) if report.root not in ("", ".") else finding.path


def shown_paths(report: GuardReport) -> Callable[[Finding], str]:
    """`shown_path` worked out once per file: a report holds thousands of findings in far fewer files."""
    known: dict[str, str] = {}

    def path_of(finding: Finding) -> str:
        shown = known.get(finding.path)
        if shown is None:
            shown = known[finding.path] = shown_path(report, finding)
        return shown

    return path_of


def summary_line(report: GuardReport, *, with_exit: bool = True) -> str:
    """The counts; `with_exit` appends the report's own exit code (callers that print a status line of their own omit it)."""
    counts = report.counts()
    parts = ", ".join(f"{counts[k]} {k.value}" for k in ORDER if counts[k])
    head = (
        f"{report.files_scanned} files read, {report.test_files} test files, {report.registered_files} registered; "
        f"runners audited: {', '.join(report.runners) or 'none'}"
    )
    return f"{head}\n{parts or 'no findings'}" + (f"; exit {report.exit_code}" if with_exit else "")


def _gate_line(report: GuardReport, gate: Gate | None) -> str:
    line = gate_line(gate)
    return "\n" + line if line else ""


def status_line(report: GuardReport, gate: Gate | None) -> str:
    """The run's one final line: the exit code the command returns and why."""
    if gate is None:
        code = report.exit_code
        return f"exit {code}: " + ("error findings" if code else "no error findings")
    return gate_status(gate)


def to_text(report: GuardReport, gate: Gate | None = None, *, status: str | None = None) -> str:
    """Findings by kind, the counts, then one status line (`status` replaces the default one)."""
    shown = gate.shown if gate is not None else report.findings
    path_of = shown_paths(report)

    def lines_of(f: Finding) -> list[str]:
        on = f" on {', '.join(f.runners)}" if f.runners else ""
        lines = [f"{path_of(f)}:{f.line}: {f.kind}: {f.subject or 'module'}{on}"]
        lines += [f"    guard: {f.source}"] if f.source else []
        lines.append(f"    why: {f.message}")
        return lines + ([f"    fix: {f.hint}"] if f.hint else [])

    tail = [*entry_lines(gate), *(summary_line(report, with_exit=False) + _gate_line(report, gate)).split("\n")]
    tail.append(status or status_line(report, gate))
    return text_report(View(tool=Tool.GUARDS, lines=lines_of, order=ORDER), shown, tail=tail)


def json_of(report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None) -> JsonReport:
    """The report for the JSON writer: its own fields before and after its findings. `exit_code` replaces the
    audit's own where the command returns another (`--write-baseline`: 0)."""
    head: dict[str, Any] = {
        "root": report.root,
        "files_scanned": report.files_scanned,
        "test_files": report.test_files,
        "registered_files": report.registered_files,
        "runners": list(report.runners),
    }
    tail = {"baseline": baseline_doc(gate)} if gate is not None and gate.with_baseline else {}
    return JsonReport(
        schema=REPORT_SCHEMA,
        findings=report.findings,
        exit_code=exit_code if exit_code is not None else report.exit_code if gate is None else gate.exit_code,
        head=head,
        tail=tail,
        shape=JSON_SHAPE,
        counts={k.value: v for k, v in report.counts().items()},
        failing=len(gate.new_errors) if gate is not None else None,  # the findings hold the baselined ones too
    )


# A finding's entry: its `finding_fields`, then the verdict fields every finding report carries.
JSON_SHAPE = Shape(fields=finding_fields)


def to_json_doc(report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None) -> dict[str, Any]:
    return json_document(json_of(report, gate, exit_code=exit_code))


def to_json(report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None) -> str:
    return json_report(json_of(report, gate, exit_code=exit_code))


# A job summary is read in a browser: keep the page short, put each kind's rows in a collapsed block.
MD_ROWS_PER_KIND = 12
MD_MAX_LINES = 99


def to_markdown(report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: a count table and one collapsed block per kind (under 100 lines)."""
    counts = report.counts()
    shown = gate.shown if gate is not None else report.findings
    if exit_code is None:
        exit_code = report.exit_code if gate is None else gate.exit_code
    lines = [
        "## Guard audit",
        "",
        f"{md_code(report.root)}: {report.files_scanned} files read, {report.test_files} test files, "
        f"{report.registered_files} registered; runners audited: {md_text(', '.join(report.runners) or 'none')}.",
        "",
        "Findings: " + (", ".join(f"**{counts[k]}** {k.value}" for k in ORDER if counts[k]) or "none") + ".",
        "",
    ]
    kinds = [k for k in ORDER if any(f.kind == k for f in shown)]
    # Stay under MD_MAX_LINES whatever the tree: each kind's block costs 7 lines plus its rows.
    room = MD_MAX_LINES - len(lines) - 4 - 8 * len(kinds)
    table = Table(
        columns=(
            Column(header="where", value=lambda f: f"{shown_path(report, f)}:{f.line}", style=Style.CODE),
            Column(header="test", value=lambda f: f.scope, style=Style.CODE, limit=120),
            Column(header="runners", value=lambda f: ", ".join(f.runners)),
            Column(header="why", value=lambda f: f.hint or f.message, limit=300),
        ),
        limit=max(1, min(MD_ROWS_PER_KIND, room // max(1, len(kinds)))),
        more=lambda n: f"| ... | {n} more (see the annotations or --format text) | | |",
    )
    blocks = []
    for kind in kinds:
        found = [f for f in shown if f.kind == kind]
        blocks.append(Block(summary=f"{md_text(title(kind))}: {len(found)}", table=table, findings=found))
    tail = [""]
    if gate is not None and (gate.with_baseline or gate.hidden):
        tail += [md_text(_gate_line(report, gate).strip()), ""]
    verdict = "**fails**" if exit_code else "passes"
    return markdown_summary(lines, blocks, [*tail, f"The audit {verdict} (exit {exit_code})."])
