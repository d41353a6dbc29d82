"""Coverage merge: every finding kind turns the gate red, corrupt input exits 2, the heatmap renders."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from matrix.cli.main import main
from matrix.core.report import CellStatus, FindingKind, RunnerInfo
from matrix.coverage.merge import Coverage, ReportSource, merge

from .conftest import make_report, run_cells


@pytest.fixture
def b200_cells(default_matrix, runners):
    return run_cells(default_matrix, runners["4-gpu-b200"])


def two_shards(cells):
    half = len(cells) // 2
    return cells[:half], cells[half:]


def plan_file(tmp_path, cells_per_shard, runner="4-gpu-b200"):
    doc = {
        "schema": "specmatrix.shard-plan/1",
        "runner": runner,
        "shards": [{"index": k + 1, "cells": list(c)} for k, c in enumerate(cells_per_shard)],
    }
    path = tmp_path / "plan" / "plan.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def coverage(capsys, *argv):
    code = main(["coverage", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_all_planned_cells_passing_is_clean(tmp_path, capsys, runners, report_file, b200_cells):
    first, second = two_shards(b200_cells)
    r1 = report_file("shard-1.json", runners["4-gpu-b200"], dict.fromkeys(first, CellStatus.PASSED))
    r2 = report_file("shard-2.json", runners["4-gpu-b200"], dict.fromkeys(second, CellStatus.PASSED))
    code, out, _ = coverage(
        capsys, r1, r2, "--plan", plan_file(tmp_path, [first, second]), "--out", tmp_path / "cov", "--no-heatmap"
    )
    assert code == 0, out
    doc = json.loads((tmp_path / "cov" / "coverage.json").read_text())
    assert doc["totals"]["passed"] == len(b200_cells) and doc["totals"]["never-ran"] == 0
    assert doc["findings"] == []


@pytest.mark.parametrize(
    ("status", "kind", "words"),
    [
        (CellStatus.SKIPPED_UNEXPECTED, FindingKind.UNEXPECTED_SKIP, "skipped unexpectedly"),
        (CellStatus.CRASHED, FindingKind.CRASHED, "crashed"),
        (CellStatus.NOT_RUN, FindingKind.NEVER_RAN, "expected to RUN but never ran"),
    ],
)
def test_a_bad_cell_is_a_finding_naming_its_bucket(tmp_path, capsys, runners, report_file, b200_cells, status, kind, words):
    bad = next(c for c in b200_cells if c.startswith("draft-trtllm_mha-topk4-page16"))
    statuses = dict.fromkeys(b200_cells, CellStatus.PASSED) | {bad: status}
    path = report_file("all.json", runners["4-gpu-b200"], statuses)
    code, out, _ = coverage(capsys, path, "--out", tmp_path / "cov", "--no-heatmap")
    assert code == 1
    assert f"{kind.value}: trtllm_mha topk 4 page_size 16 {words}" in out
    assert bad in out


def test_every_cell_finding_names_its_test_and_runner(default_matrix, runners, b200_cells):
    """A merge finding says which test skipped or crashed (its subject) and on which runner (its runners)."""
    b200 = runners["4-gpu-b200"]
    skipped, crashed = b200_cells[0], b200_cells[-1]
    statuses = dict.fromkeys(b200_cells, CellStatus.PASSED) | {skipped: CellStatus.SKIPPED_UNEXPECTED}
    one = make_report(default_matrix, b200, statuses)
    other = make_report(default_matrix, b200, {crashed: CellStatus.CRASHED})
    other = type(other)(
        **{**other.__dict__, "cells": tuple(replace(c, test="tests/gpu/test_other.py::test_o") for c in other.cells)}
    )
    result = merge(default_matrix, runners, [ReportSource(label="a", report=one), ReportSource(label="b", report=other)])
    found = {(f.kind, f.subject, f.runners) for f in result.findings}
    assert found == {
        ("unexpected-skip", "test_cell", ("4-gpu-b200",)),
        ("crashed", "tests/gpu/test_other.py::test_o", ("4-gpu-b200",)),
    }
    assert all(" on 4-gpu-b200 in " in f.message for f in result.findings)


def test_a_cell_no_result_came_for_names_its_runner(default_matrix, runners, b200_cells):
    report = make_report(default_matrix, runners["4-gpu-b200"], dict.fromkeys(b200_cells, CellStatus.PASSED))
    result = merge(default_matrix, runners, [ReportSource(label="a", report=report)], expect_runners=[runners["1-gpu-5090"]])
    never = [f for f in result.findings if f.kind == "never-ran"]
    assert never and all(f.runners == ("1-gpu-5090",) and f.subject.startswith("1-gpu-5090: ") for f in never)


def test_missing_shard_report_is_a_finding_and_its_cells_never_ran(tmp_path, capsys, runners, report_file, b200_cells):
    first, second = two_shards(b200_cells)
    r1 = report_file("shard-1.json", runners["4-gpu-b200"], dict.fromkeys(first, CellStatus.PASSED))
    code, out, _ = coverage(capsys, r1, "--plan", plan_file(tmp_path, [first, second]), "--out", tmp_path / "cov", "--no-heatmap")
    assert code == 1
    assert f"missing-report: shard 2 of 2 on 4-gpu-b200 ({len(second)} cells) has no report" in out
    assert "never-ran:" in out and "on no other runner" in out


def test_expect_shards_counts_reports(tmp_path, capsys, runners, report_file, b200_cells):
    r1 = report_file("shard-1.json", runners["4-gpu-b200"], dict.fromkeys(b200_cells, CellStatus.PASSED))
    code, out, _ = coverage(capsys, r1, "--expect-shards", "2", "--out", tmp_path / "cov", "--no-heatmap")
    assert code == 1 and "expected 2 shard reports, found 1" in out
    code, _, _ = coverage(capsys, r1, "--expect-shards", "1", "--out", tmp_path / "cov", "--no-heatmap")
    assert code == 0


def test_an_expected_runner_without_a_report_never_ran_anything(tmp_path, capsys, runners, report_file, b200_cells):
    r1 = report_file("b200.json", runners["4-gpu-b200"], dict.fromkeys(b200_cells, CellStatus.PASSED))
    code, out, _ = coverage(capsys, r1, "--expect-runners", "1-gpu-5090", "--out", tmp_path / "cov", "--no-heatmap")
    assert code == 1
    assert "expected to RUN but never ran on 1-gpu-5090" in out
    assert "(some ran on other runners)" in out  # b200 ran the same cells


def test_a_runner_unknown_to_the_profiles_is_judged_from_the_report(default_matrix, runners, b200_cells):
    report = make_report(default_matrix, runners["4-gpu-b200"], dict.fromkeys(b200_cells, CellStatus.PASSED))
    renamed = type(report)(**{**report.__dict__, "runner": RunnerInfo(name="lab-b200", gpus=4, capability=(10, 0))})
    result = merge(default_matrix, runners, [ReportSource(label="lab.json", report=renamed)])
    assert result.runners == ("lab-b200",) and not result.errors
    assert {e.arch for e in result.entries} == {"sm100"}


def test_duplicated_cell_takes_the_worst_status(default_matrix, runners, b200_cells):
    cell = b200_cells[0]
    good = make_report(default_matrix, runners["4-gpu-b200"], {cell: CellStatus.PASSED})
    bad = make_report(default_matrix, runners["4-gpu-b200"], {cell: CellStatus.CRASHED})
    result = merge(default_matrix, runners, [ReportSource(label="a", report=good), ReportSource(label="b", report=bad)])
    assert next(e for e in result.entries if e.cell == cell).status is Coverage.CRASHED


@pytest.mark.parametrize(
    "text",
    ['{"schema": "specmatrix.report/1", "runner"', '{"schema": "other/1"}', "\xff\xfe"],
    ids=["truncated", "schema", "bytes"],
)
def test_corrupt_report_exits_2_with_one_line(tmp_path, capsys, text):
    path = tmp_path / "bad.json"
    path.write_bytes(text.encode("latin-1"))
    code, _out, err = coverage(capsys, path, "--out", tmp_path / "cov")
    assert code == 2
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err


def test_no_input_at_all_is_a_usage_error(tmp_path, capsys):
    code, _, err = coverage(capsys, "--out", tmp_path / "cov")
    assert code == 2 and "no report given" in err


def test_markdown_json_and_heatmap_are_written(tmp_path, capsys, runners, report_file, b200_cells, default_matrix):
    h200 = run_cells(default_matrix, runners["1-gpu-h200"])
    statuses = dict.fromkeys(b200_cells, CellStatus.PASSED) | {b200_cells[3]: CellStatus.FAILED}
    r1 = report_file("b200.json", runners["4-gpu-b200"], statuses)
    r2 = report_file("h200.json", runners["1-gpu-h200"], dict.fromkeys(h200[:-10], CellStatus.PASSED))
    code, _, _ = coverage(capsys, r1, r2, "--out", tmp_path / "cov")
    assert code == 1  # ten h200 cells never ran
    png = (tmp_path / "cov" / "heatmap.png").read_bytes()
    svg = (tmp_path / "cov" / "heatmap.svg").read_text()
    assert png.startswith(b"\x89PNG") and len(png) > 10_000
    assert "<svg" in svg and "sm100 trtllm_mha" in svg and "sm90 fa3" in svg
    md = (tmp_path / "cov" / "coverage.md").read_text()
    assert "| sm100 | trtllm_mha | 4 | 16 |" in md and "![coverage heatmap](heatmap.png)" in md
    assert "![coverage heatmap]" not in (tmp_path / "cov" / "summary.md").read_text()
