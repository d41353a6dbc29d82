"""Text, JSON (`specmatrix.ledger-report/2`), Markdown (job summary) and GitHub annotations of a ledger report.

The findings are core `Finding`s: the test is the subject, the runner the one entry of `runners`, the static
audit's word the detail, the ledger line the evidence.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from matrix.core import emit
from matrix.core.finding import Finding, Tool, spec_of
from matrix.core.jsonio import dumps_indented
from matrix.core.output import bounded_markdown, finding_doc, kind_sections, md_code, md_details, md_text, text_lines
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

    lines = kind_sections(report.findings, Tool.LEDGER, tuple(Kind), lines_of)
    lines += summary_line(report).split("\n")
    return text_lines(lines)


def to_json_doc(report: LedgerReport) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "root": report.root,
        "ledgers": list(report.ledgers),
        "processes": report.processes,
        "records": report.records,
        "runners": [{**asdict(s), "statuses": dict(s.statuses)} for s in report.runners],
        "counts": {k.value: len(report.of_kind(k)) for k in Kind},
        "exit_code": report.exit_code,
        "findings": [finding_doc(f) for f in report.findings],
    }


def to_json(report: LedgerReport) -> str:
    return dumps_indented(to_json_doc(report))


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
    shown = report.findings[:MD_ROWS]
    if shown:
        table = ["| | kind | where | test | runner | what |", "|---|---|---|---|---|---|"]
        for f in shown:
            where = md_code(f"{_shown(report, f.path)}:{f.line}") if f.path else ""
            what = md_text(f.message + (f"; {f.detail}" if f.detail and f.kind != Kind.SETTLED else ""))
            test = md_code(_about(f)) if _about(f) else ""
            table.append(f"| {_label(f)} | {f.kind} | {where} | {test} | {md_text(_runner(f))} | {what} |")
        if len(report.findings) > MD_ROWS:
            table.append(f"\n{len(report.findings) - MD_ROWS} more in the JSON report.")
        lines += md_details(f"{len(report.failing)} failing, {len(report.findings)} in all", table)
    return bounded_markdown(lines) + "\n"


def to_github(report: LedgerReport, prefix: str | None = None) -> str:
    """Workflow commands, worst first (the runner shows only the first few of each severity), files named from the
    repository root (`prefix`: the suite's path from it), then the counts."""
    lines = [emit.github(report.findings, root=report.root, prefix=prefix)] if report.findings else []
    return "\n".join([*lines, text_lines(summary_line(report).split("\n"))])
