"""The one text writer and the one Markdown-summary writer (matrix/core/writers.py): what every audit's output
shares, checked on findings written here."""

from __future__ import annotations

from matrix.core.finding import Finding, Tool
from matrix.core.writers import Block, Column, Style, Table, View, markdown_summary, md_table, text_report


def _finding(kind: str, subject: str, message: str = "m") -> Finding:
    return Finding(tool=Tool.GUARDS, kind=kind, subject=subject, message=message, path="a.py", line=2)


FINDINGS = [_finding("disabled", "a.py::T1"), _finding("silent-skip", "a.py::T2", "x|y"), _finding("disabled", "")]


def test_text_groups_by_kind_in_the_views_order_under_the_kinds_titles() -> None:
    view = View(tool=Tool.GUARDS, lines=lambda f: [f"{f.kind} {f.subject}"], order=("silent-skip", "disabled"))
    text = text_report(view, FINDINGS, head=["head"], tail=["::tail"])
    lines = text.split("\n")
    assert lines[0] == "head"
    assert lines[1].startswith("== Silent skips") and lines[1].endswith(": 1")
    assert lines[2] == "silent-skip a.py::T2"
    assert lines[4].startswith("== Disabled registrations: 2")
    assert lines[-1] == "\\x3a:tail"  # no line of the text starts a workflow command


def test_text_without_an_order_lists_findings_as_given() -> None:
    view = View(tool=Tool.GUARDS, lines=lambda f: [f.subject or "-", "\tnext"])
    assert text_report(view, FINDINGS) == "a.py::T1\n\\tnext\na.py::T2\n\\tnext\n-\n\\tnext"


def test_a_table_escapes_each_cell_by_its_style_and_cuts_at_its_limit() -> None:
    table = Table(
        columns=(
            Column(header="", value=lambda f: f.kind, style=Style.RAW),
            Column(header="test", value=lambda f: f.subject, style=Style.CODE),
            Column(header="why", value=lambda f: f.message, limit=3, align="---:"),
        ),
        limit=2,
        more=lambda n: f"{n} more",
    )
    assert md_table(table, FINDINGS) == [
        "| | test | why |",
        "|---|---|---:|",
        "| disabled | <code>a.py::T1</code> | m |",
        "| silent-skip | <code>a.py::T2</code> | x\\|y |",
        "1 more",
    ]
    assert md_table(table, FINDINGS[2:]) == ["| | test | why |", "|---|---|---:|", "| disabled |  | m |"]


def test_a_summary_puts_each_block_in_a_collapsed_table_between_head_and_tail() -> None:
    table = Table(columns=(Column(header="test", value=lambda f: f.subject),))
    block = Block(heading="### Found (1)", summary="1 row(s)", table=table, findings=FINDINGS[:1], gap=True)
    text = markdown_summary(["## audit", ""], [block], ["end"])
    assert text.split("\n") == [
        "## audit",
        "",
        "### Found (1)",
        "",
        "<details><summary>1 row(s)</summary>",
        "",
        "| test |",
        "|---|",
        "| a.py::T1 |",
        "",
        "</details>",
        "",
        "end",
    ]


def test_the_plugins_terminal_summary_words_its_findings_through_the_text_writer(monkeypatch) -> None:
    """A finding line the writer did not write shows here: the summary would then have formatted it itself."""
    from matrix.audit import reports
    from matrix.audit.findings import cell_findings
    from matrix.core.report import CellResult, CellStatus, Report, RunnerInfo

    cells = tuple(
        CellResult(
            nodeid=f"t.py::test[{n}]", cell="c", test="t.py::test", expected="run", rule=None, reason="why",
            status=CellStatus.SKIPPED_UNEXPECTED, skip_reason="no\nGPU",
        )
        for n in range(3)
    )  # fmt: skip
    report = Report(
        matrix="m", runner=RunnerInfo(name="4-gpu-b200", gpus=4, capability=(10, 0)), versions={},
        detection_overridden=False, created="2026-07-01", cells=cells, findings=tuple(cell_findings(list(cells))),
    )  # fmt: skip
    before = [line.text for line in reports.summary_lines(report, []) if "t.py::test[" in line.text]
    assert len(before) == 3 and all("no\\nGPU" in line for line in before)  # escaped once, by the writer
    real = reports.text_report
    monkeypatch.setattr(reports, "text_report", lambda view, fs, **kw: real(view, fs, **kw).replace("t.py", "T.PY"))
    after = [line.text for line in reports.summary_lines(report, []) if "::test[" in line.text]
    assert after == [line.replace("t.py", "T.PY") for line in before]
