"""Coverage as tables: arch x backend x topk x page-size buckets, Markdown and JSON; pure."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from matrix.core.output import bounded_markdown, md_code, md_text
from matrix.coverage.merge import SEVERITY_ORDER, Coverage, CoverageResult

COVERAGE_SCHEMA = "specmatrix.coverage/1"


@dataclass(frozen=True, kw_only=True)
class Bucket:
    arch: str
    backend: str
    topk: str
    page_size: str
    counts: dict[Coverage, int]

    @property
    def worst(self) -> Coverage:
        return min((c for c, n in self.counts.items() if n), key=SEVERITY_ORDER.index)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _num(text: str) -> tuple[int, str]:
    return (int(text), text) if text.isdigit() else (1 << 30, text)


def buckets(result: CoverageResult) -> list[Bucket]:
    """One bucket per arch, backend, topk and page size that the matrix has, sorted for reading."""
    grouped: defaultdict[tuple[str, str, str, str], Counter[Coverage]] = defaultdict(Counter)
    for e in result.entries:
        grouped[(e.arch, e.backend, e.topk, e.page_size)][e.status] += 1
    rows = [
        Bucket(arch=a, backend=b, topk=t, page_size=p, counts={c: n[c] for c in Coverage}) for (a, b, t, p), n in grouped.items()
    ]
    return sorted(rows, key=lambda r: (_num(r.arch.removeprefix("sm")), r.backend, _num(r.topk), _num(r.page_size)))


def totals(result: CoverageResult) -> dict[str, int]:
    counts = Counter(e.status for e in result.entries)
    return {c.value: counts[c] for c in Coverage}


def coverage_document(result: CoverageResult) -> dict[str, Any]:
    return {
        "schema": COVERAGE_SCHEMA,
        "runners": list(result.runners),
        "reports": [
            {"path": s.label, "runner": s.report.runner.name, "shard": s.report.shard, "cells": len(s.report.cells)}
            for s in result.sources
        ],
        "totals": totals(result),
        "findings": [
            {"kind": f.kind.value, "severity": f.severity.value, "subject": f.subject, "message": f.message}
            for f in result.findings
        ],
        "buckets": [
            {
                "arch": b.arch,
                "backend": b.backend,
                "topk": b.topk,
                "page_size": b.page_size,
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
        lines += [f"- <code>{f.kind.value}</code> {md_text(f.message)}" for f in errors] + [""]
    tot = totals(result)
    lines += ["| " + " | ".join(_SHORT[c] for c in _COLUMNS) + " |", "|" + "---:|" * len(_COLUMNS)]
    lines += ["| " + " | ".join(str(tot[c.value]) for c in _COLUMNS) + " |", ""]
    if heatmap:
        lines += [f"![coverage heatmap]({heatmap})", ""]
    lines += ["| arch | backend | topk | page | " + " | ".join(_SHORT[c] for c in _COLUMNS) + " |"]
    lines += ["|---|---|---:|---:|" + "---:|" * len(_COLUMNS)]
    for b in buckets(result):
        cells = " | ".join(str(b.counts[c]) if b.counts[c] else "" for c in _COLUMNS)
        lines.append(f"| {md_text(b.arch)} | {md_text(b.backend)} | {b.topk} | {b.page_size} | {cells} |")
    sources = ", ".join(
        f"{md_code(s.label)} ({md_text(s.report.runner.name)}, {len(s.report.cells)} results)" for s in result.sources
    )
    lines += ["", f"Reports: {sources or 'none'}.", ""]
    return bounded_markdown(lines)
