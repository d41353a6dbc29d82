"""`report --html` shows problems first: each once, worst first, every row with its runner; a title from the inputs;
then a test x runner view with each test's file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.report import CellStatus, write_report

from .conftest import make_report, run_cells
from .test_report_html import data_of, guards_doc, parse

COLUMNS = ("from", "kind", "severity", "path", "line", "subject", "runner", "message")
TEST_FILE = "tests/gpu/test_attention_cells.py"
TEST_SOURCE = "import pytest\n\n\nclass TestDecode:\n    def test_cell(self, matrix_cell):\n        pass\n"


def page(capsys: pytest.CaptureFixture[str], out: Path, *argv: str | Path) -> tuple[dict, str]:
    code = main(["report", "--html", str(out), *map(str, argv)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    data = data_of(out.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data, printed.out


def rows_of(data: dict) -> list[dict]:
    return [dict(zip(COLUMNS, row, strict=True)) for row in data["findings"]]


@pytest.fixture
def run_and_merge(tmp_path, capsys, default_matrix, runners) -> tuple[Path, Path]:
    """A 4-gpu-b200 run with one unexpected skip, and the coverage merge `specmatrix coverage` made from it."""
    b200 = runners["4-gpu-b200"]
    cells = run_cells(default_matrix, b200)
    report = make_report(
        default_matrix, b200, dict.fromkeys(cells, CellStatus.PASSED) | {cells[3]: CellStatus.SKIPPED_UNEXPECTED}
    )
    test = f"{TEST_FILE}::TestDecode::test_cell"
    report = type(report)(**{**vars(report), "cells": tuple(type(c)(**{**vars(c), "test": test}) for c in report.cells)})
    run = tmp_path / "reports" / "b200.json"
    write_report(report, run)
    assert main(["coverage", str(run), "--out", str(tmp_path / "cov"), "--no-heatmap"]) == 1
    capsys.readouterr()
    return run, tmp_path / "cov" / "coverage.json"


def test_a_finding_a_run_report_and_its_coverage_merge_both_state_is_listed_once(tmp_path, capsys, run_and_merge):
    data, _ = page(capsys, tmp_path / "p.html", *run_and_merge)
    skips = [r for r in rows_of(data) if r["kind"] == "unexpected-skip"]
    assert len(skips) == 1
    assert skips[0]["from"] == "run report + coverage merge"
    assert len({tuple(r) for r in data["findings"]}) == len(data["findings"])


def test_every_row_names_its_runner_and_the_merge_rows_their_test(tmp_path, capsys, run_and_merge):
    guards = tmp_path / "guards.json"
    guards.write_text(json.dumps(guards_doc("plain")), encoding="utf-8")
    data, _ = page(capsys, tmp_path / "p.html", *run_and_merge, guards)
    rows = rows_of(data)
    assert rows and all(r["runner"] for r in rows)
    (skip,) = [r for r in rows if r["kind"] == "unexpected-skip"]
    assert (skip["runner"], skip["subject"]) == ("4-gpu-b200", f"{TEST_FILE}::TestDecode::test_cell")


def test_errors_come_first_and_what_ran_before_what_an_audit_predicts(tmp_path, capsys, run_and_merge):
    guards = tmp_path / "guards.json"
    doc = guards_doc("plain")
    warning = {**doc["findings"][0], "kind": "disabled-by-skip", "severity": "warning", "failing": False}  # type: ignore[index]
    doc["findings"] = [warning, *doc["findings"]]  # type: ignore[misc]
    guards.write_text(json.dumps(doc), encoding="utf-8")
    data, _ = page(capsys, tmp_path / "p.html", guards, *run_and_merge)  # the audit given first
    rows = rows_of(data)
    severities = [r["severity"] for r in rows]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
    errors = [r["kind"] for r in rows if r["severity"] == "error"]
    assert errors.index("unexpected-skip") < errors.index("silent-skip")  # not last: the run's own result leads


def test_the_page_opens_with_the_problems():
    from matrix.coverage.html import TEMPLATE

    sections = [dict(attrs).get("id") for tag, attrs in parse(TEMPLATE).tags if tag == "section"]
    assert sections[0] == "problems-section" and sections[-1] == "inputs-section"
    assert sections.index("tests-section") < sections.index("grid-section")


def test_a_pytest_audit_alone_is_titled_by_what_it_audited(tmp_path, capsys):
    root = Path(__file__).resolve().parents[2] / "examples" / "pytest-project"
    audit = tmp_path / "audit.json"
    main(["pytest-audit", str(root), "--format", "json", "--output", str(audit)])
    capsys.readouterr()
    data, out = page(capsys, tmp_path / "p.html", audit)
    assert data["title"] == f"pytest audit of {root}"
    assert "frozen-kv" not in out and "cells x" not in out and "0 runner" not in out
    assert out.startswith(f"specmatrix report: pytest audit of {root}: 1 input(s), 5 finding(s); wrote ")
    unscheduled = [r for r in rows_of(data) if r["kind"] == "unscheduled"]
    assert unscheduled and unscheduled[0]["runner"] == "no runner"
    view = {row["test"]: row for row in data["tests"]["rows"]}
    assert view["tests/test_allreduce.py::test_allreduce_sum"]["where"].endswith("tests/test_allreduce.py:9")
    assert data["tests"]["runners"] == ["h100", "no runner"]


def test_with_run_reports_the_title_names_the_matrix_and_its_runners(tmp_path, capsys, run_and_merge, default_matrix):
    data, out = page(capsys, tmp_path / "p.html", run_and_merge[0])
    assert data["title"] == f"{default_matrix.name} on 4-gpu-b200"
    assert f"{len(default_matrix.cells)} cells x 1 runner(s)" in out


def test_the_test_view_gives_each_run_test_its_file_and_line(tmp_path, capsys, run_and_merge):
    checkout = tmp_path / "checkout"
    (checkout / "tests" / "gpu").mkdir(parents=True)
    (checkout / TEST_FILE).write_text(TEST_SOURCE, encoding="utf-8")
    data, _ = page(capsys, tmp_path / "p.html", run_and_merge[0], "--checkout", checkout)
    (row,) = data["tests"]["rows"]
    assert row["test"] == f"{TEST_FILE}::TestDecode::test_cell" and row["where"] == f"{TEST_FILE}:5"
    assert row["worst"] == "error"
    labels = {label for _, label, _ in row["cells"]}
    assert "1 unexpected skip" in labels and any(label.endswith(" passed") for label in labels)
    assert data["tests"]["runners"] == ["4-gpu-b200"]
    # Without the checkout the file is still named; the line is left out, never guessed.
    data, _ = page(capsys, tmp_path / "q.html", run_and_merge[0], "--checkout", tmp_path / "elsewhere")
    assert data["tests"]["rows"][0]["where"] == TEST_FILE
