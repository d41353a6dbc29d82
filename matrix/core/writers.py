"""The one text writer and the one Markdown-summary writer of findings; each audit gives them its wording as data.

An audit describes how it words a finding (`View`: a finding's text lines, the kind order its groups follow) and
its summary tables (`Table`: columns, each a header, a value of the finding and how the value is escaped; how many
rows; what replaces the rows left out). The writers do the rest the same way for every audit: grouping under the
kinds' titles (`KindSpec.title`), escaping every value once per format (`matrix.core.output`), collapsed blocks,
and the size bound of a job summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from matrix.core.finding import Finding, Tool, spec_of
from matrix.core.output import bounded_markdown, md_code, md_text, text_lines


class Style(StrEnum):
    """How a table cell's value is written: as it is (already Markdown), as escaped text, or as code."""

    RAW = "raw"
    TEXT = "text"
    CODE = "code"  # an empty value stays an empty cell


@dataclass(frozen=True, kw_only=True)
class Column:
    header: str  # an empty header is written as one space
    value: Callable[[Finding], str]
    style: Style = Style.TEXT
    limit: int = 0  # characters kept of the value (0: all)
    align: str = "---"  # "---:" for counts


@dataclass(frozen=True, kw_only=True)
class Table:
    columns: tuple[Column, ...]
    limit: int = 0  # rows shown (0: every finding)
    more: Callable[[int], str] | None = None  # the line after the rows when `limit` left n out


@dataclass(frozen=True, kw_only=True)
class Block:
    """One collapsed table of a summary: an optional `### heading`, the `<details>` summary line, its findings."""

    summary: str  # Markdown, already escaped
    table: Table
    findings: Sequence[Finding]
    heading: str = ""
    gap: bool = False  # a blank line after the block


@dataclass(frozen=True, kw_only=True)
class View:
    """How one audit words its findings in text."""

    tool: Tool
    lines: Callable[[Finding], list[str]]  # one finding's lines
    order: tuple[str, ...] = ()  # kinds grouped under their titles in this order; empty: one list in the order given


def kind_sections(
    findings: Iterable[Finding], tool: Tool, order: Sequence[str], lines_of: Callable[[Finding], list[str]]
) -> list[str]:
    """Findings grouped by kind in `order`: a `== TITLE: N` heading (the kind's `KindSpec.title`), each finding's
    lines as `lines_of` words them, then a blank line. The one grouped text layout every audit's text output uses."""
    by_kind: dict[str, list[Finding]] = {}
    for f in findings:
        by_kind.setdefault(f.kind, []).append(f)
    lines: list[str] = []
    for kind in order:
        found = by_kind.get(kind)
        if not found:
            continue
        lines.append(f"== {spec_of(tool, kind).title}: {len(found)}")
        for f in found:
            lines += lines_of(f)
        lines.append("")
    return lines


def md_details(summary: str, body: Sequence[str]) -> list[str]:
    """A collapsed block (`summary` is Markdown already escaped): a step summary keeps its verdict and counts on the
    page and each table one click away. The one block layout every audit's Markdown uses."""
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>"]


def text_report(view: View, findings: Sequence[Finding], *, head: Sequence[str] = (), tail: Sequence[str] = ()) -> str:
    """`head`, the findings (grouped by kind when the view has an order), then `tail`; every line made safe."""
    if view.order:
        body = kind_sections(findings, view.tool, view.order, view.lines)
    else:
        body = [line for f in findings for line in view.lines(f)]
    return text_lines([*head, *body, *tail])


def _cell(column: Column, finding: Finding) -> str:
    value = column.value(finding)
    if column.style is Style.RAW:
        return value
    if column.style is Style.CODE:
        return md_code(value, column.limit) if value else ""
    return md_text(value, column.limit)


def md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def md_head(headers: Sequence[str], aligns: Sequence[str]) -> list[str]:
    """A table's header and separator rows."""
    return ["|" + "|".join(f" {h} " if h else " " for h in headers) + "|", "|" + "|".join(aligns) + "|"]


def md_table(table: Table, findings: Sequence[Finding]) -> list[str]:
    """The header, one row per finding up to the table's limit, then its `more` line for the rest."""
    cols = table.columns
    lines = md_head([c.header for c in cols], [c.align for c in cols])
    shown = findings[: table.limit] if table.limit else findings
    lines += [md_row([_cell(c, f) for c in cols]) for f in shown]
    if len(findings) > len(shown) and table.more is not None:
        lines.append(table.more(len(findings) - len(shown)))
    return lines


def markdown_summary(head: Sequence[str], blocks: Sequence[Block], tail: Sequence[str] = ()) -> str:
    """A job summary: `head` (verdict, counts), each block's collapsed table, then `tail`; bounded in size."""
    lines = list(head)
    for block in blocks:
        if block.heading:
            lines += [block.heading, ""]
        lines += md_details(block.summary, md_table(block.table, block.findings))
        if block.gap:
            lines.append("")
    return bounded_markdown([*lines, *tail])
