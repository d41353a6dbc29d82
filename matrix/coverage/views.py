"""Coverage as tables: arch x the layout's row axes x its column axes, Markdown and JSON; pure."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from matrix.core.json_report import JsonReport, json_document
from matrix.core.output import md_code, md_text
from matrix.core.writers import markdown_summary
from matrix.coverage.merge import SEVERITY_ORDER, Coverage, CoverageResult

COVERAGE_SCHEMA = "specmatrix.coverage/1"


@dataclass(frozen=True, kw_only=True)
class Bucket:
    arch: str
    row: tuple[str, ...]
    column: tuple[str, ...]
    counts: dict[Coverage, int]

    @property
    def worst(self) -> Coverage:
        return min((c for c, n in self.counts.items() if n), key=SEVERITY_ORDER.index)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def numeric_key(text: str) -> tuple[int, str]:
    return (int(text), text) if text.isdigit() else (1 << 30, text)


def buckets(result: CoverageResult) -> list[Bucket]:
    """One bucket per arch, row and column the matrix has, sorted for reading (numbers as numbers)."""
    grouped: defaultdict[tuple[str, tuple[str, ...], tuple[str, ...]], Counter[Coverage]] = defaultdict(Counter)
    for e in result.entries:
        grouped[(e.arch, e.row, e.column)][e.status] += 1
    rows = [Bucket(arch=a, row=r, column=c, counts={k: n[k] for k in Coverage}) for (a, r, c), n in grouped.items()]
    return sorted(
        rows,
        key=lambda b: (numeric_key(b.arch.removeprefix("sm")), tuple(map(numeric_key, b.row)), tuple(map(numeric_key, b.column))),
    )


def totals(result: CoverageResult) -> dict[str, int]:
    counts = Counter(e.status for e in result.entries)
    return {c.value: counts[c] for c in Coverage}


def coverage_document(result: CoverageResult, *, exit_code: int, failing: int | None = None) -> dict[str, Any]:
    """coverage.json: the merge's envelope (`exit_code` and `failing` as the command decides them) and its tables."""
    head = {
        "runners": list(result.runners),
        "reports": [
            {"path": s.label, "runner": s.report.runner.name, "shard": s.report.shard, "cells": len(s.report.cells)}
            for s in result.sources
        ],
        "totals": totals(result),
    }
    tail = {
        "buckets": [
            {
                "arch": b.arch,
                **dict(zip((*result.layout.rows, *result.layout.columns), (*b.row, *b.column), strict=True)),
                "worst": b.worst.value,
                "counts": {c.value: n for c, n in b.counts.items()},
            }
            for b in buckets(result)
        ],
        "cells": [
            {"runner": e.runner, "arch": e.arch, "cell": e.cell, "expected": e.expected.value, "status": e.status.value}
            for e in result.entries
        ],
    }
    return json_document(
        JsonReport(schema=COVERAGE_SCHEMA, findings=result.findings, exit_code=exit_code, head=head, tail=tail, failing=failing)
    )


_SHORT = {
    Coverage.PASSED: "passed",
    Coverage.FAILED: "failed",
    Coverage.SKIPPED_EXPECTED: "skip (exp.)",
    Coverage.SKIPPED_UNEXPECTED: "skip (UNEXP.)",
    Coverage.CRASHED: "crashed",
    Coverage.NEVER_RAN: "never ran",
}
_COLUMNS = (
    Coverage.PASSED,
    Coverage.FAILED,
    Coverage.SKIPPED_EXPECTED,
    Coverage.SKIPPED_UNEXPECTED,
    Coverage.CRASHED,
    Coverage.NEVER_RAN,
)


def coverage_markdown(result: CoverageResult, *, heatmap: str | None = None) -> str:
    """A step-summary page: verdict, findings, totals, then the bucket table."""
    errors = result.errors
    lines = ["## specmatrix coverage", ""]
    verdict = f"**{len(errors)} finding(s)**" if errors else "**no findings**"
    runners = md_text(", ".join(result.runners) or "none")
    lines.append(f"{verdict} over {len(result.sources)} report(s); runners counted: {runners}.")
    lines.append("")
    if errors:
        lines += [f"- <code>{f.kind}</code> {md_text(f.message)}" for f in errors] + [""]
    tot = totals(result)
    lines += ["| " + " | ".join(_SHORT[c] for c in _COLUMNS) + " |", "|" + "---:|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(str(tot[c.value]) for c in _COLUMNS) + " |", ""]
    if heatmap:
        lines += [f"![coverage heatmap]({heatmap})", ""]
    axes = (*result.layout.rows, *result.layout.columns)
    lines += ["| arch | " + " | ".join(axes) + " | " + " | ".join(_SHORT[c] for c in _COLUMNS) + " |"]
    lines += ["|---|" + "---|" * len(result.layout.rows) + "---:|" * len(result.layout.columns) + "---:|" * len(_COLUMNS)]
    for b in buckets(result):
        cells = " | ".join(str(b.counts[c]) if b.counts[c] else "" for c in _COLUMNS)
        lines.append(f"| {md_text(b.arch)} | {' | '.join(md_text(v) for v in (*b.row, *b.column))} | {cells} |")
    sources = ", ".join(
        f"{md_code(s.label)} ({md_text(s.report.runner.name)}, {len(s.report.cells)} results)" for s in result.sources
    )
    lines += ["", f"Reports: {sources or 'none'}.", ""]
    return markdown_summary(lines, [])
