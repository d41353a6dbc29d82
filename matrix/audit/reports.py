"""A finished report for people and tools: the terminal section, Markdown, JUnit XML and the files written.

- the audit's section of pytest's terminal summary, as plain lines (pure);
- Markdown for $GITHUB_STEP_SUMMARY: unexpected skips first, then other findings, then the counts;
- JUnit XML for GitHub test-report actions: one testcase per item; unexpected skips are failures;
- edge: write a finished report as JSON (schema specmatrix.report/1), JUnit XML and Markdown.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from matrix.core.atomic import append_text, write_text_atomic
from matrix.core.errors import OutputError, UsageError
from matrix.core.finding import Finding, Severity, Tool
from matrix.core.junit import MESSAGE_LIMIT, escape, outcome, quoteattr
from matrix.core.output import md_code, md_text, text_line
from matrix.core.report import CellResult, CellStatus, FindingKind, OutsideResult, Report, in_progress_document, write_report
from matrix.core.writers import Block, Column, Style, Table, View, markdown_summary, text_report

FINDING_LIMIT = 50
# The terminal summary's wording of a finding: one line, written by the shared text writer.
SUMMARY_VIEW = View(tool=Tool.AUDIT, lines=lambda f: [f"{f.spec.shown_label} {f.subject}: {f.message}"])


@dataclass(frozen=True, kw_only=True)
class Line:
    text: str
    red: bool = False
    yellow: bool = False


def summary_lines(report: Report, written: list[str]) -> list[Line]:
    r = report.runner
    arch = f"sm{r.capability[0]}{r.capability[1]}" if r.capability else "no GPU"
    note = ", detection overridden by SPECMATRIX_DETECT" if report.detection_overridden else ""
    lines = [Line(text=f"runner {r.name} ({r.gpus} GPU(s), {arch}, {r.skip_policy} skip policy{note}); matrix {report.matrix}")]
    counts = report.counts
    parts = " + ".join(f"{n} {s}" for s, n in counts.items() if n)
    lines.append(Line(text=f"planned {report.planned} = {parts or '0'}"))
    if report.outside:
        by_status = Counter(o.status for o in report.outside)
        allowed = sum(1 for o in report.outside if o.allowed_by)
        shown = ", ".join(f"{n} {s}" for s, n in sorted(by_status.items()))
        lines.append(Line(text=f"outside the matrix: {len(report.outside)} test(s) ({shown}); {allowed} skip(s) allowlisted"))
    listed = report.findings[:FINDING_LIMIT]
    written_lines = text_report(SUMMARY_VIEW, listed).split("\n") if listed else []
    for finding, text in zip(listed, written_lines, strict=True):  # the view gives each finding one line
        error = finding.severity is Severity.ERROR
        lines.append(Line(text=text, red=error, yellow=not error))
    if len(report.findings) > FINDING_LIMIT:
        lines.append(Line(text=f"... and {len(report.findings) - FINDING_LIMIT} more finding(s) in the report"))
    lines += [Line(text=f"report: {p}") for p in written]
    errors = len(report.errors)
    if errors:
        lines.append(
            Line(
                text=f"specmatrix: {errors} error finding(s): the session fails (pytest's own counts above are unchanged)",
                red=True,
            )
        )
    # Skip reasons and node ids come from the tests: one visible line each, never a workflow command (the finding
    # lines are made safe by the writer already; `text_line` leaves a safe line as it is).
    return [Line(text=text_line(line.text), red=line.red, yellow=line.yellow) for line in lines]


ROW_LIMIT = 200
# Each findings table is collapsed: the verdict and the counts stay on the page, the rows one click away.
_ROWS = "{n} row(s)"  # a step summary is capped at 1 MiB; the JSON report has every row


def _runner_line(report: Report) -> str:
    r = report.runner
    arch = f"sm{r.capability[0]}{r.capability[1]}" if r.capability else "no GPU"
    note = "; detection overridden by SPECMATRIX_DETECT" if report.detection_overridden else ""
    shard = f" · shard {md_code(report.shard)}" if report.shard else ""
    return (
        f"Runner {md_code(r.name)} ({r.gpus} GPU(s), {arch}, {md_text(r.skip_policy)} skip policy{note}) · "
        f"matrix {md_code(report.matrix)}{shard}"
    )


def verdict(report: Report) -> str:
    errors = len(report.errors)
    warnings = len(report.findings) - errors
    word = "FAILED" if errors else "passed"
    return f"{word} ({errors} error(s), {warnings} warning(s))"


def _severity_word(f: Finding) -> str:
    return "**error**" if f.severity is Severity.ERROR else "warning"


def render_markdown(report: Report) -> str:
    head = [f"## specmatrix skip audit: {verdict(report)}", "", _runner_line(report), ""]
    by_nodeid = {c.nodeid: c for c in report.cells}

    def skip(f: Finding) -> str:
        cell = by_nodeid.get(f.subject)
        return cell.skip_reason if cell is not None and cell.skip_reason else "-"

    def must(f: Finding) -> str:
        cell = by_nodeid.get(f.subject)
        return cell.reason.removeprefix("must run: ") if cell is not None else f.message

    subject = Column(header="", value=lambda f: f.subject, style=Style.CODE)
    unexpected_table = Table(
        columns=(
            replace(subject, header="Test"),
            Column(header="Skip reason", value=skip),
            Column(header="Must run because", value=must),
        ),
        limit=ROW_LIMIT,
        more=lambda n: f"| … and {n} more (see the JSON report) | | |",
    )
    others_table = Table(
        columns=(
            Column(
                header="Severity", value=lambda f: "**error**" if f.severity is Severity.ERROR else "warning", style=Style.RAW
            ),
            Column(header="Kind", value=lambda f: f.kind, style=Style.RAW),
            replace(subject, header="Subject"),
            Column(header="Detail", value=lambda f: f.message),
        ),
        limit=ROW_LIMIT,
        more=lambda n: f"| … | | {n} more (see the JSON report) | |",
    )
    blocks = []
    for title, table, found in (
        ("Unexpected skips", unexpected_table, [f for f in report.findings if f.kind == FindingKind.UNEXPECTED_SKIP]),
        ("Other findings", others_table, [f for f in report.findings if f.kind != FindingKind.UNEXPECTED_SKIP]),
    ):
        if found:
            blocks.append(
                Block(
                    heading=f"### {title} ({len(found)})",
                    summary=_ROWS.format(n=len(found)),
                    table=table,
                    findings=found,
                    gap=True,
                )
            )
    counts = report.counts
    lines = ["### Counts", "", "| Status | Items |", "|---|---:|"]
    lines += [f"| {s.value} | {counts[s.value]} |" for s in CellStatus]
    lines += [f"| **planned** | **{report.planned}** |", ""]
    if report.outside:
        outside = Counter(o.status for o in report.outside)
        allowed = sum(1 for o in report.outside if o.allowed_by)
        shown = md_text(", ".join(f"{n} {s}" for s, n in sorted(outside.items())))
        lines += [f"Outside the matrix: {len(report.outside)} test(s): {shown}; {allowed} skip(s) allowlisted.", ""]
    return markdown_summary(head, blocks, lines) + "\n"


_SUITE = "specmatrix"
_FAILING = {CellStatus.FAILED: "failure", CellStatus.ERROR: "error", CellStatus.CRASHED: "error", CellStatus.NOT_RUN: "error"}
_OUTSIDE_FAILING = {"failed": "failure", "error": "error", "crashed": "error", "not-run": "error"}


def _names(nodeid: str) -> tuple[str, str, str]:
    """(classname, name, file) the way pytest's own junitxml spells them."""
    path, _, rest = nodeid.partition("::")
    module = path.removesuffix(".py").replace("/", ".")
    if not rest:
        return module, path, path
    head, bracket, params = rest.partition("[")
    parts = head.split("::")
    return ".".join([module, *parts[:-1]]), parts[-1] + bracket + params, path


def _case(nodeid: str, seconds: float, body: str = "") -> str:
    classname, name, file = _names(nodeid)
    attrs = f'classname={quoteattr(classname)} name={quoteattr(name)} file={quoteattr(file)} time="{seconds:.3f}"'
    return f"    <testcase {attrs}>{body}</testcase>" if body else f"    <testcase {attrs} />"


def _skipped(message: str) -> str:
    return f'<skipped type="pytest.skip" message={quoteattr(message[:MESSAGE_LIMIT])} />'


def _cell_body(cell: CellResult, finding: Finding | None) -> tuple[str, str | None]:
    status = cell.status
    if status is CellStatus.SKIPPED_UNEXPECTED:
        text = f"unexpected skip: {cell.skip_reason or 'no reason given'} ({cell.reason})"
        return outcome("failure", "unexpected-skip", text), "failures"
    if status is CellStatus.SKIPPED_EXPECTED:
        return _skipped(cell.skip_reason or cell.reason), "skipped"
    tag = _FAILING.get(status)
    if tag is not None:
        text = finding.message if finding is not None else (cell.message or status.value)
        return outcome(tag, status.value, text), ("failures" if tag == "failure" else "errors")
    if finding is not None:
        return f"<system-out>{escape('warning: ' + finding.message)}</system-out>", None
    return "", None


def _outside_body(result: OutsideResult, finding: Finding | None) -> tuple[str, str | None]:
    if finding is not None:
        return outcome("failure", finding.kind, finding.message), "failures"
    if result.status in ("skipped", "xfailed"):
        return _skipped(result.skip_reason or result.status), "skipped"
    tag = _OUTSIDE_FAILING.get(result.status)
    if tag is not None:
        return outcome(tag, result.status, result.status), ("failures" if tag == "failure" else "errors")
    return "", None


def _allowlist_body(finding: Finding) -> tuple[str, str | None]:
    if finding.severity is Severity.ERROR:
        return outcome("failure", finding.kind, finding.message), "failures"
    return f"<system-out>{escape('warning: ' + finding.message)}</system-out>", None


def _cases(report: Report, tally: dict[str, int]) -> Iterator[str]:
    by_subject = {f.subject: f for f in report.findings}
    for cell in report.cells:
        body, bucket = _cell_body(cell, by_subject.get(cell.nodeid))
        tally["tests"] += 1
        if bucket:
            tally[bucket] += 1
        yield _case(cell.nodeid, cell.duration, body)
    for result in report.outside:
        body, bucket = _outside_body(result, by_subject.get(result.nodeid))
        tally["tests"] += 1
        if bucket:
            tally[bucket] += 1
        yield _case(result.nodeid, 0.0, body)
    for finding in report.findings:
        if finding.kind in (FindingKind.EXPIRED_ALLOW, FindingKind.UNUSED_ALLOW):
            body, bucket = _allowlist_body(finding)
            tally["tests"] += 1
            if bucket:
                tally[bucket] += 1
            attrs = f'classname="{_SUITE}.allowlist" name={quoteattr(finding.subject)} time="0.000"'
            yield f"    <testcase {attrs}>{body}</testcase>"


def render_junit(report: Report) -> str:
    """The whole report as one <testsuite>; findings about the allowlist become testcases of their own."""
    tally = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    cases = list(_cases(report, tally))
    seconds = f"{sum(c.duration for c in report.cells):.3f}"
    counts = " ".join(f'{key}="{count}"' for key, count in tally.items())
    props = "".join(
        f"      <property name={quoteattr('specmatrix.' + key)} value={quoteattr(value)} />\n"
        for key, value in (("runner", report.runner.name), ("matrix", report.matrix), ("planned", str(report.planned)))
    )
    suite_name = quoteattr(f"{_SUITE}:{report.runner.name}")
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<testsuites name="{_SUITE}" {counts} time="{seconds}">\n'
        f'  <testsuite name={suite_name} {counts} time="{seconds}" timestamp={quoteattr(report.created)}>\n'
        f"    <properties>\n{props}    </properties>\n" + "\n".join(cases) + "\n  </testsuite>\n</testsuites>\n"
    )


STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


class ReportWriter(Protocol):
    @property
    def suffix(self) -> str: ...

    def write(self, report: Report, path: Path) -> None: ...


class JsonWriter:
    suffix = ".json"

    def write(self, report: Report, path: Path) -> None:
        write_report(report, path)


@dataclass(frozen=True)
class TextWriter:
    suffix: str
    render: Callable[[Report], str]

    def write(self, report: Report, path: Path) -> None:
        """Write atomically, like the JSON report: a killed run never leaves half a file."""
        write_text_atomic(path, self.render(report))


WRITERS: tuple[ReportWriter, ...] = (JsonWriter(), TextWriter(".xml", render_junit), TextWriter(".md", render_markdown))


def report_paths(json_path: Path) -> dict[str, Path]:
    """`--matrix-report out/run.json` -> out/run.json, out/run.xml, out/run.md."""
    if json_path.suffix in (".xml", ".md"):
        raise UsageError(
            f"--matrix-report {json_path}: name the JSON file ({json_path.with_suffix('.json')}); .xml and .md go beside it"
        )
    return {w.suffix: json_path if w.suffix == ".json" else json_path.with_suffix(w.suffix) for w in WRITERS}


def mark_in_progress(json_path: Path) -> None:
    """At session start: the JSON path gets an in-progress marker and last run's .xml/.md go.

    A run that dies before its end (a segfault without xdist, a killed job) then leaves nothing a reader could
    take for this run's result. A special file or unwritable folder fails here, before any test runs.
    """
    paths = report_paths(json_path)
    created = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    write_text_atomic(paths[".json"], in_progress_document(created, os.getpid()))
    for suffix in (".xml", ".md"):
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(paths[suffix])
        except OSError as exc:  # a directory or an unwritable folder: the writer would fail at the end anyway
            raise OutputError(f"{paths[suffix]}: cannot remove the previous run's file: {exc.strerror or exc}") from None


def write_all(report: Report, json_path: Path) -> list[Path]:
    paths = report_paths(json_path)
    for writer in WRITERS:
        writer.write(report, paths[writer.suffix])
    return list(paths.values())


def append_step_summary(report: Report, env: Mapping[str, str]) -> Path | None:
    """Append the Markdown summary to $GITHUB_STEP_SUMMARY when GitHub Actions set it."""
    target = env.get(STEP_SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    # Appended, not replaced: GitHub owns this file and other steps' summaries share it.
    append_text(path, render_markdown(report))
    return path
