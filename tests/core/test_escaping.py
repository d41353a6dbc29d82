"""Each escaping defect of the writers, planted through the public renderers and the command line.

A test id, skip reason, `disabled=` reason or file name is text from the audited suite: it must not forge a GitHub
workflow command in a text log, inject HTML or break a table in a job summary, or reach SARIF unencoded.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path

import pytest

from matrix.audit.reports import render_markdown, summary_lines
from matrix.cli.main import main
from matrix.core.report import CellResult, CellStatus, Report, RunnerInfo, write_report
from matrix.guards.model import GuardFindingKind, GuardReport, guard_finding
from matrix.ledger.join import LedgerFindingKind, LedgerReport, ledger_finding
from matrix.ledger.render import to_markdown as ledger_markdown
from matrix.ledger.render import to_text as ledger_text
from matrix.registered_suite.gate import to_markdown as guards_markdown
from matrix.registered_suite.gate import to_text as guards_text
from tests.core.test_option_cascade import SM90_ONLY

FORGED = "x\n::error file=fake.py,line=1::INJECTED"
HTML = "</details><h1>x</h1><img src=y>"
PIPE_PATH = "a|b\nc.py"


def forged_lines(text: str) -> list[str]:
    """Lines the GitHub runner would read as workflow commands (`::` after leading spaces)."""
    return [line for line in text.splitlines() if line.lstrip().startswith("::")]


def guard_report(**fields: str) -> GuardReport:
    finding = guard_finding(
        GuardFindingKind.SILENT_SKIP,
        path=fields.get("path", "t.py"),
        line=3,
        test=fields.get("test", "t.py::T"),
        runners=("4-gpu-b200",),
        guard=fields.get("guard", "not is_sm90()"),
        reason=fields.get("reason", "skips"),
        hint=fields.get("hint", ""),
    )
    return GuardReport(root=".", files_scanned=1, test_files=1, registered_files=1, runners=("4-gpu-b200",), findings=(finding,))


def ledger_report(message: str, path: str = "t.py") -> LedgerReport:
    finding = ledger_finding(
        kind=LedgerFindingKind.SILENT_SKIP, path=path, line=1, test=f"{path}::T::t", runner="4-gpu-b200", message=message
    )
    return LedgerReport(root=".", ledgers=("l.jsonl",), runners=(), findings=(finding,), processes=1, records=1)


def audit_report(skip_reason: str, nodeid: str = "t.py::test_cell[c0]") -> Report:
    cell = CellResult(
        nodeid=nodeid,
        cell="c0",
        test="t.py::test_cell",
        expected="run",
        rule=None,
        reason="must run: needs-gpu",
        status=CellStatus.SKIPPED_UNEXPECTED,
        skip_reason=skip_reason,
    )
    from matrix.audit.findings import cell_findings

    return Report(
        matrix="m",
        runner=RunnerInfo(name="4-gpu-b200", gpus=4, capability=(10, 0), skip_policy="strict"),
        versions={},
        detection_overridden=False,
        created="2026-07-01T00:00:00+00:00",
        cells=(cell,),
        findings=tuple(cell_findings([cell])),
    )


# --- text output never forges a workflow command -----------------------------------------------------------


@pytest.mark.parametrize("field", ["test", "reason", "guard", "hint", "path"])
def test_guards_text_never_starts_a_workflow_command(field: str) -> None:
    assert forged_lines(guards_text(guard_report(**{field: FORGED}))) == []


def test_ledger_text_never_starts_a_workflow_command() -> None:
    assert forged_lines(ledger_text(ledger_report(FORGED))) == []


def test_the_plugin_terminal_section_never_starts_a_workflow_command() -> None:
    lines = [line.text for line in summary_lines(audit_report(FORGED), [])]
    assert forged_lines("\n".join(lines)) == []
    assert all("\n" not in line for line in lines)


def test_audit_text_never_starts_a_workflow_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.json"
    write_report(audit_report(FORGED, nodeid="t.py::test_cell[\n::warning::x]"), path)
    assert main(["audit", str(path)]) == 1
    out = capsys.readouterr().out
    assert "INJECTED" in out
    assert forged_lines(out) == []


# --- Markdown keeps HTML inert and tables whole -----------------------------------------------------------------


def assert_inert(md: str) -> None:
    assert "<img" not in md and "<h1>" not in md
    assert md.count("</details>") == md.count("<details>")


def table_widths(md: str) -> set[int]:
    """Cell counts of every table row: a stray `|` or newline changes one row's width."""
    return {len(re.split(r"(?<!\\)\|", line)) for line in md.splitlines() if line.startswith("|")}


def test_guards_markdown_keeps_html_inert() -> None:
    assert_inert(guards_markdown(guard_report(reason=HTML, test=HTML)))


def test_guards_markdown_table_survives_a_pipe_and_a_newline_in_a_path() -> None:
    md = guards_markdown(guard_report(path=PIPE_PATH, test=PIPE_PATH))
    assert len(table_widths(md)) == 1


def test_ledger_markdown_keeps_html_inert() -> None:
    assert_inert(ledger_markdown(ledger_report(HTML, path="x<img src=y>.py")))


def test_plugin_markdown_keeps_html_inert_and_the_table_whole() -> None:
    md = render_markdown(audit_report(HTML, nodeid=f"t.py::test_cell[{PIPE_PATH}]"))
    assert_inert(md)
    assert len(table_widths(md.split("### Counts")[0])) == 1


# --- SARIF --------------------------------------------------------------------------------------------------------


def sarif_of(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    capsys.readouterr()
    main(["guards", *args, "--format", "sarif", "--no-cache", "--jobs", "1"])
    return json.loads(capsys.readouterr().out)


def write_silent_skip(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(SM90_ONLY, encoding="utf-8")


@pytest.mark.parametrize("name", ["test_%41.py", "test_#1.py", "test_?q.py", "test_ a.py"])
def test_sarif_uris_are_percent_encoded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    write_silent_skip(tmp_path / "suite", name)
    monkeypatch.chdir(tmp_path / "suite")
    doc = sarif_of(capsys, ".")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    assert uris == {urllib.parse.quote(name)}
    assert {urllib.parse.unquote(u) for u in uris} == {name}


def test_sarif_uris_are_relative_to_the_repository_root_outside_the_working_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_silent_skip(tmp_path / "elsewhere" / "suite" / "sub", "test_x.py")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    # No repository around it: from the folder audited. With --root: from that root. Never through a base id.
    for extra, uri in (([], "sub/test_x.py"), (["--root", str(tmp_path / "elsewhere")], "suite/sub/test_x.py")):
        doc = sarif_of(capsys, str(tmp_path / "elsewhere" / "suite"), *extra)
        run = doc["runs"][0]
        (result,) = run["results"]
        assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": uri}
        assert "originalUriBaseIds" not in run


def test_sarif_rules_carry_their_help_inline_and_no_project_relative_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_silent_skip(tmp_path / "suite", "test_x.py")
    monkeypatch.chdir(tmp_path / "suite")
    rules = sarif_of(capsys, ".")["runs"][0]["tool"]["driver"]["rules"]
    assert all("docs/" not in rule["help"]["text"] and "helpUri" not in rule for rule in rules)
    assert all(len(rule["help"]["text"]) > len(rule["shortDescription"]["text"]) for rule in rules)


# --- job summaries are appended ------------------------------------------------------------------------------------


def test_ledger_md_appends_to_the_step_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "registered"
    write_silent_skip(root, "test_a.py")
    ledger = tmp_path / "l.jsonl"
    from tests.core.test_option_cascade import ledger_of_one_run

    ledger.write_text(ledger_of_one_run("test_a.py"), encoding="utf-8")
    summary = tmp_path / "summary.md"
    summary.write_text("## an earlier step\n", encoding="utf-8")
    main(["ledger", str(ledger), "--root", str(root), "--md", str(summary)])
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## an earlier step\n") and "## Runtime skip ledger" in text


@pytest.mark.parametrize("command", [["explain", "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph"], ["cells"]])
def test_rule_reasons_from_the_matrix_file_never_start_a_workflow_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    from matrix.core import loader

    text = (Path(loader.__file__).parent.parent / "data" / "matrix.toml").read_text(encoding="utf-8")
    hostile = text.replace('reason = "fa3 kernels are built for Hopper (sm90) only"', f"reason = {json.dumps(FORGED)}", 1)
    assert hostile != text
    (tmp_path / "matrix.toml").write_text(hostile, encoding="utf-8")
    assert main(["--matrix", str(tmp_path / "matrix.toml"), *command, "--runner", "4-gpu-b200"]) == 0
    out = capsys.readouterr().out
    assert "INJECTED" in out
    assert forged_lines(out) == []
