"""Text, JSON (`specmatrix.guards/1`) and Markdown renderings of a guard report."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from matrix.core.finding import Finding, Tool, kinds_of, spec_of
from matrix.core.output import bounded_markdown, md_code, md_text, text_lines
from matrix.guards.gate import Gate
from matrix.guards.model import GuardFindingKind, GuardReport, finding_fields

SCHEMA = "specmatrix.guards/1"
Kind = GuardFindingKind
# The order groups are listed in: the registry's (matrix/core/kinds.py).
ORDER = tuple(Kind(spec.name) for spec in kinds_of(Tool.GUARDS))


def title(kind: GuardFindingKind) -> str:
    return spec_of(Tool.GUARDS, kind.value).title


def shown_path(report: GuardReport, finding: Finding) -> str:
    return str(PurePosixPath(report.root.replace("\\", "/")) / finding.path) if report.root not in ("", ".") else finding.path


def summary_line(report: GuardReport, *, with_exit: bool = True) -> str:
    """The counts; `with_exit` appends the report's own exit code (callers that print a status line of their own omit it)."""
    counts = report.counts()
    parts = ", ".join(f"{counts[k]} {k.value}" for k in ORDER if counts[k])
    head = (
        f"{report.files_scanned} files read, {report.test_files} test files, {report.registered_files} registered; "
        f"runners audited: {', '.join(report.runners) or 'none'}"
    )
    return f"{head}\n{parts or 'no findings'}" + (f"; exit {report.exit_code}" if with_exit else "")


def _gate_line(report: GuardReport, gate: Gate | None) -> str:
    if gate is None:
        return ""
    parts = []
    if gate.hidden:
        parts.append(f"{gate.hidden} informational finding(s) hidden (--show info lists them)")
    if gate.with_baseline:
        parts.append(
            f"baseline: {len(gate.new_errors)} new error(s), {gate.baselined} acknowledged, "
            f"{len(gate.expired)} expired, {len(gate.stale)} stale"
        )
    return "\n" + "; ".join(parts) if parts else ""


def status_line(report: GuardReport, gate: Gate | None) -> str:
    """The run's one final line: the exit code the command returns and why."""
    if gate is None:
        code = report.exit_code
        return f"exit {code}: " + ("error findings" if code else "no error findings")
    if gate.exit_code == 0:
        return "exit 0: no new error findings" + (" (the rest are in the baseline)" if gate.baselined else "")
    why = [f"{len(gate.new_errors)} new error finding(s)"] if gate.new_errors else []
    why += [f"{len(gate.expired)} expired baseline entries"] if gate.expired else []
    return f"exit {gate.exit_code}: {', '.join(why)}"


def _entry_lines(gate: Gate | None) -> list[str]:
    lines: list[str] = []
    if gate is None:
        return lines
    for heading, entries in (("Expired baseline entries (fail)", gate.expired), ("Stale baseline entries", gate.stale)):
        if entries:
            lines.append(f"== {heading}: {len(entries)}")
            lines += [f"{e.path}: {e.kind}: {e.test} on {e.runner} ({e.fingerprint})" for e in entries]
            lines.append("")
    return lines


def to_text(report: GuardReport, gate: Gate | None = None, *, status: str | None = None) -> str:
    """Findings by kind, the counts, then one status line (`status` replaces the default one)."""
    lines: list[str] = []
    shown = gate.shown if gate is not None else report.findings
    for kind in ORDER:
        found = [f for f in shown if f.kind == kind]
        if not found:
            continue
        lines.append(f"== {title(kind)}: {len(found)}")
        for f in found:
            on = f" on {', '.join(f.runners)}" if f.runners else ""
            test = f.subject or "module"
            lines.append(f"{shown_path(report, f)}:{f.line}: {kind.value}: {test}{on}")
            if f.source:
                lines.append(f"    guard: {f.source}")
            lines.append(f"    why: {f.message}")
            if f.hint:
                lines.append(f"    fix: {f.hint}")
        lines.append("")
    lines += _entry_lines(gate)
    lines += (summary_line(report, with_exit=False) + _gate_line(report, gate)).split("\n")
    lines.append(status or status_line(report, gate))
    return text_lines(lines)


def to_json_doc(report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None) -> dict[str, Any]:
    """`exit_code` replaces the audit's own where the command returns another (`--write-baseline`: 0)."""
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "root": report.root,
        "files_scanned": report.files_scanned,
        "test_files": report.test_files,
        "registered_files": report.registered_files,
        "runners": list(report.runners),
        "counts": {k.value: v for k, v in report.counts().items()},
        "exit_code": exit_code if exit_code is not None else report.exit_code if gate is None else gate.exit_code,
        "findings": [{**finding_fields(f), "failing": f.failing, "severity": f.severity.value} for f in report.findings],
    }
    if gate is not None and gate.with_baseline:
        doc["baseline"] = {
            "new_errors": len(gate.new_errors),
            "acknowledged": gate.baselined,
            "expired": [e.fingerprint for e in gate.expired],
            "stale": [e.fingerprint for e in gate.stale],
        }
    return doc


def to_json(report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None) -> str:
    return json.dumps(to_json_doc(report, gate, exit_code=exit_code), indent=2)


# A job summary is read in a browser: keep the page short, put each kind's rows in a collapsed block.
MD_ROWS_PER_KIND = 12
MD_MAX_LINES = 99


def to_markdown(report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: a count table and one collapsed block per kind (under 100 lines)."""
    counts = report.counts()
    shown = gate.shown if gate is not None else report.findings
    if exit_code is None:
        exit_code = report.exit_code if gate is None else gate.exit_code
    lines = [
        "## Guard audit",
        "",
        f"{md_code(report.root)}: {report.files_scanned} files read, {report.test_files} test files, "
        f"{report.registered_files} registered; runners audited: {md_text(', '.join(report.runners) or 'none')}.",
        "",
        "Findings: " + (", ".join(f"**{counts[k]}** {k.value}" for k in ORDER if counts[k]) or "none") + ".",
        "",
    ]
    kinds = [k for k in ORDER if any(f.kind == k for f in shown)]
    # Stay under MD_MAX_LINES whatever the tree: each kind's block costs 7 lines plus its rows.
    room = MD_MAX_LINES - len(lines) - 4 - 8 * len(kinds)
    per_kind = max(1, min(MD_ROWS_PER_KIND, room // max(1, len(kinds))))
    for kind in kinds:
        found = [f for f in shown if f.kind == kind]
        lines += [
            f"<details><summary>{md_text(title(kind))}: {len(found)}</summary>",
            "",
            "| where | test | runners | why |",
            "|---|---|---|---|",
        ]
        for f in found[:per_kind]:
            why = f.hint or f.message
            lines.append(
                f"| {md_code(f'{shown_path(report, f)}:{f.line}')} | {md_code(f.scope, 120)} | "
                f"{md_text(', '.join(f.runners))} | {md_text(why, 300)} |"
            )
        if len(found) > per_kind:
            lines.append(f"| ... | {len(found) - per_kind} more (see the annotations or --format text) | | |")
        lines += ["", "</details>"]
    lines.append("")
    if gate is not None and (gate.with_baseline or gate.hidden):
        lines.append(md_text(_gate_line(report, gate).strip()))
        lines.append("")
    verdict = "**fails**" if exit_code else "passes"
    lines.append(f"The audit {verdict} (exit {exit_code}).")
    return bounded_markdown(lines)
