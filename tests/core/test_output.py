"""One table of hostile strings through every writer of every audit; the escaping functions of the output layer."""

from __future__ import annotations

import json
import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from matrix.audit.findings import cell_findings
from matrix.audit.reports import render_junit, render_markdown, summary_lines
from matrix.cli.guards import render as guards_render
from matrix.core import emit
from matrix.core.finding import Finding, Severity, Tool, kinds_of, registry, spec_of
from matrix.core.kinds import KINDS
from matrix.core.output import (
    annotation,
    bounded_markdown,
    md_code,
    md_text,
    sarif_document,
    sarif_uri,
    text_line,
    text_value,
)
from matrix.core.report import CellResult, CellStatus, FindingKind, Report, RunnerInfo
from matrix.guards.model import GuardFindingKind, GuardReport, guard_finding
from matrix.ledger import render as ledger_render
from matrix.ledger.join import LedgerFindingKind, LedgerReport, ledger_finding
from matrix.pytest_suites import render as pytest_audit_render
from matrix.pytest_suites.joined import JoinKind
from matrix.registered_suite.gate import gate

HOSTILE = {
    "newline": "a\nb\r\nc",
    "workflow-command": "\n::error file=fake.py,line=1::INJECTED",
    "leading-command": "::warning::x",
    "percent": "test_%41.py",
    "hash": "test_#1.py",
    "query": "test_?q=1.py",
    "pipe": "a|b",
    "img": "<img src=y onerror=alert(1)>",
    "details": "</details><h1>x</h1>",
    "control": "bell\x07esc\x1b[31mnul\x00del\x7fc1\x85",
    "lone-surrogate": "bad\ud800half",
    "bidi": "abc\u202edcba",
    "wide-space-command": "x\n\u3000::error file=fake.py::INJECTED",
    "nbsp-command": "\u00a0::warning::x",
}
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\ud800-\udfff]")


def guard_report(s: str) -> GuardReport:
    finding = guard_finding(
        GuardFindingKind.SILENT_SKIP, path=f"{s}.py", line=2, test=f"{s}.py::T{s}", runners=("4-gpu-b200",),
        guard=s, reason=s, hint=s,
    )  # fmt: skip
    return GuardReport(root=".", files_scanned=1, test_files=1, registered_files=1, runners=("4-gpu-b200",), findings=(finding,))


def ledger_report(s: str) -> LedgerReport:
    finding = ledger_finding(
        kind=LedgerFindingKind.SILENT_SKIP, path=f"{s}.py", line=1, test=f"{s}.py::T", runner=s, message=s, detail=s
    )
    return LedgerReport(root=".", ledgers=("l",), runners=(), findings=(finding,), processes=1, records=1)


def audit_report(s: str) -> Report:
    cell = CellResult(
        nodeid=f"t.py::test[{s}]", cell="c", test="t.py::test", expected="run", rule=None, reason=s,
        status=CellStatus.SKIPPED_UNEXPECTED, skip_reason=s,
    )  # fmt: skip
    return Report(
        matrix=s, runner=RunnerInfo(name="4-gpu-b200", gpus=4, capability=(10, 0)), versions={},
        detection_overridden=False, created="2026-07-01", cells=(cell,), findings=tuple(cell_findings([cell])),
    )  # fmt: skip


def guards(fmt: str) -> Callable[[str], str]:
    return lambda s: guards_render(guard_report(s), gate(guard_report(s), show=Severity.INFO, baseline=None), fmt)


def pytest_audit_report(s: str) -> object:
    from matrix.pytest_suites.audit import PytestAuditReport, PytestFinding
    from matrix.pytest_suites.packs import GuardClass

    (finding,) = guard_report(s).findings
    return PytestAuditReport(
        root=".", files=1, tests=1, scheduled_tests=1, runners=("4-gpu-b200",), undetermined=0,
        findings=(PytestFinding(finding=finding, guard_class=GuardClass.CAPABILITY),),
    )  # fmt: skip


def joined_report(s: str) -> tuple[object, object]:
    """A pytest audit joined with one run whose names, messages and runner hold `s`."""
    from matrix.pytest_suites.audit import ItemOutcome, ItemVerdicts, RunnerVerdict
    from matrix.pytest_suites.joined import RunInput, join_runs
    from matrix.pytest_suites.junit_names import junit_names
    from matrix.pytest_suites.junit_runs import Observed, RunCase, RunFile

    verdict = RunnerVerdict(runner=s, outcome=ItemOutcome.RUNS, guard=s, reason=s)
    tests = [ItemVerdicts(nodeid=f"{s}.py::test_{s}", path=f"{s}.py", line=2, verdicts=(verdict,))]
    classname, name = junit_names(tests[0].nodeid)
    cases = (
        RunCase(classname=classname, name=name, observed=Observed.SKIPPED, message=s),
        RunCase(classname=f"other{s}", name=s, observed=Observed.SKIPPED, message=s),
    )
    result = join_runs(
        tests, [RunInput(runner=s, path=f"{s}.xml", files=(RunFile(path=f"{s}.xml", suites=(s,), cases=cases),))], [s]
    )
    report = pytest_audit_report(s)
    return replace(report, findings=(*report.findings, *result.findings)), result  # type: ignore[type-var]


def joined_text(s: str) -> str:
    from matrix.pytest_suites.joined_output import runs_text

    report, result = joined_report(s)
    return pytest_audit_render.to_text(report, runs=runs_text(result, [f.finding for f in report.findings]))  # type: ignore[arg-type, attr-defined]


def joined_md(s: str) -> str:
    from matrix.pytest_suites.joined_output import runs_markdown

    report, result = joined_report(s)
    return pytest_audit_render.to_markdown(report, runs=runs_markdown(result, [f.finding for f in report.findings]))  # type: ignore[arg-type, attr-defined]


def joined_json(s: str) -> str:
    from matrix.pytest_suites.joined_output import runs_doc

    report, result = joined_report(s)
    return pytest_audit_render.to_json(report, runs=runs_doc(result))  # type: ignore[arg-type]


def audit_text(s: str) -> str:
    """`specmatrix audit REPORT` on a saved report holding `s`."""
    import contextlib
    import io
    import tempfile

    from matrix.cli.main import main
    from matrix.core.report import write_report

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.json"
        write_report(audit_report(s), path)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["audit", str(path)])
    return out.getvalue()


TEXT_WRITERS: dict[str, Callable[[str], str]] = {
    "audit text": audit_text,
    "pytest-audit text": lambda s: pytest_audit_render.to_text(pytest_audit_report(s)),  # type: ignore[arg-type]
    "pytest-audit --junit text": joined_text,
    "guards text": guards("text"),
    "ledger text": lambda s: ledger_render.to_text(ledger_report(s)),
    "plugin terminal": lambda s: "\n".join(line.text for line in summary_lines(audit_report(s), [])),
}
MARKDOWN_WRITERS: dict[str, Callable[[str], str]] = {
    "guards md": guards("md"),
    "ledger md": lambda s: ledger_render.to_markdown(ledger_report(s)),
    "plugin md": lambda s: render_markdown(audit_report(s)),
    "pytest-audit md": lambda s: pytest_audit_render.to_markdown(pytest_audit_report(s)),  # type: ignore[arg-type]
    "pytest-audit --junit md": joined_md,
}
ANNOTATION_WRITERS: dict[str, Callable[[str], str]] = {
    "guards github": guards("github"),
    "ledger github": lambda s: ledger_render.to_github(ledger_report(s)),
}
JSON_WRITERS: dict[str, Callable[[str], str]] = {
    "guards json": guards("json"),
    "ledger json": lambda s: ledger_render.to_json(ledger_report(s)),
    "pytest-audit json": lambda s: pytest_audit_render.to_json(pytest_audit_report(s)),  # type: ignore[arg-type]
    "pytest-audit --junit json": joined_json,
    "guards sarif": guards("sarif"),
}
CASES = list(HOSTILE.items())
IDS = list(HOSTILE)


def no_command_lines(text: str) -> None:
    assert [line for line in text.splitlines() if line.lstrip().startswith("::")] == []


@pytest.mark.parametrize("writer", TEXT_WRITERS)
@pytest.mark.parametrize(("name", "s"), CASES, ids=IDS)
def test_text_writers(writer: str, name: str, s: str) -> None:
    out = TEXT_WRITERS[writer](s)
    no_command_lines(out)
    assert not RAW_CONTROL.search(out)
    out.encode("utf-8")  # no lone surrogate left to fail the terminal's encoder


@pytest.mark.parametrize("writer", MARKDOWN_WRITERS)
@pytest.mark.parametrize(("name", "s"), CASES, ids=IDS)
def test_markdown_writers(writer: str, name: str, s: str) -> None:
    out = MARKDOWN_WRITERS[writer](s)
    assert not RAW_CONTROL.search(out)
    assert "<img" not in out and "<h1>" not in out
    assert out.count("<details>") == out.count("</details>")
    no_command_lines(out)
    rows = [line for line in out.splitlines() if line.startswith("|")]
    # every row of one table has as many cells as its header: no stray pipe or line break split one
    tables: list[list[str]] = []
    for line in out.splitlines():
        if line.startswith("|"):
            if not tables or not tables[-1]:
                tables.append([])
            tables[-1].append(line)
        elif tables and tables[-1]:
            tables.append([])
    for table in filter(None, tables):
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in table}
        assert len(widths) == 1, table
    assert rows


@pytest.mark.parametrize("writer", ANNOTATION_WRITERS)
@pytest.mark.parametrize(("name", "s"), CASES, ids=IDS)
def test_annotation_writers(writer: str, name: str, s: str) -> None:
    out = ANNOTATION_WRITERS[writer](s)
    assert not RAW_CONTROL.search(out)
    lines = out.splitlines()
    commands = [line for line in lines if line.startswith("::")]
    assert commands and all(re.match(r"::(error|warning|notice) [^:]*(?:%3A[^:]*)*::", c) for c in commands)
    # nothing but the commands this writer meant: one per finding
    assert len(commands) == 1
    no_command_lines("\n".join(line for line in lines if line not in commands))


@pytest.mark.parametrize("writer", JSON_WRITERS)
@pytest.mark.parametrize(("name", "s"), CASES, ids=IDS)
def test_json_writers(writer: str, name: str, s: str) -> None:
    out = JSON_WRITERS[writer](s)
    assert not RAW_CONTROL.search(out)
    json.loads(out)
    assert "\n::" not in out


JUNIT_WRITERS: dict[str, Callable[[str], str]] = {
    "plugin junit": lambda s: render_junit(audit_report(s)),
    "guards junit": guards("junit"),
    "pytest-audit junit": lambda s: emit.junit(
        [f.finding for f in pytest_audit_report(s).findings],  # type: ignore[attr-defined]
        tool=Tool.PYTEST_AUDIT,
        root=".",
        prefix="",
    ),
}


@pytest.mark.parametrize("writer", JUNIT_WRITERS)
@pytest.mark.parametrize(("name", "s"), CASES, ids=IDS)
def test_junit_is_well_formed(writer: str, name: str, s: str) -> None:
    out = JUNIT_WRITERS[writer](s)
    root = ET.fromstring(out)
    assert root.tag == "testsuites" and root.findall(".//testcase")
    no_command_lines(out)  # a CI step that prints the file hands its lines to the runner


@pytest.mark.parametrize(("name", "s"), CASES, ids=IDS)
def test_sarif_uri_round_trips(name: str, s: str) -> None:
    uri = sarif_uri(f"dir/{s}.py")
    assert not re.search(r"[#?\s|<>\"]", uri)
    assert urllib.parse.unquote(uri) == f"dir/{text_value(s)}.py"


# --- the escaping functions themselves -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("\x1b[31m", "\\x1b[31m"),
        ("\ud800", "\\ud800"),
        ("::error::x", "\\x3a:error::x"),
        ("   ::x", "   \\x3a:x"),
        ("plain: a::b", "plain: a::b"),
    ],
)
def test_text_line(raw: str, shown: str) -> None:
    assert text_line(raw) == shown


def test_markdown_escapes() -> None:
    assert md_text("<b>|*x*_[a](b)") == "&lt;b&gt;\\|\\*x\\*_\\[a\\](b)"
    assert md_code("a|b<c") == "<code>a\\|b&lt;c</code>"
    assert md_text("x" * 50, limit=10) == "xxxxxxx..."


def test_bounded_markdown_cuts_at_a_line() -> None:
    text = bounded_markdown(["x" * 99] * 100, max_bytes=1000)
    assert len(text.encode()) < 1200 and text.endswith("bytes") and "90 more line(s)" in text


def test_annotation_escaping_per_the_toolkit() -> None:
    line = annotation("error", "50%\nnext\x07", title="t:1,2", file="a,b.py", line=3)
    assert line == "::error file=a%2Cb.py,line=3,title=t%3A1%2C2::50%25%0Anext\\x07"


def test_sarif_document_shape(tmp_path: Path) -> None:
    finding = Finding(tool=Tool.GUARDS, kind="silent-skip", subject="t", message="m", path="a b.py")
    doc = sarif_document([finding], tool=Tool.GUARDS, prefix="test/reg", version="1", help_uri="https://example.org/h")
    run = doc["runs"][0]
    # From the repository root, with no base id: code scanning resolves the URI against the checkout as it is.
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "test/reg/a%20b.py"}
    assert "originalUriBaseIds" not in run
    assert {r["helpUri"] for r in run["tool"]["driver"]["rules"]} == {"https://example.org/h"}
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [k.name for k in kinds_of(Tool.GUARDS)]


# --- the registry -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "names"),
    [
        (Tool.GUARDS, {k.value for k in GuardFindingKind}),
        (Tool.LEDGER, {k.value for k in LedgerFindingKind}),
        (Tool.AUDIT, {k.value for k in FindingKind} - {"missing-report", "never-ran", "untested-cell"}),
        (Tool.COVERAGE, {"missing-report", "never-ran", "untested-cell"}),
        (
            Tool.PYTEST_AUDIT,
            {
                "silent-skip",
                "silent-pass",
                "never-runs",
                "unscheduled",
                "unparsable",
                "disabled-by-skip",
                *(k.value for k in JoinKind),
            },
        ),
    ],
)
def test_every_kind_has_exactly_one_registry_entry(tool: Tool, names: set[str]) -> None:
    assert {spec.name for spec in kinds_of(tool)} == names
    assert [key for key in registry() if key[0] is tool] == [spec.key for spec in KINDS if spec.tool is tool]


def test_a_kind_registered_twice_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from matrix.core import finding, kinds
    from matrix.core.errors import ConfigError

    monkeypatch.setattr(kinds, "KINDS", (*KINDS, KINDS[0]))
    with pytest.raises(ConfigError, match=f"finding kind {KINDS[0].tool.value}/{KINDS[0].name} is registered twice"):
        finding._build()


def test_an_unknown_kind_is_a_clear_error() -> None:
    from matrix.core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown finding kind guards/nope"):
        spec_of(Tool.GUARDS, "nope")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a & <b>c</b> > d", "a &amp; &lt;b&gt;c&lt;/b&gt; &gt; d"),
        ("&amp; stays visible as text", "&amp;amp; stays visible as text"),
        ("<script>x</script>", "&lt;script&gt;x&lt;/script&gt;"),
        ("\u00e9 | * ` [x]", "\u00e9 \\| \\* \\` \\[x\\]"),
        ("back\\slash", "back\\\\slash"),
        ('"quotes" stay', '"quotes" stay'),
        ("", ""),
    ],
)
def test_md_text_makes_html_inert_and_escapes_markdown(text: str, expected: str) -> None:
    """Written out by hand: what GitHub must render as the literal text."""
    assert md_text(text) == expected
