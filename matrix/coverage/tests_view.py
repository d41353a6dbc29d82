"""The page's test x runner view: each test with its file:line, and what each runner did with it or was found to do;
pure.

A test's results come from the run reports (its cells' statuses on each runner, counted); its findings from every
other input that names a test or a test file (guard, pytest and ledger audits; a coverage merge given without the
run reports it was made from). Rows are worst first: a test with an error on some runner, then a warning, then the
rest, each in file and line order.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.core.report import CellStatus
from matrix.coverage.inputs import InputKind
from matrix.coverage.merge import CoverageResult
from matrix.coverage.problems import NO_RUNNER, Problem

OK = "ok"
_RANK = {"error": 0, "warning": 1, "info": 2, OK: 3}
# What a result's status tells about its test on that runner, in the order the view lists them.
_STATUS = {
    CellStatus.CRASHED: ("crashed", "error"),
    CellStatus.FAILED: ("failed", "error"),
    CellStatus.ERROR: ("error", "error"),
    CellStatus.SKIPPED_UNEXPECTED: ("unexpected skip", "error"),
    CellStatus.NOT_RUN: ("not run", "error"),
    CellStatus.PASSED: ("passed", OK),
    CellStatus.SKIPPED_EXPECTED: ("expected skip", OK),
}
# Findings the run reports' own results already show, cell by cell.
_FROM_RESULTS = (InputKind.RUN_REPORT, InputKind.COVERAGE)
_PARAMS = re.compile(r"\[[^\]]*\]$")


@dataclass(kw_only=True)
class _Row:
    test: str
    path: str
    line: int | None
    labels: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)  # runner -> (label, severity) -> n


def test_of(subject: str, path: str) -> tuple[str, str] | None:
    """(test, file) a finding is about, parameters dropped; a finding about a whole file is its file's row; None for
    one about no test (a cell, a shard)."""
    if "::" in subject:
        test = _PARAMS.sub("", subject)
        return test, path or test.partition("::")[0]
    if path and (not subject or path == subject or path.endswith("/" + subject)):
        return subject or path, path
    return None


def tests_view(result: CoverageResult, listed: Sequence[Problem], lines: Mapping[str, int]) -> dict[str, Any]:
    """The view as page data: its runner columns and rows (`where` is file:line when the line is known)."""
    rows: dict[str, _Row] = {}
    runners: dict[str, None] = dict.fromkeys(result.runners)

    def row(test: str, path: str, line: int | None) -> _Row:
        found = rows.get(test)
        if found is None:
            found = rows[test] = _Row(test=test, path=path, line=line if line is not None else lines.get(test))
        elif found.line is None and line is not None:
            found.line = line
        return found

    ran: set[str] = set()
    for source in result.sources:
        runner = source.report.runner.name
        for cell in source.report.cells:
            ran.add(cell.test)
            said = _STATUS.get(cell.status, (cell.status.value, "error"))
            row(cell.test, cell.test.partition("::")[0], None).labels.setdefault(runner, Counter())[said] += 1
    for problem in listed:
        f = problem.row
        about = test_of(f.subject, f.path)
        if about is None or (about[0] in ran and all(o in _FROM_RESULTS for o in problem.origins)):
            continue
        target = row(about[0], about[1], f.line)
        for name in f.runner.split(", ") if f.runner else (NO_RUNNER,):
            runners.setdefault(name)
            target.labels.setdefault(name, Counter())[(f.kind, f.severity.value)] += 1
    if NO_RUNNER in runners:  # what no runner runs goes after every runner
        runners.pop(NO_RUNNER)
        runners[NO_RUNNER] = None
    index = {name: i for i, name in enumerate(runners)}
    keyed = []
    for r in rows.values():
        cells: list[tuple[int, str, str]] = []
        for column, counted in r.labels.items():
            for (text, severity), n in sorted(counted.items(), key=lambda kv: (_RANK[kv[0][1]], kv[0][0])):
                cells.append((index[column], _shown(text, n), severity))
        worst = min((c[2] for c in cells), key=_RANK.__getitem__, default=OK)
        where = f"{r.path}:{r.line}" if r.line else r.path
        shown = {"test": r.test, "where": where, "worst": worst, "cells": [list(c) for c in cells]}
        keyed.append(((_RANK[worst], r.path, r.line or 0, r.test), shown))
    keyed.sort(key=lambda pair: pair[0])
    return {"runners": list(runners), "rows": [data for _, data in keyed]}


_RESULT_LABELS = frozenset(label for label, _ in _STATUS.values())


def _shown(label: str, n: int) -> str:
    """`80 passed` for results (always counted); `silent-skip` or `silent-skip x3` for a finding kind."""
    if label in _RESULT_LABELS:
        return f"{n} {label}"
    return label if n == 1 else f"{label} \u00d7{n}"
