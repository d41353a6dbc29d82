"""The audit's section of pytest's terminal summary, as plain lines; pure."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from matrix.core.finding import Severity
from matrix.core.output import text_line
from matrix.core.report import Report

FINDING_LIMIT = 50


@dataclass(frozen=True, kw_only=True)
class Line:
    text: str
    red: bool = False
    yellow: bool = False


def summary_lines(report: Report, written: list[str]) -> list[Line]:
    r = report.runner
    arch = f"sm{r.capability[0]}{r.capability[1]}" if r.capability else "no GPU"
    note = ", detection overridden by SPECMATRIX_DETECT" if report.detection_overridden else ""
    lines = [Line(text=f"runner {r.name} ({r.gpus} GPU(s), {arch}, {r.skip_policy} skip policy{note}); matrix {report.matrix}")]
    counts = report.counts
    parts = " + ".join(f"{n} {s}" for s, n in counts.items() if n)
    lines.append(Line(text=f"planned {report.planned} = {parts or '0'}"))
    if report.outside:
        by_status = Counter(o.status for o in report.outside)
        allowed = sum(1 for o in report.outside if o.allowed_by)
        shown = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
        lines.append(Line(text=f"outside the matrix: {len(report.outside)} test(s) ({shown}); {allowed} skip(s) allowlisted"))
    for finding in report.findings[:FINDING_LIMIT]:
        error = finding.severity is Severity.ERROR
        label = finding.finding().spec.shown_label
        lines.append(Line(text=f"{label} {finding.subject}: {finding.message}", red=error, yellow=not error))
    if len(report.findings) > FINDING_LIMIT:
        lines.append(Line(text=f"... and {len(report.findings) - FINDING_LIMIT} more finding(s) in the report"))
    lines += [Line(text=f"report: {p}") for p in written]
    errors = len(report.errors)
    if errors:
        lines.append(
            Line(
                text=f"specmatrix: {errors} error finding(s): the session fails (pytest's own counts above are unchanged)",
                red=True,
            )
        )
    # Skip reasons and node ids come from the tests: one visible line each, never a workflow command.
    return [Line(text=text_line(line.text), red=line.red, yellow=line.yellow) for line in lines]
