"""JUnit XML for GitHub test-report actions: one testcase per item; unexpected skips are failures."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from matrix.report import CellResult, CellStatus, Finding, FindingKind, OutsideResult, Report, Severity

_SUITE = "specmatrix"


def _names(nodeid: str) -> tuple[str, str, str]:
    """(classname, name, file) the way pytest's own junitxml spells them."""
    path, _, rest = nodeid.partition("::")
    module = path.removesuffix(".py").replace("/", ".")
    if not rest:
        return module, path, path
    head, bracket, params = rest.partition("[")
    parts = head.split("::")
    return ".".join([module, *parts[:-1]]), parts[-1] + bracket + params, path


def _case(parent: ET.Element, nodeid: str, seconds: float) -> ET.Element:
    classname, name, file = _names(nodeid)
    return ET.SubElement(parent, "testcase", classname=classname, name=name, file=file, time=f"{seconds:.3f}")


def _child(case: ET.Element, tag: str, kind: str, message: str, text: str | None = None) -> None:
    el = ET.SubElement(case, tag, type=kind, message=message[:1000])
    el.text = text or message


def _cell_case(suite: ET.Element, cell: CellResult, finding: Finding | None) -> str | None:
    case = _case(suite, cell.nodeid, cell.duration)
    props = ET.SubElement(case, "properties")
    for key, value in (("cell", cell.cell), ("expected", cell.expected), ("status", cell.status.value)):
        ET.SubElement(props, "property", name=f"specmatrix.{key}", value=value)
    status = cell.status
    if status is CellStatus.SKIPPED_UNEXPECTED:
        _child(case, "failure", "unexpected-skip", f"unexpected skip: {cell.skip_reason or 'no reason given'} ({cell.reason})")
        return "failures"
    if status is CellStatus.SKIPPED_EXPECTED:
        ET.SubElement(case, "skipped", type="pytest.skip", message=cell.skip_reason or cell.reason)
        return "skipped"
    if status in (CellStatus.FAILED, CellStatus.ERROR, CellStatus.CRASHED, CellStatus.NOT_RUN):
        tag = "failure" if status is CellStatus.FAILED else "error"
        text = finding.message if finding is not None else (cell.message or status.value)
        _child(case, tag, status.value, text)
        return "failures" if tag == "failure" else "errors"
    if finding is not None:
        ET.SubElement(case, "system-out").text = f"warning: {finding.message}"
    return None


def _outside_case(suite: ET.Element, result: OutsideResult, finding: Finding | None) -> str | None:
    case = _case(suite, result.nodeid, 0.0)
    if finding is not None:
        _child(case, "failure", finding.kind.value, finding.message)
        return "failures"
    if result.status in ("skipped", "xfailed"):
        ET.SubElement(case, "skipped", type="pytest.skip", message=result.skip_reason or result.status)
        return "skipped"
    if result.status in ("failed", "error", "crashed", "not-run"):
        tag = "failure" if result.status == "failed" else "error"
        _child(case, tag, result.status, result.status)
        return "failures" if tag == "failure" else "errors"
    return None


def render_junit(report: Report) -> str:
    """The whole report as one <testsuite>; findings about the allowlist become testcases of their own."""
    by_subject = {f.subject: f for f in report.findings}
    root = ET.Element("testsuites", name=_SUITE)
    suite = ET.SubElement(root, "testsuite", name=f"{_SUITE}:{report.runner.name}", timestamp=report.created)
    props = ET.SubElement(suite, "properties")
    for key, value in (("runner", report.runner.name), ("matrix", report.matrix), ("planned", str(report.planned))):
        ET.SubElement(props, "property", name=f"specmatrix.{key}", value=value)
    tally = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for cell in report.cells:
        bucket = _cell_case(suite, cell, by_subject.get(cell.nodeid))
        tally["tests"] += 1
        if bucket:
            tally[bucket] += 1
    for result in report.outside:
        bucket = _outside_case(suite, result, by_subject.get(result.nodeid))
        tally["tests"] += 1
        if bucket:
            tally[bucket] += 1
    for finding in report.findings:
        if finding.kind not in (FindingKind.EXPIRED_ALLOW, FindingKind.UNUSED_ALLOW):
            continue
        case = ET.SubElement(suite, "testcase", classname=f"{_SUITE}.allowlist", name=finding.subject, time="0")
        tally["tests"] += 1
        if finding.severity is Severity.ERROR:
            _child(case, "failure", finding.kind.value, finding.message)
            tally["failures"] += 1
        else:
            ET.SubElement(case, "system-out").text = f"warning: {finding.message}"
    seconds = f"{sum(c.duration for c in report.cells):.3f}"
    for el in (root, suite):
        for key, count in tally.items():
            el.set(key, str(count))
        el.set("time", seconds)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
