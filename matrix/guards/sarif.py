"""SARIF 2.1.0 for GitHub code scanning: one run, one rule per finding kind, repo-relative locations.

This output exits like the text output (1 on new error findings); upload it from a step that runs even on failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from matrix.guards.model import GuardFinding, GuardFindingKind, Severity

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# The project publishes no home page; a relative URI would fail the schema's `format: uri`, so none is given.
MAX_RESULTS = 5000  # code scanning keeps the top 5,000 of a run's results
LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
RULE_TEXT = {
    GuardFindingKind.SILENT_SKIP: "Registered on a runner where its skip guard is certainly true",
    GuardFindingKind.NEVER_RUNS: "Skipped on every runner it is registered for",
    GuardFindingKind.DISABLED_BY_SKIP: "Disabled by an unconditional skip instead of the registration's disabled=",
    GuardFindingKind.SILENT_PASS: "Test body returns early when a CI fact is true: it passes having tested nothing",
    GuardFindingKind.UNSCHEDULED: "No workflow job selects this registration",
    GuardFindingKind.UNKNOWN_LABEL: "A job selecting this registration runs on a runner label no profile knows",
    GuardFindingKind.UNPARSABLE: "File or registration the audit cannot read",
    GuardFindingKind.DISABLED: "Registration disabled with a reason",
    GuardFindingKind.UNDETERMINED: "Guard whose value no runner profile decides",
    GuardFindingKind.UNMAPPED: "Suite no runner profile serves",
    GuardFindingKind.OUT_OF_SCOPE: "Registration for a platform runner profiles do not describe",
    GuardFindingKind.UNREGISTERED: "Test file without a CI registration",
}


def _tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # only SARIF output needs it

    try:
        return version("specmatrix")
    except PackageNotFoundError:
        return "0+unknown"


def _rule(kind: GuardFindingKind) -> dict[str, Any]:
    return {
        "id": kind.value,
        "name": "".join(part.capitalize() for part in kind.value.split("-")),
        "shortDescription": {"text": RULE_TEXT[kind]},
        "help": {"text": f"{RULE_TEXT[kind]}. See docs/guard-audit.md, section Findings."},
    }


def _result(finding: GuardFinding, path: str) -> dict[str, Any]:
    on = f" on {', '.join(finding.runners)}" if finding.runners else ""
    text = f"{finding.test}{on}: {finding.reason}" + (f" Fix: {finding.hint}" if finding.hint else "")
    return {
        "ruleId": finding.kind.value,
        "level": LEVEL[finding.severity],
        "message": {"text": text},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": max(finding.line, 1)},
                }
            }
        ],
        "properties": {"test": finding.test, "runners": list(finding.runners)},
    }


def sarif_document(findings: Iterable[tuple[GuardFinding, str]]) -> dict[str, Any]:
    """The SARIF log for (finding, repo-relative path) pairs, worst first."""
    chosen = list(findings)[:MAX_RESULTS]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "specmatrix-guards",
                        "version": _tool_version(),
                        "rules": [_rule(kind) for kind in GuardFindingKind],
                    }
                },
                "results": [_result(f, path) for f, path in chosen],
            }
        ],
    }


def to_sarif(findings: Iterable[tuple[GuardFinding, str]]) -> str:
    return json.dumps(sarif_document(findings), indent=2)
