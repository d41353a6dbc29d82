"""GitHub workflow-command annotations (`::error file=...,line=...,title=...::message`) for guard findings.

Escaping follows actions/toolkit `packages/core/src/command.ts`: the message escapes `%`, `\\r`, `\\n` (in that
order); property values also escape `:` and `,`. Messages are cut at 4096 characters, and the worst findings
come first because a step shows only about ten annotations of each level.
"""

from __future__ import annotations

from collections.abc import Iterable

from matrix.guards.model import GuardFinding, Severity

MAX_MESSAGE = 4096
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: GuardFinding, path: str) -> str:
    """One workflow command for a finding; `path` is relative to the repository root."""
    on = f" on {', '.join(finding.runners)}" if finding.runners else ""
    message = f"{finding.test}{on}: {finding.reason}"
    if finding.hint:
        message += f"\nfix: {finding.hint}"
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 3] + "..."
    props = {
        "file": path,
        "line": str(max(finding.line, 1)),
        "title": f"specmatrix guards ({finding.kind.value})",
    }
    shown = ",".join(f"{key}={escape_property(value)}" for key, value in props.items())
    return f"::{LEVEL[finding.severity]} {shown}::{escape_data(message)}"


def to_annotations(findings: Iterable[tuple[GuardFinding, str]]) -> str:
    """Annotations for (finding, repo-relative path) pairs, already ordered worst first."""
    return "\n".join(annotation(f, path) for f, path in findings)
