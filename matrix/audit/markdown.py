"""Markdown for $GITHUB_STEP_SUMMARY: unexpected skips first, then other findings, then the counts."""

from __future__ import annotations

from collections import Counter

from matrix.core.finding import Severity
from matrix.core.output import bounded_markdown, md_code, md_text
from matrix.core.report import CellStatus, FindingKind, Report

ROW_LIMIT = 200
# Each findings table is collapsed: the verdict and the counts stay on the page, the rows one click away.
_OPEN = "<details><summary>{n} row(s)</summary>"  # a step summary is capped at 1 MiB; the JSON report has every row


def _runner_line(report: Report) -> str:
    r = report.runner
    arch = f"sm{r.capability[0]}{r.capability[1]}" if r.capability else "no GPU"
    note = "; detection overridden by SPECMATRIX_DETECT" if report.detection_overridden else ""
    shard = f" · shard {md_code(report.shard)}" if report.shard else ""
    return (
        f"Runner {md_code(r.name)} ({r.gpus} GPU(s), {arch}, {md_text(r.skip_policy)} skip policy{note}) · "
        f"matrix {md_code(report.matrix)}{shard}"
    )


def verdict(report: Report) -> str:
    errors = len(report.errors)
    warnings = len(report.findings) - errors
    word = "FAILED" if errors else "passed"
    return f"{word} ({errors} error(s), {warnings} warning(s))"


def render_markdown(report: Report) -> str:
    lines = [f"## specmatrix skip audit: {verdict(report)}", "", _runner_line(report), ""]
    by_nodeid = {c.nodeid: c for c in report.cells}
    unexpected = [f for f in report.findings if f.kind is FindingKind.UNEXPECTED_SKIP]
    if unexpected:
        lines += [f"### Unexpected skips ({len(unexpected)})", "", _OPEN.format(n=len(unexpected)), ""]
        lines += ["| Test | Skip reason | Must run because |", "|---|---|---|"]
        for f in unexpected[:ROW_LIMIT]:
            cell = by_nodeid.get(f.subject)
            skip = cell.skip_reason if cell is not None and cell.skip_reason else "-"
            must = cell.reason.removeprefix("must run: ") if cell is not None else f.message
            lines.append(f"| {md_code(f.subject)} | {md_text(skip)} | {md_text(must)} |")
        if len(unexpected) > ROW_LIMIT:
            lines.append(f"| … and {len(unexpected) - ROW_LIMIT} more (see the JSON report) | | |")
        lines += ["", "</details>", ""]
    others = [f for f in report.findings if f.kind is not FindingKind.UNEXPECTED_SKIP]
    if others:
        lines += [f"### Other findings ({len(others)})", "", _OPEN.format(n=len(others)), ""]
        lines += ["| Severity | Kind | Subject | Detail |", "|---|---|---|---|"]
        for f in others[:ROW_LIMIT]:
            sev = "**error**" if f.severity is Severity.ERROR else "warning"
            lines.append(f"| {sev} | {f.kind.value} | {md_code(f.subject)} | {md_text(f.message)} |")
        if len(others) > ROW_LIMIT:
            lines.append(f"| … | | {len(others) - ROW_LIMIT} more (see the JSON report) | |")
        lines += ["", "</details>", ""]
    counts = report.counts
    lines += ["### Counts", "", "| Status | Items |", "|---|---:|"]
    lines += [f"| {s.value} | {counts[s.value]} |" for s in CellStatus]
    lines += [f"| **planned** | **{report.planned}** |", ""]
    if report.outside:
        outside = Counter(o.status for o in report.outside)
        allowed = sum(1 for o in report.outside if o.allowed_by)
        shown = md_text(", ".join(f"{n} {s}" for s, n in sorted(outside.items())))
        lines += [f"Outside the matrix: {len(report.outside)} test(s): {shown}; {allowed} skip(s) allowlisted.", ""]
    return bounded_markdown(lines) + "\n"
