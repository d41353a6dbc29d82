"""`report --html` reads every JSON the tool writes; no cell grid without a run report; errors listed first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.report import CellStatus, write_report

from .conftest import make_report, run_cells
from .test_report_html import data_of

WORKFLOW = "on: push\njobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest tests/test_a.py\n"


def written_by_the_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """A pytest audit, a guard audit at --show info and a coverage merge, each as its command writes it."""
    root = tmp_path / "proj"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    (root / "tests" / "test_b.py").write_text("def test_nowhere():\n    pass\n", encoding="utf-8")
    out = {name: tmp_path / f"{name}.json" for name in ("pytest-audit", "guards")}
    main(["pytest-audit", str(root), "--format", "json", "--output", str(out["pytest-audit"])])
    suite = Path(__file__).parent.parent / "guards" / "fixture_suite"
    main(["guards", str(suite), "--no-workflows", "--show", "info", "--format", "json", "--output", str(out["guards"])])
    main(["coverage", "--expect-runners", "4-gpu-b200", "--no-heatmap", "--out", str(tmp_path / "cov")])
    out["coverage"] = tmp_path / "cov" / "coverage.json"
    out["gaps"] = tmp_path / "gaps.json"
    main(["gaps", str(root), "--format", "json", "--output", str(out["gaps"])])
    capsys.readouterr()
    return out


def page(tmp_path: Path, capsys: pytest.CaptureFixture[str], *inputs: Path) -> dict:
    code = main(["report", "--html", str(tmp_path / "page.html"), *map(str, inputs)])
    err = capsys.readouterr().err
    assert code == 0, err
    data = data_of((tmp_path / "page.html").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_every_json_the_tool_writes_is_an_input(tmp_path, capsys):
    inputs = written_by_the_tool(tmp_path, capsys)
    data = page(tmp_path, capsys, *inputs.values())
    kinds = {i["kind"] for i in data["inputs"]}
    assert kinds == {"pytest audit", "guard audit", "coverage merge", "untested cells"}
    origins = {row[0] for row in data["findings"]}
    assert origins == {"pytest audit", "guard audit", "coverage merge", "untested cells"}


def test_the_untested_cells_of_gaps_are_listed_after_the_errors(tmp_path, capsys):
    inputs = written_by_the_tool(tmp_path, capsys)
    written = json.loads(inputs["gaps"].read_text(encoding="utf-8"))
    assert written["findings"]  # a CPU-only schedule leaves the GPU cells untested
    data = page(tmp_path, capsys, inputs["gaps"], inputs["guards"])
    rows = [row for row in data["findings"] if row[0] == "untested cells"]
    assert {row[1] for row in rows} == {"untested-cell"}
    assert {row[2] for row in rows} == {"warning"}
    shown = json.dumps(rows)
    assert all(f["subject"] in shown for f in written["findings"])
    severities = [row[2] for row in data["findings"]]
    assert "error" in severities
    rank = {"error": 0, "warning": 1, "info": 2}
    assert severities == sorted(severities, key=rank.__getitem__)
    (gaps,) = [i for i in data["inputs"] if i["kind"] == "untested cells"]
    assert f"{len(rows)} untested" in gaps["summary"]


def test_no_run_report_no_cell_grid(tmp_path, capsys):
    inputs = written_by_the_tool(tmp_path, capsys)
    data = page(tmp_path, capsys, inputs["guards"])
    assert data["show_grid"] is False
    assert data["cells"]["ids"] == [] and data["grid"] == [] and data["runners"] == []


def test_findings_are_listed_errors_first(tmp_path, capsys):
    inputs = written_by_the_tool(tmp_path, capsys)
    data = page(tmp_path, capsys, inputs["guards"])  # the guard report interleaves info and errors
    severities = [row[2] for row in data["findings"]]
    assert "info" in severities and "error" in severities
    rank = {"error": 0, "warning": 1, "info": 2}
    assert severities == sorted(severities, key=rank.__getitem__)


def test_a_run_report_keeps_the_grid(tmp_path, capsys, default_matrix, runners):
    runner = runners["4-gpu-b200"]
    cells = run_cells(default_matrix, runner)[:1]
    write_report(make_report(default_matrix, runner, {cells[0]: CellStatus.PASSED}), tmp_path / "run.json")
    data = page(tmp_path, capsys, tmp_path / "run.json")
    assert data["show_grid"] is True and len(data["cells"]["ids"]) == len(default_matrix.cells)
    assert json.dumps(data["grid"]).count("P") >= 1


def test_a_known_kind_takes_its_registered_severity_whatever_the_file_says():
    from matrix.coverage.inputs import Document, RowSeverity, guard_audit, ledger_join

    from .test_report_html import guards_doc, ledger_doc

    guards = guards_doc("t")
    guards["findings"] = [{**guards["findings"][0], "kind": "disabled", "severity": "error"}]  # type: ignore[index]
    rows = guard_audit(Document(label="g.json", doc=guards, modified="2026-01-01T00:00:00+00:00")).findings
    assert [r.severity for r in rows] == [RowSeverity.INFO]
    ledger = ledger_doc("t")
    ledger["findings"] = [{**ledger["findings"][0], "kind": "bad-line", "failing": True}]  # type: ignore[index]
    rows = ledger_join(Document(label="l.json", doc=ledger, modified="2026-01-01T00:00:00+00:00")).findings
    assert [r.severity for r in rows] == [RowSeverity.WARNING]
