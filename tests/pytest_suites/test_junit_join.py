"""`pytest-audit --junit RUNNER=PATH`: the static verdicts joined with the JUnit XML real pytest wrote on two runners.

The project and its runs are `tests/pytest_suites/junit_fixture.py` (the `gauge` fixture): every outcome of the
join is checked in every format, and a file that is not a run of this tree is one line and exit 2.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from matrix.cli.main import main
from tests.pytest_suites.conftest import Gauge
from tests.pytest_suites.junit_fixture import run_pytest, write_project

LEAN, FULL = "ubuntu-22.04", "ubuntu-24.04"

# (test, runner) -> (static verdict, observed, join outcome), as the two runs of the fixture give them.
EXPECTED = {
    ("tests/test_basics.py::test_adds", LEAN): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::test_adds", FULL): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::test_dropped", LEAN): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::test_dropped", FULL): ("runs", "absent", "absent"),
    ("tests/test_basics.py::test_rounding", LEAN): ("runs", "xfailed", "confirmed"),
    ("tests/test_basics.py::test_rounding", FULL): ("runs", "xfailed", "confirmed"),
    ("tests/test_basics.py::test_speed[fast]", LEAN): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::test_speed[fast]", FULL): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::test_speed[slow]", LEAN): ("skips", "skipped", "confirmed"),
    ("tests/test_basics.py::test_speed[slow]", FULL): ("skips", "skipped", "confirmed"),
    # parametrized with values the static reading keeps as one test: every case of the run is that test
    ("tests/test_basics.py::TestUnits::test_scale", LEAN): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::TestUnits::test_scale", FULL): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::TestUnits::test_width", LEAN): ("runs", "passed", "confirmed"),
    ("tests/test_basics.py::TestUnits::test_width", FULL): ("runs", "passed", "confirmed"),
    # GAUGE_MODE is set by the full job only; the lean job's value is not known (the CI files name the variable)
    ("tests/test_modes.py::test_lean_only", LEAN): ("undetermined", "passed", "resolved"),
    ("tests/test_modes.py::test_lean_only", FULL): ("skips", "skipped", "confirmed"),
    # GAUGE_DEVICE is set by the full runner's host, never by a CI file: the audit's "skips" is wrong there
    ("tests/test_modes.py::test_on_device", LEAN): ("skips", "skipped", "confirmed"),
    ("tests/test_modes.py::test_on_device", FULL): ("skips", "passed", "contradicted"),
    # a module-level importorskip: one collection record in the run stands for the file's tests
    ("tests/test_accel.py::test_fast_path", LEAN): ("undetermined", "skipped", "resolved"),
    ("tests/test_accel.py::test_fast_path", FULL): ("undetermined", "passed", "resolved"),
    # a skip dispatched through a table: no guard the audit reads, so "runs", and the runs skip it
    ("tests/test_dispatch.py::test_cluster_sync", LEAN): ("runs", "skipped", "contradicted"),
    ("tests/test_dispatch.py::test_cluster_sync", FULL): ("runs", "skipped", "contradicted"),
    ("tests/test_made.py::test_fixed", LEAN): ("runs", "passed", "confirmed"),
    ("tests/test_made.py::test_fixed", FULL): ("runs", "passed", "confirmed"),
    ("tests/test_made.py::test_made_alpha", LEAN): ("not collected", "passed", "not-collected"),
    ("tests/test_made.py::test_made_alpha", FULL): ("not collected", "passed", "not-collected"),
    ("tests/test_made.py::test_made_beta", LEAN): ("not collected", "passed", "not-collected"),
    ("tests/test_made.py::test_made_beta", FULL): ("not collected", "passed", "not-collected"),
    ("tests/sub/test_nested.py::test_never_installed", LEAN): ("undetermined", "skipped", "resolved"),
    ("tests/sub/test_nested.py::test_never_installed", FULL): ("undetermined", "skipped", "resolved"),
    ("tests/sub/test_nested.py::TestDeep::test_value", LEAN): ("runs", "passed", "confirmed"),
    ("tests/sub/test_nested.py::TestDeep::test_value", FULL): ("runs", "passed", "confirmed"),
}
EVERYWHERE = {
    "tests/sub/test_nested.py::test_never_installed",
    "tests/test_basics.py::test_speed[slow]",
    "tests/test_dispatch.py::test_cluster_sync",
}
JOIN_FINDINGS = {
    ("contradicted-by-run", "tests/test_dispatch.py::test_cluster_sync", LEAN),
    ("contradicted-by-run", "tests/test_dispatch.py::test_cluster_sync", FULL),
    ("contradicted-by-run", "tests/test_modes.py::test_on_device", FULL),
    ("absent-from-run", "tests/test_basics.py::test_dropped", FULL),
    ("not-collected", "tests/test_made.py::test_made_alpha", LEAN),
    ("not-collected", "tests/test_made.py::test_made_alpha", FULL),
    ("not-collected", "tests/test_made.py::test_made_beta", LEAN),
    ("not-collected", "tests/test_made.py::test_made_beta", FULL),
    ("resolved-by-run", "tests/test_modes.py::test_lean_only", LEAN),
    ("resolved-by-run", "tests/test_accel.py::test_fast_path", LEAN),
    ("resolved-by-run", "tests/test_accel.py::test_fast_path", FULL),
    ("resolved-by-run", "tests/sub/test_nested.py::test_never_installed", LEAN),
    ("resolved-by-run", "tests/sub/test_nested.py::test_never_installed", FULL),
} | {("skipped-in-every-run", t, f"{LEAN}, {FULL}") for t in EVERYWHERE}


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def output(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    """What the command prints, when it ran to its end (exit 0 or 1)."""
    code, out, err = run(capsys, *argv)
    assert code in (0, 1), err
    return out


def junit_args(gauge: Gauge, lean: Path | None = None, full: Path | None = None) -> list[str]:
    return ["--junit", f"{LEAN}={lean or gauge.runs[LEAN]}", "--junit", f"{FULL}={full or gauge.runs[FULL]}"]


def audit_json(capsys: pytest.CaptureFixture[str], gauge: Gauge, *extra: str | Path, root: Path | None = None) -> dict:
    code, out, err = run(capsys, "pytest-audit", root or gauge.root, *extra, "--format", "json")
    assert code == 1, err  # the skipped-in-every-run errors (and the static silent skips) fail the run
    return json.loads(out)


def joined(doc: dict) -> dict[tuple[str, str], tuple[str, str, str]]:
    return {(r["test"], r["runner"]): (r["static"], r["observed"], r["join"]) for r in doc["runs"]["tests"]}


def join_findings(doc: dict) -> set[tuple[str, str, str]]:
    kinds = {"contradicted-by-run", "absent-from-run", "not-collected", "resolved-by-run", "skipped-in-every-run"}
    return {(f["kind"], f["test"], ", ".join(f["runners"])) for f in doc["findings"] if f["kind"] in kinds}


def test_each_test_on_each_runner_beside_its_run(capsys, gauge):
    doc = audit_json(capsys, gauge, *junit_args(gauge))
    assert joined(doc) == EXPECTED
    assert join_findings(doc) == JOIN_FINDINGS
    assert doc["runs"]["counts"] == {
        "confirmed": 19,
        "contradicted": 3,
        "resolved": 5,
        "skipped-in-every-run": 3,
        "absent": 1,
        "not-judged": 0,
        "not-collected": 4,
    }
    assert doc["runs"]["runners"][FULL]["contradicted"] == 2
    (lean,) = [i for i in doc["runs"]["inputs"] if i["runner"] == LEAN]
    assert lean["files"][0]["testcases"] == 18 and lean["files"][0]["matched"] == 16
    (full,) = [i for i in doc["runs"]["inputs"] if i["runner"] == FULL]
    assert full["files"][0]["suites"] == ["gauge-full"]  # junit_suite_name
    # the failing findings of the join are counted as the static ones are (the deliberate `skip` of test_speed[slow]
    # is a warning: one static silent skip fails)
    assert doc["exit_code"] == 1 and doc["failing"] == 1 + 3


def test_a_contradiction_names_the_guard_read_and_the_runs_message(capsys, gauge):
    doc = audit_json(capsys, gauge, *junit_args(gauge))
    by_key = {(f["kind"], f["test"], tuple(f["runners"])): f for f in doc["findings"]}
    device = by_key[("contradicted-by-run", "tests/test_modes.py::test_on_device", (FULL,))]
    assert device["severity"] == "warning" and device["failing"] is False
    assert device["guard"] == 'pytest.mark.skipif(os.environ.get("GAUGE_DEVICE") != "1", reason="needs a gauge device")'
    assert device["guard_class"] == "environment"
    assert "predicted to skip on ubuntu-24.04" in device["reason"] and device["reason"].endswith("the run there: passed")
    cluster = by_key[("contradicted-by-run", "tests/test_dispatch.py::test_cluster_sync", (LEAN,))]
    assert "predicted to run on ubuntu-22.04 (no skip guard read" in cluster["reason"]
    assert cluster["reason"].endswith("the run there: skipped: no cluster attached")
    everywhere = by_key[("skipped-in-every-run", "tests/sub/test_nested.py::test_never_installed", (LEAN, FULL))]
    assert everywhere["severity"] == "error" and everywhere["failing"] is True
    assert "ubuntu-22.04, ubuntu-24.04: could not import 'gauge_never_installed'" in everywhere["reason"]


def test_without_runs_nothing_changes(capsys, gauge):
    doc = json.loads(output(capsys, "pytest-audit", gauge.root, "--format", "json"))
    assert "runs" not in doc and join_findings(doc) == set()
    assert "runs joined" not in output(capsys, "pytest-audit", gauge.root)
    # JUnit lists a passing testcase per kind checked: not the join's kinds, which nothing checked
    out = output(capsys, "pytest-audit", gauge.root, "--format", "junit")
    names = {c.get("classname") for c in ET.fromstring(out).iter("testcase")}
    assert "specmatrix.pytest-audit.unscheduled" in names
    assert not {n for n in names if n and n.rsplit(".", 1)[1] in ("resolved-by-run", "not-collected", "absent-from-run")}
    out = output(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--format", "junit")
    assert "specmatrix.pytest-audit.unscheduled" in out and "no absent-from-run findings" not in out  # one was found


def test_text_and_markdown_summaries(capsys, gauge, tmp_path):
    summary = tmp_path / "summary.md"
    code, text, _ = run(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--summary", summary)
    assert code == 1
    lines = text.splitlines()
    assert (
        "runs joined: confirmed 19, contradicted 3, resolved 5, skipped in every run 3, absent 1, not collected 4, "
        "not judged 0" in lines
    )
    assert "== tests that skipped in every run given for them (JUnit XML): 3" in lines
    assert "== verdicts a run contradicts (the guard read, the run's skip message): 3" in lines
    assert any(line.startswith(f"run {FULL}: ") and "(1 file(s), 17 testcases, 15 of this tree)" in line for line in lines)
    # the static summary still ends the output
    assert lines[-1].startswith("jobs not read: ")
    md = summary.read_text(encoding="utf-8")
    assert "| **all** | 19 | 3 | 5 | 3 | 1 | 4 | 0 |" in md
    assert "<details><summary>contradicted-by-run: 3 verdicts a run contradicts" in md
    assert md.count("<details>") == md.count("</details>")


def test_sarif_junit_and_annotations_carry_the_join(capsys, gauge):
    sarif = json.loads(output(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--format", "sarif"))
    rules = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {"skipped-in-every-run", "contradicted-by-run", "resolved-by-run", "not-collected", "absent-from-run"} <= rules
    levels = {(r["ruleId"], r["level"]) for r in sarif["runs"][0]["results"]}
    assert {("skipped-in-every-run", "error"), ("contradicted-by-run", "warning"), ("resolved-by-run", "note")} <= levels
    cases = ET.fromstring(output(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--format", "junit")).findall(
        ".//testcase"
    )
    failed = {c.get("classname") for c in cases if c.find("failure") is not None}
    assert failed == {"specmatrix.pytest-audit.skipped-in-every-run", "specmatrix.pytest-audit.silent-skip"}
    assert any(c.get("classname") == "specmatrix.pytest-audit.contradicted-by-run" for c in cases)
    commands = output(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--format", "github").splitlines()
    assert sum(c.startswith("::error ") and "(skipped-in-every-run)" in c for c in commands) == 3
    assert sum(c.startswith("::warning ") and "(contradicted-by-run)" in c for c in commands) == 3
    assert any(c.startswith("::notice file=tests/test_accel.py,line=") and "(resolved-by-run)" in c for c in commands)


def test_a_baseline_acknowledges_the_runs_findings(capsys, gauge, tmp_path):
    base = tmp_path / "baseline.json"
    code, _, err = run(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--write-baseline", base)
    # one entry per runner: 1 static silent skip, 3 tests skipped in the runs of both runners (a deliberate skip is a
    # warning, which no baseline needs)
    assert code == 0 and "wrote 7 baseline entries" in err
    code, out, _ = run(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--baseline", base)
    assert code == 0, out
    # without the runs, their entries are stale, never silently kept
    code, out, _ = run(capsys, "pytest-audit", gauge.root, "--baseline", base)
    assert code == 0 and "baseline: 0 new error(s), 1 acknowledged, 0 expired, 6 stale" in out


def test_report_html_shows_the_join_per_runner(capsys, gauge, tmp_path):
    audit = tmp_path / "audit.json"
    code, _, _ = run(capsys, "pytest-audit", gauge.root, *junit_args(gauge), "--format", "json", "--output", audit)
    assert code == 1
    code, _, err = run(capsys, "report", "--html", tmp_path / "page.html", audit)
    assert code == 0, err
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="specmatrix-data">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    runs = data["runs"]
    assert runs["runners"] == [LEAN, FULL]
    first = runs["tests"][0]
    assert first["test"] == "tests/test_dispatch.py::test_cluster_sync"  # problems first
    assert first["cells"][0] == ["runs", "skipped", "contradicted", "no cluster attached"]
    by_test = {t["test"]: t["cells"] for t in runs["tests"]}
    assert by_test["tests/test_basics.py::test_dropped"][1][2] == "absent"
    assert runs["counts"]["confirmed"] == 19
    assert 'id="runs-section"' in page
    assert any("runs joined: 19 confirmed" in i["summary"] for i in data["inputs"])


def test_a_folder_of_files_and_the_same_file_twice(capsys, gauge, tmp_path):
    folder = tmp_path / "artifacts" / "full"
    folder.mkdir(parents=True)
    shutil.copy(gauge.runs[FULL], folder / "part.xml")
    doc = audit_json(capsys, gauge, *junit_args(gauge, full=tmp_path / "artifacts"), "--junit", f"{LEAN}={gauge.runs[LEAN]}")
    assert joined(doc) == EXPECTED
    assert [len(i["files"]) for i in doc["runs"]["inputs"]] == [1, 1, 0]


def test_several_testsuites_in_one_file(capsys, gauge, tmp_path):
    """Two runs merged into one <testsuites>: each testsuite is mapped on its own."""
    lean = ET.parse(gauge.runs[LEAN]).getroot()
    moved = ET.parse(gauge.runs[FULL]).getroot()
    for suite in moved.iter("testsuite"):
        for case in suite.iter("testcase"):
            # as a run with --rootdir tests writes them: names without the leading "tests."
            case.set("classname", case.get("classname", "").removeprefix("tests."))
            if not case.get("classname"):
                case.set("name", case.get("name", "").removeprefix("tests."))
        lean.append(suite)
    merged = tmp_path / "merged.xml"
    ET.ElementTree(lean).write(merged, encoding="utf-8", xml_declaration=True)
    doc = audit_json(capsys, gauge, "--junit", f"{LEAN}={merged}")
    seen = joined(doc)
    assert seen[("tests/test_basics.py::test_dropped", LEAN)] == ("runs", "passed", "confirmed")
    # the second suite's cases were found under their offset: the full run's pass counts as a run on the lean runner
    assert seen[("tests/test_modes.py::test_on_device", LEAN)] == ("skips", "passed", "contradicted")
    assert doc["runs"]["inputs"][0]["files"][0]["suites"] == ["pytest", "gauge-full"]
    assert {f["kind"] for f in doc["findings"]} >= {"not-collected"}
    assert not [f for f in doc["findings"] if f["kind"] == "not-collected" and not f["test"].startswith("tests/test_made.py::")]


@pytest.mark.parametrize(
    ("variant", "args", "names"),
    [
        ("from-a-sub-folder", ("--rootdir", "{root}/tests"), "'tests' put in front"),
        ("rootdir-above", ("--rootdir", "{root}/.."), "1 leading name part(s) dropped"),
        ("junit-prefix", ("--junit-prefix", "lab.nightly"), "2 leading name part(s) dropped"),
        ("xunit2", ("-o", "junit_family=xunit2"), ""),
    ],
)
def test_runs_written_from_another_rootdir_or_with_a_prefix(capsys, gauge, variant, args, names):
    out = gauge.base / f"variant-{variant}" / "junit.xml"
    if not out.exists():
        run_pytest(gauge.root, out, {}, *(a.format(root=gauge.root) for a in args))
    doc = audit_json(capsys, gauge, "--junit", f"{LEAN}={out}")
    assert joined(doc) == {k: v for k, v in EXPECTED.items() if k[1] == LEAN}
    assert doc["runs"]["inputs"][0]["files"][0]["names"] == names


@pytest.mark.integration
def test_a_run_with_xdist_workers(capsys, gauge):
    out = gauge.base / "variant-xdist" / "junit.xml"
    run_pytest(gauge.root, out, {}, "-n", "2", "-p", "xdist")
    doc = audit_json(capsys, gauge, "--junit", f"{LEAN}={out}")
    assert joined(doc) == {k: v for k, v in EXPECTED.items() if k[1] == LEAN}


# --- bad input: one line, exit 2 ------------------------------------------------------------------------------

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE suite [
 <!ENTITY a "aaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
]>
<testsuites><testsuite name="x"><testcase classname="tests.test_basics" name="&c;"/></testsuite></testsuites>
"""


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("laughs.xml", LAUGHS, "laughs.xml: not read: it has a document type declaration (DTDs and entities are not read)"),
        ("cut.xml", '<testsuites><testsuite name="x"><testcase classname="a" name="b">', "cut.xml: not well-formed XML"),
        ("page.xml", "<html><body/></html>", "page.xml: not read: its root element is <html>, not <testsuites> or <testsuite>"),
        ("empty.xml", "", "empty.xml: not well-formed XML (no element found, line 1)"),
        (
            "elsewhere.xml",
            '<testsuites><testsuite name="x"><testcase classname="other.pkg.test_q" name="test_q"/></testsuite></testsuites>',
            "elsewhere.xml (--junit ubuntu-22.04): none of its 1 testcases is a test collected from this checkout "
            "(first: classname 'other.pkg.test_q', name 'test_q'); is it from another repository or commit?",
        ),
    ],
)
def test_a_corrupt_or_mismatched_file_is_one_line_and_exit_2(capsys, gauge, tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "pytest-audit", gauge.root, "--junit", f"{LEAN}={path}")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ubuntu-2204={lean}", "no CI entry read runs pytest on runner 'ubuntu-2204' (did you mean ubuntu-22.04, ubuntu-24.04?"),
        ("={lean}", "expected RUNNER=PATH"),
        ("ubuntu-22.04", "expected RUNNER=PATH"),
        ("ubuntu-22.04={base}/nowhere.xml", "nowhere.xml: no such file or folder"),
        ("ubuntu-22.04={base}/proj/.github", ".github: folder holds no *.xml file"),
    ],
)
def test_a_bad_junit_option_is_one_line_and_exit_2(capsys, gauge, value, message):
    code, out, err = run(capsys, "pytest-audit", gauge.root, "--junit", value.format(lean=gauge.runs[LEAN], base=gauge.base))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


def test_an_output_never_lands_on_a_junit_input(capsys, gauge, tmp_path):
    target = tmp_path / "run.xml"
    shutil.copy(gauge.runs[LEAN], target)
    code, _, err = run(capsys, "pytest-audit", gauge.root, "--junit", f"{LEAN}={tmp_path}", "--output", target)
    assert code == 2 and "is one of this command's inputs" in err
    assert target.read_bytes() == gauge.runs[LEAN].read_bytes()


def test_the_fixture_is_written_fresh_each_session(gauge, tmp_path):
    """The project the runs come from is the one audited: rewriting it gives the same files."""
    again = write_project(tmp_path / "again")
    for path in gauge.root.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            assert (again / path.relative_to(gauge.root)).read_bytes() == path.read_bytes()
