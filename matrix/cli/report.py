"""`specmatrix report --html OUT.html INPUTS...`: run reports, guard audits and ledger joins as one page."""

from __future__ import annotations

import argparse
import ast
import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from matrix.cli.options import add_output_options
from matrix.core.atomic import refuse_input_targets
from matrix.core.errors import EXIT_OK, ReportError, UsageError
from matrix.core.jsonio import dumps_indented, loads_untrusted
from matrix.core.options import Options, load
from matrix.core.report import IN_PROGRESS_SCHEMA
from matrix.core.report import SCHEMA as RUN_REPORT_SCHEMA
from matrix.core.targets import write_output
from matrix.core.textfiles import decode_python, read_limited, read_text
from matrix.coverage.gaps import SCHEMA as GAPS_SCHEMA
from matrix.coverage.html import render_html
from matrix.coverage.inputs import (
    Adapted,
    Adapter,
    Document,
    InputKind,
    adapt,
    coverage_merge,
    guard_audit,
    iso_utc,
    ledger_join,
    ledger_join_v1,
    one_matrix,
    pytest_audit,
    run_report,
    unfinished_run,
    untested_cells,
)
from matrix.coverage.merge import merge
from matrix.coverage.page import page_data
from matrix.coverage.views import COVERAGE_SCHEMA
from matrix.ledger.render import SCHEMA as LEDGER_SCHEMA
from matrix.ledger.render import SCHEMA_V1 as LEDGER_SCHEMA_V1
from matrix.pytest_suites.render import SCHEMA as PYTEST_AUDIT_SCHEMA
from matrix.registered_suite.gate import REPORT_SCHEMA as GUARDS_SCHEMA
from matrix.shard.output import read_plan

PAGE_SUMMARY_SCHEMA = "specmatrix.report-page/1"  # what `report --format json` prints about the page it wrote

# The one place that says which document kind each adapter reads.
ADAPTERS: dict[str, Adapter] = {
    RUN_REPORT_SCHEMA: run_report,
    IN_PROGRESS_SCHEMA: unfinished_run,
    GUARDS_SCHEMA: guard_audit,
    LEDGER_SCHEMA: ledger_join,
    LEDGER_SCHEMA_V1: ledger_join_v1,  # written before the ledger stored core findings
    PYTEST_AUDIT_SCHEMA: pytest_audit,
    COVERAGE_SCHEMA: coverage_merge,
    GAPS_SCHEMA: untested_cells,
}


def register(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="one self-contained HTML page of what CI tested: run reports, audits, ledger joins and coverage merges",
        description=(
            "Merge run reports (specmatrix.report/1, any runners and shards), guard and pytest audits (specmatrix guards "
            "/ pytest-audit --format json), ledger joins (specmatrix ledger --format json) and coverage merges "
            "(coverage.json) into one HTML file that opens offline; the cell grid only when a run report is given; a run's "
            "unfinished-report marker is listed as a missing report. "
            "Every run report must come from the matrix given (--matrix); exit 2 on bad or mixed input."
        ),
    )
    p.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="JSON inputs, or folders holding them (*.json)")
    p.add_argument("--html", type=Path, required=True, metavar="OUT", help="the page to write (atomically)")
    p.add_argument(
        "--plan",
        type=Path,
        metavar="PATH",
        help="the shard plan (plan.json or its folder): its runner counts and a shard without a report is a finding "
        "(default: none)",
    )
    p.add_argument(
        "--checkout",
        type=Path,
        metavar="DIR",
        default=Path("."),
        help="the checkout the run reports' test node ids are relative to: each test's line is read from its file "
        "there (default: the current directory; a file not found leaves its tests with the file alone)",
    )
    add_output_options(p, ("text", "json"))
    p.set_defaults(func=cmd_report)


def _paths(given: list[Path], *, planned: bool) -> list[Path]:
    """Files as given, folders as their *.json; an empty folder is an error unless a plan says what was due."""
    out: list[Path] = []
    for path in given:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.json") if p.is_file())
            if not found and not planned:
                raise UsageError(f"report: {path}: folder holds no *.json input (and no --plan says what was due)")
            out.extend(found)
        else:
            out.append(path)
    return out


def read_input(path: Path) -> Adapted:
    """One input file through the adapter of its schema."""
    text = read_text(path, ReportError)
    try:
        modified = iso_utc(path.stat().st_mtime)
    except OSError as exc:
        raise ReportError(f"{path}: {exc.strerror or exc}") from None
    doc = loads_untrusted(text, str(path), ReportError)
    return adapt(Document(label=str(path), doc=doc, modified=modified), ADAPTERS)


MAX_TEST_FILE_BYTES = 4 * 1024 * 1024
MAX_TEST_FILES = 2000


def _def_line(tree: ast.Module, names: list[str]) -> int | None:
    """The line of `Class::...::name` in a module (the `def` itself), or None."""
    body: list[ast.stmt] = tree.body
    line = None
    for name in names:
        found = next(
            (n for n in body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None
        )
        if found is None:
            return None
        line, body = found.lineno, found.body
    return line


def test_lines(tests: Iterable[str], root: Path) -> dict[str, int]:
    """The line of each run report test (`path::name`) whose file lies under `root` (the checkout the page is made
    in); a file that is missing, outside, oversized or not Python leaves its tests without a line."""
    by_file: dict[str, list[str]] = {}
    for test in tests:
        path, _, rest = test.partition("::")
        if rest:
            by_file.setdefault(path, []).append(test)
    found: dict[str, int] = {}
    base = root.resolve()
    for path, named in list(by_file.items())[:MAX_TEST_FILES]:
        target = (base / path).resolve()
        if not target.is_relative_to(base) or not target.is_file():
            continue
        try:
            data = read_limited(target, MAX_TEST_FILE_BYTES)
            tree = ast.parse(decode_python(data)) if len(data) <= MAX_TEST_FILE_BYTES else None
        except (OSError, ValueError, SyntaxError, RecursionError, MemoryError):
            continue
        if tree is None:
            continue
        for test in named:
            line = _def_line(tree, test.partition("::")[2].split("::"))
            if line is not None:
                found[test] = line
    return found


def cmd_report(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    planned = read_plan(args.plan) if args.plan else None
    inputs = _paths(args.inputs, planned=planned is not None)
    refuse_input_targets((("--html", args.html),), [*inputs, *([args.plan] if args.plan else [])])
    adapted = [read_input(p) for p in inputs]
    files = [a.file for a in adapted]
    one_matrix(loaded.matrix.name, files)
    sources = [a.report for a in adapted if a.report is not None]
    result = merge(loaded.matrix, loaded.runners, sources, planned=planned)
    rows = [row for a in adapted for row in a.findings]
    generated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    runs = any(a.file.kind is InputKind.RUN_REPORT for a in adapted) or planned is not None
    joined = [r for a in adapted for r in a.runs]
    lines = test_lines({c.test for s in sources for c in s.report.cells}, args.checkout)
    data = page_data(loaded.matrix, result, files, rows, generated=generated, grid=runs, lines=lines, runs=joined)
    page = render_html(data)
    write_output("--html", args.html, page)
    cells = len(loaded.matrix.cells) if runs else 0
    if args.format == "json":
        doc = {
            "schema": PAGE_SUMMARY_SCHEMA,
            "title": data["title"],
            "inputs": [{"label": f.label, "kind": f.kind.value, "schema": f.schema} for f in files],
            "cells": cells,
            "runners": list(result.runners),
            "findings": len(data["findings"]),
            "html": str(args.html),
            "bytes": len(page.encode()),
        }
        print(dumps_indented(doc))
        return EXIT_OK
    # The grid's size only when a run report drew it: a page of audits alone is about its inputs, not the matrix.
    grid = f"{cells} cells x {len(result.runners)} runner(s), " if runs else ""
    print(
        f"specmatrix report: {data['title']}: {len(files)} input(s), {grid}{len(data['findings'])} finding(s); "
        f"wrote {args.html} ({len(page.encode()) / 1e6:.2f} MB)"
    )
    return EXIT_OK
