"""Text, JSON (`specmatrix.ledger-report/2`), Markdown (job summary) and GitHub annotations of a ledger report.

The findings are core `Finding`s: the test is the subject, the runner the one entry of `runners`, the static
audit's word the detail, the ledger line the evidence.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from matrix.core import emit
from matrix.core.finding import Finding, Tool, spec_of
from matrix.core.json_report import JsonReport, json_report
from matrix.core.output import md_code, md_text, text_lines
from matrix.core.writers import Block, Column, Style, Table, View, markdown_summary, text_report
from matrix.ledger.join import LedgerFindingKind, LedgerReport

# /2: findings in the core record's shape (`finding_doc`). /1 had `test`, `runner` and `static` in their place
# (the settled reason without its "static reason: " prefix); `specmatrix report` still reads it.
SCHEMA = "specmatrix.ledger-report/2"
SCHEMA_V1 = "specmatrix.ledger-report/1"
Kind = LedgerFindingKind
MD_ROWS = 40


def title(kind: LedgerFindingKind) -> str:
    return spec_of(Tool.LEDGER, kind.value).title


def _shown(report: LedgerReport, path: str) -> str:
    root = report.root.replace("\\", "/").rstrip("/")
    return f"{root}/{path}" if path and root not in ("", ".") else path


def _runner(f: Finding) -> str:
    return ", ".join(f.runners)


def _about(f: Finding) -> str:
    """The test a finding names, or nothing when it is about its whole file (its path says it)."""
    return "" if f.subject == f.path else f.subject


def _label(f: Finding) -> str:
    if f.kind == Kind.SETTLED:
        return "info"
    if f.accepted_by:
        return "accepted"
    return "error" if f.failing else "warning"


def summary_line(report: LedgerReport) -> str:
    per = "; ".join(
        f"{s.runner}: {s.executed}/{s.registered} registered files ran"
        + (" (" + ", ".join(f"{n} {k}" for k, n in sorted(s.statuses.items())) + ")" if s.statuses else "")
        for s in report.runners
    )
    counts = ", ".join(f"{len(report.of_kind(k))} {k.value}" for k in Kind if report.of_kind(k))
    return (
        f"{len(report.ledgers)} ledger(s), {report.processes} process(es); {per or 'no runner'}\n"
        f"{counts or 'no findings'}; {len(report.failing)} failing; exit {report.exit_code}"
    )


def to_text(report: LedgerReport) -> str:
    def lines_of(f: Finding) -> list[str]:
        where = f"{_shown(report, f.path)}:{f.line}: " if f.path else ""
        test = f" {_about(f)}" if _about(f) else ""
        lines = [f"{where}{_label(f)}: {f.kind}{test}" + (f" on {_runner(f)}" if f.runners else ""), f"    {f.message}"]
        lines += [f"    {f.detail}"] if f.detail else []
        return lines + ([f"    accepted by {f.accepted_by}"] if f.accepted_by else [])

    view = View(tool=Tool.LEDGER, lines=lines_of, order=tuple(Kind))
    return text_report(view, report.findings, tail=summary_line(report).split("\n"))


def _json_head(report: LedgerReport) -> dict[str, Any]:
    return {
        "root": report.root,
        "ledgers": list(report.ledgers),
        "processes": report.processes,
        "records": report.records,
        "runners": [{**asdict(s), "statuses": dict(s.statuses)} for s in report.runners],
    }


def to_json(report: LedgerReport) -> str:
    return json_report(
        JsonReport(
            schema=SCHEMA,
            findings=report.findings,
            exit_code=report.exit_code,
            head=_json_head(report),
            counts={k.value: len(report.of_kind(k)) for k in Kind},
            failing=len(report.failing),
        )
    )


def to_markdown(report: LedgerReport) -> str:
    """At most ~100 lines: counts per runner, then the findings (failing first) in a collapsed block."""
    verdict = "**fails**" if report.exit_code else "passes"
    lines = [
        "## Runtime skip ledger",
        "",
        f"{len(report.ledgers)} ledger(s), {report.processes} process(es), suite {md_code(report.root)}. The ledger {verdict} "
        f"(exit {report.exit_code}).",
        "",
        "| runner | registered files | ran | passed | failed | error | skipped |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in report.runners:
        st = s.statuses
        lines.append(
            f"| {md_text(s.runner)} | {s.registered} | {s.executed} | {st.get('passed', 0)} | {st.get('failed', 0)} | "
            f"{st.get('error', 0)} | {st.get('skipped', 0)} |"
        )
    lines += ["", "| finding | count |", "|---|---:|", *(f"| {k.value} | {len(report.of_kind(k))} |" for k in Kind), ""]
    blocks = []
    if report.findings:
        summary = f"{len(report.failing)} failing, {len(report.findings)} in all"
        blocks.append(Block(summary=summary, table=findings_table(report), findings=report.findings))
    return markdown_summary(lines, blocks) + "\n"


def findings_table(report: LedgerReport) -> Table:
    """The ledger summary's table of findings, as data: its columns, how many rows, what says the rest."""
    return Table(
        columns=(
            Column(header="", value=_label, style=Style.RAW),
            Column(header="kind", value=lambda f: f.kind, style=Style.RAW),
            Column(header="where", value=lambda f: f"{_shown(report, f.path)}:{f.line}" if f.path else "", style=Style.CODE),
            Column(header="test", value=_about, style=Style.CODE),
            Column(header="runner", value=_runner),
            Column(header="what", value=lambda f: f.message + (f"; {f.detail}" if f.detail and f.kind != Kind.SETTLED else "")),
        ),
        limit=MD_ROWS,
        more=lambda n: f"\n{n} more in the JSON report.",
    )


def to_github(report: LedgerReport, prefix: str | None = None) -> str:
    """Workflow commands, worst first (the runner shows only the first few of each severity), files named from the
    repository root (`prefix`: the suite's path from it), then the counts."""
    lines = [emit.github(report.findings, root=report.root, prefix=prefix)] if report.findings else []
    return "\n".join([*lines, text_lines(summary_line(report).split("\n"))])
