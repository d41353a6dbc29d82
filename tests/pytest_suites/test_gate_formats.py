"""`pytest-audit` takes the same formats, baseline gate and exit rule as `guards`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main

WORKFLOW = "on: push\njobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest tests/test_a.py\n"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW, encoding="utf-8")
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    (root / "tests" / "test_b.py").write_text("def test_nowhere():\n    pass\n", encoding="utf-8")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_findings_are_the_pytest_audits_own_kinds(capsys, tmp_path):
    code, out, _ = run(capsys, "pytest-audit", project(tmp_path), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    (finding,) = doc["findings"]
    assert finding["kind"] == "unscheduled" and finding["failing"] is True and finding["fingerprint"]
    assert doc["exit_code"] == 1
    code, out, _ = run(capsys, "pytest-audit", project(tmp_path / "again"), "--format", "sarif")
    sarif = json.loads(out)
    assert sarif["runs"][0]["tool"]["driver"]["name"] == "specmatrix-pytest-audit"
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "tests/test_b.py"}
    assert result["partialFingerprints"] == {"specmatrix/pytest-audit/v1": finding["fingerprint"]}


def test_github_annotations_name_the_file_from_the_repository_root(capsys, tmp_path):
    code, out, _ = run(capsys, "pytest-audit", project(tmp_path), "--format", "github")
    assert code == 1
    assert out.startswith("::error file=tests/test_b.py,line=1,title=specmatrix pytest-audit (unscheduled)::")


def test_a_baseline_acknowledges_and_an_expired_entry_fails(capsys, tmp_path):
    root = project(tmp_path)
    base = tmp_path / "baseline.json"
    code, _, err = run(capsys, "pytest-audit", root, "--write-baseline", base)
    assert code == 0 and "wrote 1 baseline entries" in err
    code, out, _ = run(capsys, "pytest-audit", root, "--baseline", base)
    assert code == 0, out
    assert "baseline: 0 new error(s), 1 acknowledged, 0 expired, 0 stale" in out
    doc = json.loads(base.read_text())
    doc["entries"][0]["expires"] = "2020-01-01"
    base.write_text(json.dumps(doc))
    code, out, _ = run(capsys, "pytest-audit", root, "--baseline", base, "--today", "2026-01-01")
    assert code == 1
    assert "1 expired baseline entries" in out


def test_summary_count_table_has_as_many_cells_in_each_row(capsys, tmp_path):
    root = project(tmp_path)
    (root / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW.replace("tests/test_a.py", "tests"), encoding="utf-8")
    summary = tmp_path / "summary.md"
    code, _, _ = run(capsys, "pytest-audit", root, "--summary", summary)
    assert code == 0
    table = [line for line in summary.read_text().splitlines() if line.startswith("|")]
    assert table and len({line.count("|") for line in table}) == 1, table
