"""The data of the HTML coverage page: the cell x runner grid, rule trails, test results and findings; pure.

Columns and tables rather than one object per cell: a 20,000-cell matrix over 8 runners stays a few MB. Every
string a trail or a result repeats (test names, skip reasons, rule details) is stored once and referred to by index.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from matrix.core.model import Expectation, Matrix, Value
from matrix.core.report import CellStatus
from matrix.coverage.inputs import FindingRow, InputFile, InputKind, RowSeverity, RunRow
from matrix.coverage.merge import Coverage, CoverageResult
from matrix.coverage.problems import NO_RUNNER, Problem, page_title, problems
from matrix.coverage.tests_view import tests_view

PAGE_SCHEMA = "specmatrix.html-report/1"


@dataclass(frozen=True, kw_only=True)
class OutcomeStyle:
    """How the page tells an outcome: a one-letter code (also its CSS class), a word and a shape."""

    code: str
    coverage: Coverage
    label: str
    symbol: str


# Worst first, as the merge orders them; symbols differ in shape so the grid reads without colour.
OUTCOMES = (
    OutcomeStyle(code="C", coverage=Coverage.CRASHED, label="crashed", symbol="\u203c"),  # double exclamation
    OutcomeStyle(code="F", coverage=Coverage.FAILED, label="failed", symbol="\u2717"),  # ballot x
    OutcomeStyle(code="U", coverage=Coverage.SKIPPED_UNEXPECTED, label="unexpected skip", symbol="\u26a0"),  # warning
    OutcomeStyle(code="N", coverage=Coverage.NEVER_RAN, label="never ran", symbol="\u2205"),  # empty set
    OutcomeStyle(code="P", coverage=Coverage.PASSED, label="passed", symbol="\u2713"),  # check mark
    OutcomeStyle(code="S", coverage=Coverage.SKIPPED_EXPECTED, label="expected skip", symbol="\u25cb"),  # white circle
)
_CODE = {o.coverage: o.code for o in OUTCOMES}
# A test result's status, one letter each (the panel spells them out).
RESULT_CODES = {
    CellStatus.PASSED: "p",
    CellStatus.FAILED: "f",
    CellStatus.ERROR: "e",
    CellStatus.SKIPPED_EXPECTED: "s",
    CellStatus.SKIPPED_UNEXPECTED: "u",
    CellStatus.CRASHED: "c",
    CellStatus.NOT_RUN: "n",
}


class _Interned:
    """A list of distinct values; `index(v)` adds `v` once and returns its position."""

    def __init__(self, first: Any = None) -> None:
        self.items: list[Any] = [] if first is None else [first]
        self._where: dict[Any, int] = {} if first is None else {first: 0}

    def index(self, value: Any) -> int:
        found = self._where.get(value)
        if found is None:
            found = self._where[value] = len(self.items)
            self.items.append(value)
        return found


def _trail_key(exp: Expectation, rules: dict[str, int], strings: _Interned) -> tuple[Any, ...]:
    verdicts = tuple((rules[v.rule.id], int(v.satisfied), strings.index(v.detail)) for v in exp.trail)
    return (exp.outcome.value, exp.impl, verdicts)


def _results(
    result: CoverageResult, cell_index: dict[str, int], strings: _Interned
) -> tuple[list[dict[str, Any]], list[FindingRow]]:
    """Each report's cell results, sorted by cell and stored as columns (cell positions as deltas)."""
    out: list[dict[str, Any]] = []
    strays: list[FindingRow] = []
    runner_index = {name: i for i, name in enumerate(result.runners)}
    for source in result.sources:
        known = [c for c in source.report.cells if c.cell in cell_index]
        for c in source.report.cells:
            if c.cell not in cell_index:
                strays.append(
                    FindingRow(
                        origin=InputKind.RUN_REPORT,
                        kind="unknown-cell",
                        severity=RowSeverity.WARNING,
                        path="",
                        line=None,
                        subject=c.nodeid,
                        runner=source.report.runner.name,
                        message=f"{source.label}: result for cell {c.cell!r}, which this matrix does not have ({c.status.value})",
                    )
                )
        known.sort(key=lambda c: cell_index[c.cell])
        deltas, previous, nodeids = [], 0, {}
        for position, c in enumerate(known):
            here = cell_index[c.cell]
            deltas.append(here - previous)
            previous = here
            if c.nodeid != f"{c.test}[{c.cell}]":
                nodeids[str(position)] = c.nodeid
        out.append(
            {
                "source": source.label,
                "runner": runner_index[source.report.runner.name],
                "cells": deltas,
                "tests": [strings.index(c.test) for c in known],
                "status": "".join(RESULT_CODES[c.status] for c in known),
                "reasons": [strings.index(c.skip_reason or "") for c in known],
                "messages": [strings.index(c.message or "") for c in known],
                "nodeids": nodeids,
            }
        )
    return out, strays


def merge_rows(result: CoverageResult) -> list[FindingRow]:
    """The coverage merge's findings (cells that crashed, skipped unexpectedly or never ran; missing shards), each
    with its test (the subject) and its runner."""
    return [
        FindingRow(
            origin=InputKind.RUN_REPORT,
            kind=f.kind,
            severity=RowSeverity(f.severity.value),  # the kind's own (matrix/core/kinds.py)
            path=f.path,
            line=f.line or None,
            subject=f.subject,
            runner=", ".join(f.runners),
            message=f.message,
        )
        for f in result.findings
    ]


def _row(p: Problem) -> list[Any]:
    f = p.row
    return [p.origin_text, f.kind, f.severity.value, f.path, f.line, f.subject, f.runner or NO_RUNNER, f.message]


def page_data(
    matrix: Matrix,
    result: CoverageResult,
    files: Sequence[InputFile],
    rows: Sequence[FindingRow],
    *,
    generated: str,
    grid: bool = True,
    runs: Sequence[RunRow] = (),
    lines: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready document; without `grid` (no input is a run report) the cells
    and runners are left out, as nothing ran them. Findings are listed once each, worst first
    (`matrix.coverage.problems`); `lines` gives the line of a run report's test (node id -> line) where known."""
    if not grid:
        matrix = replace(matrix, cells=())
    cell_index = {cell.id: i for i, cell in enumerate(matrix.cells)}
    axes = [{"name": a.name, "values": [str(v) for v in a.values]} for a in matrix.axes]
    # -1: a cell whose group leaves the axis unset.
    value_index: list[dict[Value | None, int]] = [{v: i for i, v in enumerate(a.values)} for a in matrix.axes]
    axis_columns = [[value_index[k].get(cell.get(a.name), -1) for cell in matrix.cells] for k, a in enumerate(matrix.axes)]
    status = {(e.runner, e.cell): _CODE[e.status] for e in result.entries}
    cell_grid = ["".join(status.get((runner, c.id), "N") for c in matrix.cells) for runner in result.runners]
    strings = _Interned("")
    rules = {rule.id: i for i, rule in enumerate(matrix.rules)}
    trails = _Interned()
    trail_columns = []
    for runner in result.runners:
        exps = result.expectations[runner]
        trail_columns.append([trails.index(_trail_key(exps[c.id], rules, strings)) for c in matrix.cells])
    results, strays = _results(result, cell_index, strings)
    listed = problems([*merge_rows(result), *strays, *rows])
    reports = Counter(s.report.runner.name for s in result.sources)
    runners = []
    for name, column in zip(result.runners, cell_grid, strict=True):
        profile = result.profiles[name]
        counts = Counter(column)
        runners.append(
            {
                "name": name,
                "gpus": profile.gpus,
                "sm": profile.sm,
                "reports": reports[name],
                "counts": {o.code: counts[o.code] for o in OUTCOMES},
            }
        )
    return {
        "schema": PAGE_SCHEMA,
        "title": page_title(matrix.name, files, result.runners, grid=grid),
        "matrix": matrix.name,
        "matrix_source": matrix.source_path,
        "generated": generated,
        "outcomes": [{"code": o.code, "name": o.coverage.value, "label": o.label, "symbol": o.symbol} for o in OUTCOMES],
        "result_codes": {code: status.value for status, code in RESULT_CODES.items()},
        "axes": axes,
        "cells": {"ids": [c.id for c in matrix.cells], "axes": axis_columns},
        "runners": runners if grid else [],
        "grid": cell_grid if grid else [],
        "show_grid": grid,
        "rules": [{"id": r.id, "kind": r.kind.value, "reason": r.reason, "source": r.source} for r in matrix.rules],
        "trails": [{"outcome": o, "impl": impl, "verdicts": [list(v) for v in verdicts]} for o, impl, verdicts in trails.items],
        "trail_index": trail_columns,
        "results": results,
        "strings": strings.items,
        "inputs": [
            {
                "label": f.label,
                "kind": f.kind.value,
                "schema": f.schema,
                "created": f.created,
                "created_from": f.created_from,
                "summary": f.summary,
            }
            for f in files
        ],
        "findings": [_row(p) for p in listed],
        "tests": tests_view(result, listed, lines or {}),
        "runs": runs_data(runs),
    }


# Problems first: what a run refutes, then what never ran, then what the runs add; agreement last.
_JOIN_ORDER = ("contradicted", "absent", "not-collected", "not-judged", "resolved", "confirmed")


def runs_data(rows: Sequence[RunRow]) -> dict[str, Any]:
    """The join of a pytest audit with its runs as a test x runner table: one row per test (problems first), one
    `[static, observed, join, message]` cell per runner (null where the runner has no word on the test)."""
    runners = list(dict.fromkeys(r.runner for r in rows))
    column = {name: k for k, name in enumerate(runners)}
    tests: dict[str, dict[str, Any]] = {}
    for r in rows:
        test = tests.setdefault(
            r.test, {"test": r.test, "where": r.path + (f":{r.line}" if r.line else ""), "cells": [None] * len(runners)}
        )
        test["cells"][column[r.runner]] = [r.static, r.observed, r.join, r.message]
    rank = {name: k for k, name in enumerate(_JOIN_ORDER)}

    def worst(test: dict[str, Any]) -> int:
        return min((rank.get(c[2], len(rank)) for c in test["cells"] if c is not None), default=len(rank))

    ordered = sorted(tests.values(), key=lambda t: (worst(t), t["test"]))
    counts = Counter(r.join for r in rows)
    return {"runners": runners, "tests": ordered, "counts": {k: counts[k] for k in _JOIN_ORDER if counts[k]}}
