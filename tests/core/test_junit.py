"""`--format junit`: one emitter (matrix/core/junit.py) for every finding command, in the shape test-report tools read.

Each output is parsed with xml.etree and checked against what JUnit consumers read: the `testsuites`/`testsuite`
counts, each `testcase`'s `classname`, `name`, `file` and `line`, and a `failure` (`type`, `message`) on each
failing finding; the counts must agree with the testcases.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from matrix.cli.main import main
from matrix.core.finding import Finding, Tool, kinds_of
from matrix.core.junit import junit
from matrix.core.report import write_report
from tests.core.test_escaping import audit_report

REPO = Path(__file__).resolve().parents[2]
COUNTS = ("tests", "failures", "errors", "skipped")


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


def checked(xml: str) -> ET.Element:
    """The one <testsuite>, after checking every attribute CI tools read and that the counts add up."""
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    failed = [c for c in cases if c.find("failure") is not None]
    for element in (root, suite):
        assert {k: int(element.get(k, "-1")) for k in COUNTS} == {
            "tests": len(cases),
            "failures": len(failed),
            "errors": 0,
            "skipped": 0,
        }
    for case in cases:
        assert case.get("classname") and case.get("name") and case.get("time") == "0.000"
        if case.get("file") is not None:
            assert int(case.get("line", "0")) >= 1
    for case in failed:
        failure = case.find("failure")
        assert failure is not None and failure.get("type") and failure.get("message") and failure.text
    return suite


def test_each_failing_finding_is_a_failed_testcase_and_each_clean_kind_a_passing_one() -> None:
    findings = [
        Finding(
            tool=Tool.GUARDS,
            kind="silent-skip",
            subject="a/test_x.py::T",
            message="skips <here> & \x01",
            path="a/test_x.py",
            line=3,
            runners=("r1",),
        ),
        Finding(tool=Tool.GUARDS, kind="disabled", subject="a/test_y.py::U", message="off", path="a/test_y.py", line=0),
    ]
    suite = checked(junit(findings, tool=Tool.GUARDS, file_of=lambda p: f"root/{p}", message_of=lambda f: f.message))
    cases = suite.findall("testcase")
    first = cases[0]
    assert first.get("classname") == "specmatrix.guards.silent-skip"
    assert first.get("name") == "a/test_x.py::T on r1"
    assert (first.get("file"), first.get("line")) == ("root/a/test_x.py", "3")
    failure = first.find("failure")
    assert failure is not None and failure.get("type") == "silent-skip" and failure.text == "skips <here> & \\x01"
    assert cases[1].find("failure") is None and cases[1].get("line") == "1"
    clean = {c.get("classname") for c in cases[2:]}
    assert clean == {f"specmatrix.guards.{s.name}" for s in kinds_of(Tool.GUARDS)} - {
        "specmatrix.guards.silent-skip",
        "specmatrix.guards.disabled",
    }


def test_guards_junit_fails_each_error_finding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run(capsys, "guards", REPO / "tests" / "guards" / "fixture_suite", "--no-workflows", "--format", "junit")
    assert code == 1
    suite = checked(out)
    _, doc = run(capsys, "guards", REPO / "tests" / "guards" / "fixture_suite", "--no-workflows", "--format", "json")
    failing = sum(f["failing"] for f in json.loads(doc)["findings"])
    assert int(suite.get("failures", "0")) == failing > 0


def test_pytest_audit_junit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from tests.pytest_suites.test_gate_formats import project

    code, out = run(capsys, "pytest-audit", project(tmp_path), "--format", "junit")
    assert code == 1
    suite = checked(out)
    (failed,) = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert (failed.get("classname"), failed.get("file")) == ("specmatrix.pytest-audit.unscheduled", "tests/test_b.py")


def _report(tmp_path: Path) -> Path:
    """A run report with one unexpected skip (the escaping tests' report), judged against the built-in matrix."""
    path = tmp_path / "run.json"
    write_report(replace(audit_report("flaky"), matrix="frozen-kv-mtp-draft-attention"), path)
    return path


def test_audit_junit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = run(capsys, "audit", _report(tmp_path), "--format", "junit")
    assert code == 1
    suite = checked(out)
    (failed,) = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert failed.get("classname") == "specmatrix.audit.unexpected-skip"


def test_coverage_junit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = _report(tmp_path)
    code, out = run(capsys, "coverage", report, "--no-heatmap", "--out", tmp_path / "out", "--format", "junit")
    suite = checked(out)
    again, doc = run(capsys, "coverage", report, "--no-heatmap", "--out", tmp_path / "out2", "--format", "json")
    failing = sum(f["failing"] for f in json.loads(doc)["findings"])
    assert int(suite.get("failures", "0")) == failing and code == again
    assert len(suite.findall("testcase")) >= len(kinds_of(Tool.COVERAGE))
