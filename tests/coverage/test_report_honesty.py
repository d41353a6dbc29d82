"""A run report cannot make coverage or the page say more than the matrix allows: the class of each skip is derived
from the matrix's expectation, and a report planned from another matrix of the same name is refused."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from matrix.cli.main import main
from matrix.core.loader import load_matrix
from matrix.core.report import CellStatus, from_json, matrix_digest, to_json, write_report
from matrix.coverage.merge import Coverage, ReportSource, merge

from .conftest import make_report, run_cells


@pytest.fixture
def stored(tmp_path, default_matrix, runners):
    """A stored 4-gpu-b200 report where every RUN cell passed, as the plugin writes it (with the digest)."""
    runner = runners["4-gpu-b200"]
    report = make_report(default_matrix, runner, dict.fromkeys(run_cells(default_matrix, runner), CellStatus.PASSED))
    report = replace(report, matrix_digest=matrix_digest(default_matrix))
    path = tmp_path / "report.json"
    write_report(report, path)
    return path


def _edit(path, **cell_status):
    """Set the status of some cells by hand, with counts that agree (as an edited report would carry)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    for cell in doc["cells"]:
        if cell["cell"] in cell_status:
            cell["status"] = cell_status[cell["cell"]]
    doc["counts"] = to_json(from_json({k: v for k, v in doc.items() if k != "counts"}, "edited"))["counts"]
    path.write_text(json.dumps(doc), encoding="utf-8")


def test_a_must_run_cell_relabelled_as_an_expected_skip_is_an_unexpected_skip(tmp_path, capsys, stored, default_matrix):
    doc = json.loads(stored.read_text(encoding="utf-8"))
    cell = doc["cells"][0]["cell"]
    _edit(stored, **{cell: "skipped-expected"})
    code = main(["coverage", str(stored), "--out", str(tmp_path / "cov"), "--no-heatmap"])
    out = capsys.readouterr().out
    assert code == 1
    assert "unexpected-skip:" in out and cell in out
    coverage = json.loads((tmp_path / "cov" / "coverage.json").read_text(encoding="utf-8"))
    assert coverage["totals"]["skipped-unexpected"] == 1
    # The page counts the same finding (its status line names them; the page itself is a picture of the merge).
    page = tmp_path / "page.html"
    assert main(["report", "--html", str(page), str(stored)]) == 0
    assert "1 finding(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("reported", "expected_outcome", "judged"),
    [
        (CellStatus.SKIPPED_EXPECTED, "run", Coverage.SKIPPED_UNEXPECTED),
        (CellStatus.SKIPPED_UNEXPECTED, "run", Coverage.SKIPPED_UNEXPECTED),
        (CellStatus.SKIPPED_UNEXPECTED, "skip", Coverage.SKIPPED_EXPECTED),
        (CellStatus.SKIPPED_EXPECTED, "skip", Coverage.SKIPPED_EXPECTED),
    ],
)
def test_the_skip_class_comes_from_the_matrix(default_matrix, runners, reported, expected_outcome, judged):
    from matrix.core.expect import effective_versions, expectations

    runner = runners["4-gpu-b200"]
    exps = expectations(default_matrix, runner, effective_versions(default_matrix, {}))
    cell = next(c.id for c in default_matrix.cells if exps[c.id].outcome.value == expected_outcome)
    report = make_report(default_matrix, runner, {cell: reported})
    result = merge(default_matrix, runners, [ReportSource(label="r.json", report=report)])
    (entry,) = [e for e in result.entries if e.cell == cell]
    assert entry.status is judged


def test_a_report_of_another_matrix_with_the_same_name_is_refused_in_one_line(tmp_path, capsys, stored, default_matrix):
    doc = json.loads(stored.read_text(encoding="utf-8"))
    other = replace(default_matrix, rules=default_matrix.rules[1:])  # one rule fewer: another matrix, the same name
    assert other.name == default_matrix.name
    doc["matrix_digest"] = matrix_digest(other)
    stored.write_text(json.dumps(doc), encoding="utf-8")
    for command in (
        ["coverage", str(stored), "--out", str(tmp_path / "cov"), "--no-heatmap"],
        ["report", "--html", str(tmp_path / "p.html"), str(stored)],
    ):
        assert main(command) == 2
        err = capsys.readouterr().err
        (line,) = err.splitlines()
        assert f"planned from another matrix named {default_matrix.name!r}" in line


def test_an_older_report_without_a_digest_is_judged_by_this_matrix(tmp_path, capsys, stored):
    doc = json.loads(stored.read_text(encoding="utf-8"))
    del doc["matrix_digest"]
    stored.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["coverage", str(stored), "--out", str(tmp_path / "cov"), "--no-heatmap"]) == 0
    cell = doc["cells"][0]["cell"]
    _edit(stored, **{cell: "skipped-expected"})
    assert main(["coverage", str(stored), "--out", str(tmp_path / "cov2"), "--no-heatmap"]) == 1
    capsys.readouterr()


def test_the_digest_follows_what_decides_outcomes_not_where_the_file_lies(default_matrix):
    assert matrix_digest(load_matrix()) == matrix_digest(default_matrix)
    assert matrix_digest(replace(default_matrix, source_path="/elsewhere/matrix.toml")) == matrix_digest(default_matrix)
    assert matrix_digest(replace(default_matrix, rules=default_matrix.rules[1:])) != matrix_digest(default_matrix)
    assert matrix_digest(replace(default_matrix, pins={**default_matrix.pins, "x": "1"})) != matrix_digest(default_matrix)


def test_the_digest_round_trips_and_is_left_out_when_unknown(default_matrix, runners):
    runner = runners["4-gpu-b200"]
    report = make_report(default_matrix, runner, {})
    assert "matrix_digest" not in to_json(report)
    kept = replace(report, matrix_digest=matrix_digest(default_matrix))
    assert from_json(json.loads(json.dumps(to_json(kept))), "r.json").matrix_digest == matrix_digest(default_matrix)
