"""The join of the runs as every format shows it: the JSON `runs` section, a text section and a Markdown section;
the findings themselves go through the shared writers (GitHub annotations, SARIF, JUnit, baselines); pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from matrix.core.finding import Finding, Tool, spec_of
from matrix.core.output import md_code, md_text
from matrix.core.writers import Block, Column, Style, Table, kind_sections, md_head, md_row
from matrix.pytest_suites.joined import JoinKind, JoinResult, Outcome

RUNS_SCHEMA = "specmatrix.pytest-runs/1"  # the `runs` section's own shape, inside the pytest-audit report
TEXT_LIMIT = 200  # findings of one kind listed in text; JSON lists every one
_COUNTED = (
    (Outcome.CONFIRMED.value, "confirmed"),
    (Outcome.CONTRADICTED.value, "contradicted"),
    (Outcome.RESOLVED.value, "resolved"),
    (JoinKind.SKIPPED_IN_EVERY_RUN.value, "skipped in every run"),
    (Outcome.ABSENT.value, "absent"),
    (Outcome.NOT_COLLECTED.value, "not collected"),
    (Outcome.NOT_JUDGED.value, "not judged"),
)
ORDER = tuple(k.value for k in JoinKind)


def _said(counts: dict[str, int]) -> str:
    return ", ".join(f"{word} {counts[key]}" for key, word in _COUNTED)


def runs_doc(result: JoinResult) -> dict[str, Any]:
    """The JSON `runs` section: the inputs, the counts (all runners and each), and every test beside its runs."""
    return {
        "schema": RUNS_SCHEMA,
        "inputs": [
            {
                "runner": run.runner,
                "path": run.path,
                "files": [
                    {
                        "path": f.path,
                        "suites": list(f.suites),
                        "testcases": len(f.cases),
                        "matched": result.matched.get(f.path, 0),
                        "names": result.offsets.get(f.path, ""),
                    }
                    for f in run.files
                ],
            }
            for run in result.inputs
        ],
        "counts": result.counts(),
        "runners": {run: result.counts(run) for run in dict.fromkeys(r.runner for r in result.inputs)},
        "tests": [
            {
                "test": r.test,
                "path": r.path,
                "line": r.line,
                "runner": r.runner,
                "static": r.static,
                "observed": r.observed,
                "message": r.message,
                "join": r.outcome.value,
                "guard": r.guard,
            }
            for r in result.rows
        ],
    }


def _line(f: Finding) -> list[str]:
    guard = f" [{f.source}]" if f.source else ""
    where = f"{f.path}:{f.line}" if f.line else f.path
    return [f"{where}: {f.kind}: {f.scope} on {', '.join(f.runners)}: {f.message}{guard}"]


def runs_text(result: JoinResult, findings: Sequence[Finding]) -> list[str]:
    """The join's findings grouped by kind (at most `TEXT_LIMIT` each), then one line per input and the totals."""
    shown: list[Finding] = []
    listed: Counter[str] = Counter()
    left: Counter[str] = Counter()
    for f in findings:
        if f.kind not in ORDER:
            continue
        if listed[f.kind] < TEXT_LIMIT:
            listed[f.kind] += 1
            shown.append(f)
        else:
            left[f.kind] += 1
    lines = kind_sections(shown, Tool.PYTEST_AUDIT, ORDER, _line)
    lines += [f"({n} more {kind} findings: --format json lists them)" for kind, n in left.items()]
    for run in result.inputs:
        cases = sum(len(f.cases) for f in run.files)
        matched = sum(result.matched.get(f.path, 0) for f in run.files)
        mapped = "; ".join(f"{f.path}: {result.offsets[f.path]}" for f in run.files if f.path in result.offsets)
        lines.append(
            f"run {run.runner}: {run.path} ({len(run.files)} file(s), {cases} testcases, {matched} of this tree"
            f"{'; names ' + mapped if mapped else ''}): {_said(result.counts(run.runner))}"
        )
    lines.append(f"runs joined: {_said(result.counts())}")
    return lines


def _table() -> Table:
    return Table(
        columns=(
            Column(header="test", value=lambda f: f.scope, style=Style.CODE, limit=160),
            Column(header="runner", value=lambda f: ", ".join(f.runners)),
            Column(header="what the audit said and the run did", value=lambda f: f.message, limit=300),
            Column(header="guard read", value=lambda f: f.source, style=Style.CODE, limit=160),
        ),
        limit=100,
        more=lambda n: f"\n{n} more (the JSON report lists every one)",
    )


def runs_markdown(result: JoinResult, findings: Sequence[Finding]) -> tuple[list[str], list[Block]]:
    """A counts table (one row per runner and the total) and one collapsed table per kind of finding."""
    runners = list(dict.fromkeys(r.runner for r in result.inputs))
    lines = [
        "**Runs joined (JUnit XML)**",
        "",
        *md_head(["runner", *(w for _, w in _COUNTED)], ["---", *("---:" for _ in _COUNTED)]),
    ]
    for runner in [*runners, None]:
        counts = result.counts(runner)
        lines.append(md_row([md_code(runner) if runner else "**all**", *(str(counts[k]) for k, _ in _COUNTED)]))
    lines.append("")
    blocks: list[Block] = []
    for kind in ORDER:
        found = [f for f in findings if f.kind == kind]
        if found:
            heading = "" if blocks else "### What the runs say"
            summary = f"{kind}: {len(found)} {md_text(_title(kind))}"
            blocks.append(Block(summary=summary, table=_table(), findings=found, gap=True, heading=heading))
    return lines, blocks


def _title(kind: str) -> str:
    return spec_of(Tool.PYTEST_AUDIT, kind).title
