"""`--baseline`/`--write-baseline` on `audit`, `coverage`, `ledger` and `gaps`: a baselined error no longer fails the
command, a written baseline is one the same command accepts; `gaps` writes every finding format."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.model import Outcome
from matrix.core.report import CellStatus, to_json
from tests.ledger.conftest import FIXTURE_SUITE
from tests.ledger.test_ledger_command import clean_ledger

from .conftest import expectations_of, make_report


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def gate_round_trip(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str | Path) -> None:
    """The command fails; `--write-baseline` exits 0 and writes its errors; `--baseline` of that file then passes,
    and an empty baseline still fails."""
    assert run(capsys, *argv)[0] == 1
    written = tmp_path / "baseline.json"
    code, _, err = run(capsys, *argv, "--write-baseline", written)
    assert code == 0 and "baseline entries to" in err, err
    entries = json.loads(written.read_text())["entries"]
    assert entries
    code, _, err = run(capsys, *argv, "--baseline", written)
    assert code == 0, err
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"schema": "specmatrix.baseline/2", "entries": []}))
    assert run(capsys, *argv, "--baseline", empty)[0] == 1


def test_audit_gates_on_a_baseline(capsys, tmp_path, default_matrix, runners):
    runner = runners["4-gpu-b200"]
    run_cell = next(c for c, e in expectations_of(default_matrix, runner).items() if e.outcome is Outcome.RUN)
    report = tmp_path / "report.json"
    doc = to_json(make_report(default_matrix, runner, {run_cell: CellStatus.SKIPPED_UNEXPECTED}))
    report.write_text(json.dumps(doc), encoding="utf-8")
    gate_round_trip(capsys, tmp_path, "audit", report)
    # A baselined finding leaves the annotations too.
    code, out, _ = run(capsys, "audit", report, "--format", "github", "--baseline", tmp_path / "baseline.json")
    assert code == 0 and "::error" not in out


def test_coverage_gates_on_a_baseline(capsys, tmp_path):
    gate_round_trip(capsys, tmp_path, "coverage", "--out", tmp_path / "out", "--no-heatmap", "--expect-runners", "4-gpu-b200")


def test_ledger_writes_a_baseline_it_then_accepts(capsys, tmp_path, monkeypatch):
    shard = "".join(x for x in clean_ledger().splitlines(keepends=True) if '"pid": 100,' not in x)
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(shard, encoding="utf-8")  # the process that ran one file is left out: it never ran
    gate_round_trip(capsys, tmp_path, "ledger", ledger, "--root", FIXTURE_SUITE / "registered")


WORKFLOW = (
    "on: pull_request\njobs:\n  hopper:\n    runs-on: 1-gpu-h100\n    steps:\n"
    "      - run: python3 test/run_suite.py --hw cuda --suite base-b-test-1-gpu-large\n"
)


@pytest.fixture
def gaps_repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yml").write_text(WORKFLOW)
    (tmp_path / "test").mkdir()
    return tmp_path / "test"


def test_gaps_writes_every_finding_format(capsys, gaps_repo):
    cells = {f["subject"] for f in json.loads(run(capsys, "gaps", gaps_repo, "--format", "json")[1])["findings"]}
    assert cells
    code, out, _ = run(capsys, "gaps", gaps_repo, "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    assert code == 0 and {r["ruleId"] for r in results} == {"untested-cell"} and len(results) == len(cells)
    code, out, _ = run(capsys, "gaps", gaps_repo, "--format", "junit")
    cases = [c for c in ET.fromstring(out).iter("testcase") if c.get("classname", "").endswith("untested-cell")]
    assert code == 0 and len(cases) == len(cells)
    code, out, _ = run(capsys, "gaps", gaps_repo, "--format", "github")
    assert code == 0 and out.count("::warning") == len(cells)
    code, out, _ = run(capsys, "gaps", gaps_repo, "--format", "md")
    assert code == 0 and f"{len(cells)} of " in out and out.count("\n| ") >= len(cells)
    assert all(cell in out for cell in cells)


def test_gaps_takes_the_gate_options(capsys, gaps_repo, tmp_path):
    written = tmp_path / "gaps-baseline.json"
    code, _, err = run(capsys, "gaps", gaps_repo, "--write-baseline", written)
    # Untested cells warn and never fail: the baseline holds no entry, and the run still exits 0.
    assert code == 0 and json.loads(written.read_text())["entries"] == [], err
    assert run(capsys, "gaps", gaps_repo, "--baseline", written)[0] == 0
