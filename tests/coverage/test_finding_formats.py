"""Every command that reports findings takes the same --format set and writes each format with the shared emitters."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from matrix.cli.main import build_parser, main
from matrix.core.output import FINDING_FORMATS
from matrix.core.report import CellStatus, write_report

from .conftest import make_report, run_cells


def _choices(command: str) -> list[str]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    fmt = next(a for a in sub.choices[command]._actions if a.dest == "format")
    return list(fmt.choices or [])


@pytest.mark.parametrize("command", ["guards", "pytest-audit", "ledger", "audit", "coverage"])
def test_every_finding_command_takes_the_same_formats(command: str) -> None:
    assert _choices(command) == list(FINDING_FORMATS)


@pytest.fixture
def planted(tmp_path: Path, default_matrix, runners) -> Path:
    runner = runners["4-gpu-b200"]
    first, second = run_cells(default_matrix, runner)[:2]
    path = tmp_path / "run.json"
    write_report(make_report(default_matrix, runner, {first: CellStatus.SKIPPED_UNEXPECTED, second: CellStatus.PASSED}), path)
    return path


@pytest.mark.parametrize("command", ["audit", "coverage"])
def test_run_report_findings_in_every_format(capsys, tmp_path, planted, command):
    extra = ["--no-heatmap", "--out", str(tmp_path / "cov")] if command == "coverage" else []
    out = {}
    for fmt in FINDING_FORMATS:
        assert main([command, str(planted), *extra, "--format", fmt]) == 1
        out[fmt] = capsys.readouterr().out
    assert out["github"].startswith("::error title=specmatrix ")
    sarif = json.loads(out["sarif"])
    results = sarif["runs"][0]["results"]
    assert results and all(r["level"] == "error" for r in results if r["ruleId"] == "unexpected-skip")
    rules = {rule["id"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {r["ruleId"] for r in results} <= rules
    assert out["md"].startswith("## specmatrix ")
    findings = json.loads(out["json"])
    listed = findings["findings"] if command == "coverage" else findings["reports"][0]["findings"]
    assert listed and all(f["failing"] is True for f in listed if f["kind"] == "unexpected-skip")
    # One fingerprint on every finding: the JSON's and SARIF's are the same value.
    assert all(f["fingerprint"] for f in listed)
    prints = {next(iter(r["partialFingerprints"].values())) for r in results}
    assert prints == {f["fingerprint"] for f in listed}
