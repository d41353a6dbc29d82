"""JUnit XML: the escaping every JUnit file we write shares, and the one emitter of findings as test results.

Test-report tools (GitHub test reporters, Jenkins, GitLab) read `testsuites`/`testsuite` counts (`tests`, `failures`,
`errors`, `skipped`) and each `testcase`'s `classname`, `name`, `file` and `line`, with a `failure` child (`type`,
`message`, text) for a red one. Each finding is a testcase, failed when it fails the run (`Finding.failing`); a kind
of the audit that found nothing is one passing testcase, so a clean run reports what was checked, never 0 tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from matrix.core.finding import Finding, Tool, kinds_of

MESSAGE_LIMIT = 1000
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


# A line break in element text is written as a character reference: the text a JUnit reader gets is the same, and
# no value (a file name holding a newline and `::error ...`) starts a line of the file, which a CI step that prints
# it (`cat report.xml`) would hand to the runner as a workflow command.
_LINE_BREAKS = {"\n": "&#10;", "\r": "&#13;"}


def escape(text: str) -> str:
    # Imported here, not at the top: xml.sax.saxutils pulls in urllib.request and http.client (about 8 ms), and
    # every engaged pytest process (each xdist worker too) imports the audit's writers, while only the one writing
    # the report calls it.
    from xml.sax import saxutils

    return saxutils.escape(xml_safe(text), _LINE_BREAKS)


def quoteattr(text: str) -> str:
    from xml.sax import saxutils

    return saxutils.quoteattr(xml_safe(text))


def outcome(tag: str, kind: str, message: str) -> str:
    """<failure>/<error> with the message as attribute (clipped) and as text (whole)."""
    return f"<{tag} type={quoteattr(kind)} message={quoteattr(message[:MESSAGE_LIMIT])}>{escape(message)}</{tag}>"


def _case(finding: Finding, tool: Tool, file_of: Callable[[str], str], message: str) -> tuple[str, bool]:
    on = f" on {', '.join(finding.runners)}" if finding.runners else ""
    attrs = (
        f"classname={quoteattr(f'specmatrix.{tool.value}.{finding.kind}')} name={quoteattr((finding.scope or finding.kind) + on)}"
    )
    if finding.path:
        attrs += f' file={quoteattr(file_of(finding.path))} line="{max(finding.line, 1)}"'
    attrs += ' time="0.000"'
    if finding.failing:
        return f"    <testcase {attrs}>{outcome('failure', finding.kind, message)}</testcase>", True
    return f"    <testcase {attrs}><system-out>{escape(f'{finding.severity.value}: {message}')}</system-out></testcase>", False


def junit(
    findings: Sequence[Finding],
    *,
    tool: Tool,
    file_of: Callable[[str], str],
    message_of: Callable[[Finding], str],
    checked: Collection[str] | None = None,
) -> str:
    """One <testsuite> named after the audit: a testcase per finding (failed when it fails the run), then one
    passing testcase per kind of `tool` that found nothing (of the kinds `checked`, when only some were)."""
    cases: list[str] = []
    failures = 0
    for f in findings:
        case, failed = _case(f, tool, file_of, message_of(f))
        cases.append(case)
        failures += failed
    found = {f.kind for f in findings}
    for spec in kinds_of(tool):
        if spec.name not in found and (checked is None or spec.name in checked):
            attrs = f"classname={quoteattr(f'specmatrix.{tool.value}.{spec.name}')} name={quoteattr(f'no {spec.name} findings')}"
            cases.append(f'    <testcase {attrs} time="0.000" />')
    name = quoteattr(f"specmatrix-{tool.value}")
    counts = f'tests="{len(cases)}" failures="{failures}" errors="0" skipped="0"'
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<testsuites name={name} {counts} time="0.000">\n'
        f'  <testsuite name={name} {counts} time="0.000">\n' + "".join(c + "\n" for c in cases) + "  </testsuite>\n</testsuites>"
    )
