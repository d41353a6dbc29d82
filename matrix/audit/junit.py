"""JUnit XML for GitHub test-report actions: one testcase per item; unexpected skips are failures."""

from __future__ import annotations

import re
from collections.abc import Iterator

from matrix.core.finding import Severity
from matrix.core.report import CellResult, CellStatus, FindingKind, OutsideResult, Report, StoredFinding

_SUITE = "specmatrix"
_MESSAGE_LIMIT = 1000
_FAILING = {CellStatus.FAILED: "failure", CellStatus.ERROR: "error", CellStatus.CRASHED: "error", CellStatus.NOT_RUN: "error"}
# XML 1.0 allows tab, LF, CR and U+0020 upwards, minus surrogates and U+FFFE/U+FFFF: anything else (a control
# character in a failure message, a lone surrogate in a skip reason) makes the whole file unreadable to JUnit
# parsers, so it is written as a visible `\xNN` / `\uNNNN` escape instead. Spelled as the (small) set of invalid
# characters rather than the negated valid ranges: the same set, compiled in well under 1 ms instead of about 7 ms
# in every process that loads the audit.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_safe(text: str) -> str:
    """Text with every character XML 1.0 cannot carry replaced by its escape."""
    return _XML_INVALID.sub(_visible, text)


def escape(text: str) -> str:
    # Imported here, not at the top: xml.sax.saxutils pulls in urllib.request and http.client (about 8 ms), and
    # every engaged pytest process (each xdist worker too) imports this module, while only the one writing the
    # report calls it.
    from xml.sax import saxutils

    return saxutils.escape(xml_safe(text))


def quoteattr(text: str) -> str:
    from xml.sax import saxutils

    return saxutils.quoteattr(xml_safe(text))


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


def _outcome(tag: str, kind: str, message: str) -> str:
    """<failure>/<error> with the message as attribute (clipped) and as text (whole)."""
    return f"<{tag} type={quoteattr(kind)} message={quoteattr(message[:_MESSAGE_LIMIT])}>{escape(message)}</{tag}>"


def _skipped(message: str) -> str:
    return f'<skipped type="pytest.skip" message={quoteattr(message[:_MESSAGE_LIMIT])} />'


def _cell_body(cell: CellResult, finding: StoredFinding | None) -> tuple[str, str | None]:
    status = cell.status
    if status is CellStatus.SKIPPED_UNEXPECTED:
        text = f"unexpected skip: {cell.skip_reason or 'no reason given'} ({cell.reason})"
        return _outcome("failure", "unexpected-skip", text), "failures"
    if status is CellStatus.SKIPPED_EXPECTED:
        return _skipped(cell.skip_reason or cell.reason), "skipped"
    tag = _FAILING.get(status)
    if tag is not None:
        text = finding.message if finding is not None else (cell.message or status.value)
        return _outcome(tag, status.value, text), ("failures" if tag == "failure" else "errors")
    if finding is not None:
        return f"<system-out>{escape('warning: ' + finding.message)}</system-out>", None
    return "", None


def _outside_body(result: OutsideResult, finding: StoredFinding | None) -> tuple[str, str | None]:
    if finding is not None:
        return _outcome("failure", finding.kind.value, finding.message), "failures"
    if result.status in ("skipped", "xfailed"):
        return _skipped(result.skip_reason or result.status), "skipped"
    tag = _OUTSIDE_FAILING.get(result.status)
    if tag is not None:
        return _outcome(tag, result.status, result.status), ("failures" if tag == "failure" else "errors")
    return "", None


def _allowlist_body(finding: StoredFinding) -> tuple[str, str | None]:
    if finding.severity is Severity.ERROR:
        return _outcome("failure", finding.kind.value, finding.message), "failures"
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
