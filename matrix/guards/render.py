"""Text, JSON (`specmatrix.guards/1`) and Markdown renderings of a guard report."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import PurePosixPath
from typing import Any

from matrix.guards.model import GuardFinding, GuardFindingKind, GuardReport

SCHEMA = "specmatrix.guards/1"
Kind = GuardFindingKind
# Failing kinds first, then what is listed for information.
ORDER = (
    Kind.SILENT_SKIP,
    Kind.NEVER_RUNS,
    Kind.UNSCHEDULED,
    Kind.UNPARSABLE,
    Kind.DISABLED,
    Kind.UNDETERMINED,
    Kind.UNMAPPED,
    Kind.OUT_OF_SCOPE,
    Kind.UNREGISTERED,
)
TITLES = {
    Kind.SILENT_SKIP: "Silent skips (registered on a runner where the guard certainly skips)",
    Kind.NEVER_RUNS: "Never runs (skipped on every runner it is registered for)",
    Kind.UNSCHEDULED: "Unscheduled registrations (no workflow picks them up)",
    Kind.UNPARSABLE: "Unparsable files and registrations",
    Kind.DISABLED: "Disabled registrations",
    Kind.UNDETERMINED: "Undetermined guards (not evaluated: a fact the profiles do not give)",
    Kind.UNMAPPED: "Unmapped suites (no runner profile; guards not evaluated)",
    Kind.OUT_OF_SCOPE: "Out of scope (not CUDA or CPU)",
    Kind.UNREGISTERED: "Test files without a registration",
}


def shown_path(report: GuardReport, finding: GuardFinding) -> str:
    return str(PurePosixPath(report.root.replace("\\", "/")) / finding.path) if report.root not in ("", ".") else finding.path


def summary_line(report: GuardReport) -> str:
    counts = report.counts()
    parts = ", ".join(f"{counts[k]} {k.value}" for k in ORDER if counts[k])
    head = (
        f"{report.files_scanned} files read, {report.test_files} test files, {report.registered_files} registered; "
        f"runners audited: {', '.join(report.runners) or 'none'}"
    )
    return f"{head}\n{parts or 'no findings'}; exit {report.exit_code}"


def to_text(report: GuardReport) -> str:
    lines: list[str] = []
    for kind in ORDER:
        found = report.of_kind(kind)
        if not found:
            continue
        lines.append(f"== {TITLES[kind]}: {len(found)}")
        for f in found:
            on = f" on {', '.join(f.runners)}" if f.runners else ""
            test = f.test if f.test != f.path else "module"
            lines.append(f"{shown_path(report, f)}:{f.line}: {kind.value}: {test}{on}")
            if f.guard:
                lines.append(f"    guard: {f.guard}")
            lines.append(f"    why: {f.reason}")
        lines.append("")
    lines.append(summary_line(report))
    return "\n".join(lines)


def to_json_doc(report: GuardReport) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "root": report.root,
        "files_scanned": report.files_scanned,
        "test_files": report.test_files,
        "registered_files": report.registered_files,
        "runners": list(report.runners),
        "counts": {k.value: v for k, v in report.counts().items()},
        "exit_code": report.exit_code,
        "findings": [
            {**asdict(f), "kind": f.kind.value, "runners": list(f.runners), "failing": f.failing} for f in report.findings
        ],
    }


def to_json(report: GuardReport) -> str:
    return json.dumps(to_json_doc(report), indent=2)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(report: GuardReport) -> str:
    counts = report.counts()
    lines = [
        "## Guard audit",
        "",
        f"`{report.root}`: {report.files_scanned} files read, {report.test_files} test files, "
        f"{report.registered_files} registered; runners audited: {', '.join(report.runners) or 'none'}.",
        "",
        "| finding | count |",
        "|---|---:|",
        *(f"| {k.value} | {counts[k]} |" for k in ORDER),
        "",
    ]
    for kind in ORDER:
        found = report.of_kind(kind)
        if not found:
            continue
        lines += [f"### {TITLES[kind]}", "", "| where | test | runner | guard | why |", "|---|---|---|---|---|"]
        for f in found:
            guard = f"`{_cell(f.guard)}`" if f.guard else ""
            where = f"`{shown_path(report, f)}:{f.line}`"
            lines.append(f"| {where} | `{_cell(f.test)}` | {', '.join(f.runners)} | {guard} | {_cell(f.reason)} |")
        lines.append("")
    verdict = "**fails**" if report.exit_code else "passes"
    lines.append(f"The audit {verdict} (exit {report.exit_code}).")
    return "\n".join(lines)
