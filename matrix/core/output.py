"""The output layer: escaping once per format, and the writers every audit shares (annotations, SARIF, summaries).

Each format has one escaping function and every interpolated value goes through it:

- text: `text_value` (control characters, newlines and lone surrogates become visible escapes) and `text_lines`
  (no line starts a GitHub workflow command, `::` after optional white space, as the runner reads them);
- Markdown: `md_text` (HTML and table metacharacters) and `md_code` (a code span that cannot be broken out of);
- GitHub annotations: `escape_data` / `escape_property` (actions/toolkit `packages/core/src/command.ts`);
- SARIF: `sarif_uri` (percent-encoded, relative to the repository root: code scanning resolves a relative URI
  against the checkout and ignores `uriBaseId`);
- JSON: `finding_doc` (the encoder escapes; every field is kept as it is).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from pathlib import PurePosixPath
from typing import Any

from matrix.core.finding import Finding, KindSpec, Severity, Tool, kinds_of

# What every command that reports findings prints with --format (the same set everywhere).
FINDING_FORMATS = ("text", "json", "md", "github", "sarif", "junit")

# C0 and C1 controls, DEL, the line and paragraph separators and the bidi overrides: shown as escapes, never raw.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text_value(text: str) -> str:
    """A value for one line of text output: every control character, newline and lone surrogate escaped."""
    return _UNSAFE.sub(_escape_char, text)


# The runner trims leading white space before it looks for `::` (C#'s `TrimStart()`: every Unicode space, U+3000 and
# U+00A0 included, and U+180E, a space in older Unicode); Python's `str.lstrip()` strips the same set but U+180E.
_RUNNER_SPACE = "\u180e"


def text_line(line: str) -> str:
    """A finished line: its values escaped, and never the start of a workflow command (`::` after white space)."""
    line = text_value(line)
    stripped = line.lstrip().lstrip(_RUNNER_SPACE).lstrip()
    if stripped.startswith("::"):
        line = line[: len(line) - len(stripped)] + "\\x3a" + stripped[1:]
    return line


def text_lines(lines: Iterable[str]) -> str:
    """Lines joined for a terminal or a CI log; each is made safe by `text_line`."""
    return "\n".join(text_line(line) for line in lines)


_MD_PUNCT = re.compile(r"([\\`*\[\]|])")


def md_text(text: str, limit: int = 0) -> str:
    """Text for Markdown prose or a table cell: HTML inert, `|`, `*`, backslash, backtick and brackets escaped, one line."""
    flat = text_value(text)
    if limit and len(flat) > limit:
        flat = flat[: limit - 3] + "..."
    # html.escape(flat, quote=False), written out: the html module brings its 2,000-entry entity table along.
    inert = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_PUNCT.sub(r"\\\1", inert)


def md_code(text: str, limit: int = 0) -> str:
    """Monospace text for a table cell: `<code>` around `md_text`, so HTML stays inert and `|` cannot split a cell.

    (A backtick span would show HTML entities literally, so it could not both escape `<` and read well.)
    """
    return f"<code>{md_text(text, limit)}</code>"


# GitHub caps a step summary at 1 MiB; stop well before it whatever the findings hold.
MAX_SUMMARY_BYTES = 512 * 1024


def bounded_markdown(lines: Sequence[str], max_bytes: int = MAX_SUMMARY_BYTES) -> str:
    """Join Markdown lines, cut at a line boundary before `max_bytes` with a note saying so."""
    out: list[str] = []
    size = 0
    for i, line in enumerate(lines):
        size += len(line.encode("utf-8", errors="replace")) + 1
        if size > max_bytes:
            out.append(f"\n... {len(lines) - i} more line(s) cut to keep the summary under {max_bytes} bytes")
            break
        out.append(line)
    return "\n".join(out)


# JSON ----------------------------------------------------------------------------------------------------------


def finding_doc(finding: Finding) -> dict[str, Any]:
    """One finding as a JSON object: every field of the record, plus whether it fails the run (JSON escapes itself)."""
    return {
        "tool": finding.tool.value,
        "kind": finding.kind,
        "severity": finding.severity.value,
        "failing": finding.failing,
        "subject": finding.subject,
        "message": finding.message,
        "path": finding.path,
        "line": finding.line,
        "runners": list(finding.runners),
        "hint": finding.hint,
        "detail": finding.detail,
        "accepted_by": finding.accepted_by,
        "evidence": finding.evidence,
        "fingerprint": finding.fingerprint,
    }


# GitHub annotations --------------------------------------------------------------------------------------------

MAX_ANNOTATION = 4096
ANNOTATION_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, title: str, file: str = "", line: int = 0) -> str:
    """One workflow command; `file` is relative to the repository root (none for a finding without a file)."""
    # Newlines stay (the runner decodes %0A); every other control character is shown as an escape.
    message = "\n".join(text_value(part) for part in message.replace("\r\n", "\n").split("\n"))
    if len(message) > MAX_ANNOTATION:
        message = message[: MAX_ANNOTATION - 3] + "..."
    props: list[tuple[str, str]] = []
    if file:
        props += [("file", file), ("line", str(max(line, 1)))]
    props.append(("title", title))
    shown = ",".join(f"{key}={escape_property(text_value(value))}" for key, value in props)
    return f"::{level} {shown}::{escape_data(message)}"


def finding_annotation(finding: Finding, file: str) -> str:
    """The annotation of one finding: accepted ones are notices, the rest take their kind's severity."""
    level = "notice" if finding.accepted_by else ANNOTATION_LEVEL[finding.severity]
    return annotation(
        level, message_of(finding), title=f"specmatrix {finding.tool.value} ({finding.kind})", file=file, line=finding.line
    )


def message_of(finding: Finding) -> str:
    """The one-paragraph message annotations and SARIF show: subject, runners, message, fix."""
    on = f" on {', '.join(finding.runners)}" if finding.runners else ""
    subject = (
        f"{finding.subject}{on}: "
        if finding.subject and finding.subject != finding.path
        else (f"on {', '.join(finding.runners)}: " if finding.runners else "")
    )
    text = subject + finding.message
    if finding.detail:
        text += f"; {finding.detail}"
    if finding.accepted_by:
        text += f" (accepted by {finding.accepted_by})"
    if finding.hint:
        text += f"\nfix: {finding.hint}"
    return text


# SARIF 2.1.0 ---------------------------------------------------------------------------------------------------

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
MAX_SARIF_RESULTS = 5000  # code scanning keeps the top 5,000 of a run's results
SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def sarif_uri(path: str) -> str:
    """A path relative to the repository root as a URI reference: every reserved or unsafe character percent-encoded."""
    posix = PurePosixPath(path.replace("\\", "/")).as_posix()
    return urllib.parse.quote(text_value(posix), safe="/")


def _rule(spec: KindSpec, help_uri: str | None) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": spec.name,
        "name": "".join(part.capitalize() for part in spec.name.split("-")),
        "shortDescription": {"text": spec.rule},
        "fullDescription": {"text": spec.title},
        "help": {"text": f"{spec.rule}. {spec.help}"},
        "defaultConfiguration": {"level": SARIF_LEVEL[spec.severity]},
    }
    if help_uri:
        rule["helpUri"] = help_uri
    return rule


def _sarif_result(finding: Finding, uri_of: Callable[[str], str]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": finding.kind,
        "level": "note" if finding.accepted_by else SARIF_LEVEL[finding.severity],
        "message": {"text": text_value(message_of(finding).replace("\n", " "))},
        "properties": {"test": finding.subject, "runners": list(finding.runners)},
    }
    if finding.path:
        result["locations"] = [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": uri_of(finding.path)},
                    "region": {"startLine": max(finding.line, 1)},
                }
            }
        ]
    if finding.fingerprint:
        result["partialFingerprints"] = {f"specmatrix/{finding.tool.value}/v1": finding.fingerprint}
    return result


def _rules_of(tool: Tool, findings: Sequence[Finding]) -> list[KindSpec]:
    """The tool's kinds, then those of another tool its findings carry (a coverage merge holds skip-audit ones)."""
    rules = list(kinds_of(tool))
    names = {spec.name for spec in rules}
    for other in dict.fromkeys(f.tool for f in findings if f.tool is not tool):
        rules += [spec for spec in kinds_of(other) if spec.name not in names]
        names.update(spec.name for spec in rules)
    return rules


def sarif_document(
    findings: Iterable[Finding], *, tool: Tool, prefix: str, version: str, help_uri: str | None = None
) -> dict[str, Any]:
    """One SARIF run: a rule per registered kind of `tool`, results worst first, URIs relative to the repository
    root (`prefix`: the audited folder's path from it, put before each finding's path)."""
    chosen = list(findings)[:MAX_SARIF_RESULTS]
    uris: dict[str, str] = {}

    def uri_of(path: str) -> str:  # once per file: thousands of results share a few hundred files
        uri = uris.get(path)
        if uri is None:
            uri = uris[path] = sarif_uri(f"{prefix}/{path}" if prefix else path)
        return uri

    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": f"specmatrix-{tool.value}",
                        "version": version,
                        "rules": [_rule(spec, help_uri) for spec in _rules_of(tool, chosen)],
                    }
                },
                "results": [_sarif_result(f, uri_of) for f in chosen],
            }
        ],
    }


def tool_version() -> str:
    """The installed distribution's version; run from a source tree without one (the Action), the package's own."""
    from importlib.metadata import PackageNotFoundError, version  # only SARIF output needs it

    try:
        return version("specmatrix")
    except PackageNotFoundError:
        import matrix

        return matrix.__version__
