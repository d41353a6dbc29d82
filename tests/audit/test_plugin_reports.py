"""Reports: JSON round trip, JUnit XML, Markdown and the step summary, and `specmatrix audit` on saved reports."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from matrix.audit.findings import recheck
from matrix.cli.main import main
from matrix.core.report import CellResult, CellStatus, Report, RunnerInfo, read_report, to_json, write_report

from .conftest import B200, STRICT, TINY_MATRIX, leaks_in, literal, report_at

RUN = """
import pytest

def test_cell(matrix_cell):
    if matrix_cell.id == "alpha-s2":
        pytest.skip("flaky on this host")

@pytest.mark.skip(reason="outside skip")
def test_plain():
    pass
"""


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `-n 2` run of RUN with every report, shared by the three tests that each read one of its files.

    A separate process (a module-scoped fixture cannot use pytester), with the environment `clean_env` gives.
    """
    folder = tmp_path_factory.mktemp("finished-run")
    (folder / "tiny.toml").write_text(TINY_MATRIX, encoding="utf-8")
    (folder / "summary.md").write_text("earlier step\n", encoding="utf-8")
    (folder / "test_run.py").write_text(textwrap.dedent(RUN), encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if not leaks_in(name)}
    env |= {"SPECMATRIX_MATRIX": str(folder / "tiny.toml"), "SPECMATRIX_DETECT": B200}
    env["GITHUB_STEP_SUMMARY"] = str(folder / "summary.md")
    args = ["-p", "no:cacheprovider", "-p", "no:hypothesispytest", *STRICT, "-n", "2"]
    args += ["--matrix-report", "out/report.json", "--matrix-shard", "3/8"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=folder, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr  # the unexpected skip fails it
    return folder


def test_json_report_round_trips_and_rechecks_to_the_same_findings(finished_run: Path) -> None:
    doc = report_at(finished_run / "out/report.json")
    report = read_report(finished_run / "out/report.json")
    assert json.loads(json.dumps(to_json(report))) == doc
    assert recheck(report) == report.findings
    assert [f.kind for f in report.findings] == ["unexpected-skip", "unallowed-skip"]
    assert (report.shard, report.runner.skip_policy, report.detection_overridden) == ("3/8", "strict", True)
    # The matrix it was planned from, beyond its name: coverage refuses a report of another matrix of that name.
    from matrix.core.loader import load_matrix
    from matrix.core.report import matrix_digest

    assert report.matrix_digest == matrix_digest(load_matrix(finished_run / "tiny.toml"))
    assert doc["extra"]["xdist_workers"] == 2


def test_junit_has_one_testcase_per_item_and_unexpected_skips_fail(finished_run: Path) -> None:
    suite = ET.parse(finished_run / "out/report.xml").getroot().find("testsuite")
    assert suite is not None
    cases = {f"{c.get('classname')}::{c.get('name')}": c for c in suite.iter("testcase")}
    assert len(cases) == 4 + 1
    unexpected = cases["test_run::test_cell[alpha-s2]"].find("failure")
    assert unexpected is not None and unexpected.get("type") == "unexpected-skip"
    assert "flaky on this host" in (unexpected.get("message") or "")
    expected = cases["test_run::test_cell[beta-s1]"].find("skipped")
    assert expected is not None and "beta-hopper" in (expected.get("message") or "")
    assert cases["test_run::test_plain"].find("failure") is not None  # unallowed on a strict runner
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped"), suite.get("errors")) == ("5", "2", "2", "0")


def test_markdown_lists_unexpected_skips_first_and_appends_to_the_step_summary(finished_run: Path) -> None:
    md = (finished_run / "out/report.md").read_text(encoding="utf-8")
    assert md.index("### Unexpected skips (1)") < md.index("### Other findings (1)") < md.index("### Counts")
    assert "| <code>test_run.py::test_cell\\[alpha-s2\\]</code> | flaky on this host | no rule restricts this cell |" in md
    assert "| **planned** | **4** |" in md
    summary = (finished_run / "summary.md").read_text(encoding="utf-8")
    assert summary == "earlier step\n" + md


def _report(*statuses: CellStatus) -> Report:
    cells = tuple(
        CellResult(
            nodeid=f"t.py::test_cell[c{i}]",
            cell=f"c{i}",
            test="t.py::test_cell",
            # A skipped-expected cell was expected to skip: the recorded pair must agree, or the audit flags it.
            expected="skip" if status is CellStatus.SKIPPED_EXPECTED else "run",
            rule=None,
            reason="must run: needs-gpu",
            status=status,
            skip_reason="gone" if status is CellStatus.SKIPPED_UNEXPECTED else None,
        )
        for i, status in enumerate(statuses)
    )
    return Report(
        matrix="m",
        runner=RunnerInfo(name="4-gpu-b200", gpus=4, capability=(10, 0), skip_policy="strict"),
        versions={},
        detection_overridden=False,
        created="2026-07-01T00:00:00+00:00",
        cells=cells,
    )


@pytest.mark.parametrize(
    ("statuses", "code", "line"),
    [
        pytest.param((CellStatus.PASSED, CellStatus.SKIPPED_EXPECTED), 0, "  ok: 0 error(s), 0 warning(s)", id="clean"),
        pytest.param(
            (CellStatus.PASSED, CellStatus.SKIPPED_UNEXPECTED),
            1,
            "  error: unexpected-skip " + literal("t.py::test_cell[c1]") + ": *",
            id="skip",
        ),
        pytest.param((CellStatus.CRASHED, CellStatus.NOT_RUN), 1, "  FAILED: 2 error(s), 0 warning(s)", id="crash"),
    ],
)
def test_audit_judges_from_the_recorded_statuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], statuses: tuple[CellStatus, ...], code: int, line: str
) -> None:
    path = tmp_path / "r.json"
    write_report(_report(*statuses), path)  # written without findings: the audit must derive them itself
    assert main(["audit", str(path)]) == code
    out = capsys.readouterr().out
    assert any(fnmatch.fnmatchcase(o, line) for o in out.splitlines()), out


def _edit(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        doc[field] = value

    return apply


def _edit_cell(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(doc: dict[str, Any]) -> None:
        doc["cells"][0][field] = value

    return apply


def _drop_cell(doc: dict[str, Any]) -> None:
    doc["cells"].pop()


def _recount(doc: dict[str, Any]) -> None:
    doc["cells"][1]["status"] = "passed"  # the unexpected skip edited away, counts left stale


@pytest.mark.parametrize(
    ("corrupt", "problem"),
    [
        pytest.param(_edit("schema", "specmatrix.report/0"), "unknown schema 'specmatrix.report/0'", id="schema"),
        pytest.param(_drop_cell, "says 2 planned but lists 1 cells", id="dropped-cell"),
        pytest.param(_recount, "field 'counts' does not match", id="stale-counts"),
        pytest.param(_edit_cell("status", "exploded"), "cells[0]: status: unknown value 'exploded'", id="status"),
        pytest.param(_edit_cell("nodeid", 3), "cells[0]: field 'nodeid' has the wrong type", id="type"),
        pytest.param(
            _edit("runner", {"name": "x", "gpus": 1, "skip_policy": "chaotic"}), "unknown skip_policy 'chaotic'", id="policy"
        ),
    ],
)
def test_audit_exits_2_naming_the_file_and_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], corrupt: Callable[[dict[str, Any]], None], problem: str
) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write_report(_report(CellStatus.PASSED, CellStatus.SKIPPED_UNEXPECTED), good)
    doc = json.loads(good.read_text(encoding="utf-8"))
    corrupt(doc)
    bad.write_text(json.dumps(doc), encoding="utf-8")
    assert main(["audit", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"specmatrix: error: {bad}: ") and problem in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("cut", [1, 100, -2])
def test_audit_exits_2_on_a_truncated_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: int) -> None:
    path = tmp_path / "r.json"
    write_report(_report(CellStatus.PASSED), path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[:cut], encoding="utf-8")
    assert main(["audit", str(path)]) == 2
    assert f"{path}: corrupt or truncated JSON" in capsys.readouterr().err


def test_audit_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    write_report(_report(CellStatus.SKIPPED_UNEXPECTED), path)
    assert main(["audit", "--format", "json", str(path)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "specmatrix.audit/1" and doc["ok"] is False
    (entry,) = doc["reports"]
    assert entry["consistent"] is False  # the file recorded no findings, the statuses say there is one
    assert [f["kind"] for f in entry["findings"]] == ["unexpected-skip"]
