"""What a guard audit concludes and says: the baseline file, the CI gate, the text, JSON and Markdown writers.

The gate applies `--show` and `--baseline` to a report; the writers render the report with it. GitHub
annotations and SARIF are the shared writers of `matrix.core.output`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from matrix.core.errors import EXIT_FINDINGS, EXIT_OK, ConfigError
from matrix.core.finding import Finding, Severity, Tool, kinds_of, spec_of
from matrix.core.jsonio import dumps_indented, loads_untrusted, nested, string_literals
from matrix.core.output import bounded_markdown, md_code, md_text, text_lines
from matrix.core.textfiles import read_text
from matrix.guards.model import GuardFindingKind, GuardReport, finding_fields

# --- the baseline file ------------------------------------------------------------------------------------------------
# Baseline of acknowledged error findings: stable fingerprints (path, test, kind, runner; no line numbers).
#
# Format (`specmatrix.guards-baseline/1`, JSON)::
#
#     {"schema": "specmatrix.guards-baseline/1",
#      "entries": [{"fingerprint": "…", "path": "test/a/test_x.py", "test": "test/a/test_x.py::TestX",
#                   "kind": "silent-skip", "runner": "4-gpu-b200", "reason": "…", "expires": "2027-01-31"}]}
#
# `reason` and `expires` (ISO date or null) are the maintainer's; the rest identifies the finding. The static audit
# (`specmatrix guards --baseline`) and the runtime ledger (`specmatrix ledger --baseline`) read the same file.

BASELINE_SCHEMA = "specmatrix.guards-baseline/1"
MAX_BASELINE_BYTES = 16 * 1024 * 1024
MAX_ENTRIES = 100_000
_FIELDS = ("path", "test", "kind", "runner")


def fingerprint(path: str, test: str, kind: str, runner: str) -> str:
    """A short stable hash of what identifies a finding; line numbers are left out so edits do not churn it."""
    text = "\0".join((path, test, kind, runner))
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class BaselineEntry:
    path: str
    test: str
    kind: str
    runner: str
    reason: str = ""
    expires: dt.date | None = None

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.path, self.test, self.kind, self.runner)

    def expired(self, today: dt.date) -> bool:
        return self.expires is not None and self.expires < today


@dataclass(frozen=True, kw_only=True)
class Baseline:
    entries: tuple[BaselineEntry, ...]

    def by_fingerprint(self) -> dict[str, BaselineEntry]:
        return {e.fingerprint: e for e in self.entries}


def _entry(raw: Any, where: str) -> BaselineEntry:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: an entry must be an object")
    values: dict[str, str] = {}
    for key in _FIELDS:
        value = raw.get(key)
        if not isinstance(value, str) or not value or len(value) > 4096:
            raise ConfigError(f"{where}: field {key!r} must be a non-empty string")
        values[key] = value
    reason = raw.get("reason", "")
    if not isinstance(reason, str):
        raise ConfigError(f"{where}: field 'reason' must be a string")
    expires_raw = raw.get("expires")
    expires: dt.date | None = None
    if expires_raw is not None:
        if not isinstance(expires_raw, str):
            raise ConfigError(f"{where}: field 'expires' must be an ISO date (YYYY-MM-DD) or null")
        try:
            expires = dt.date.fromisoformat(expires_raw)
        except ValueError:
            raise ConfigError(f"{where}: field 'expires' must be an ISO date (YYYY-MM-DD), not {expires_raw[:40]!r}") from None
    entry = BaselineEntry(reason=reason, expires=expires, **values)
    given = raw.get("fingerprint")
    if given is not None and given != entry.fingerprint:
        raise ConfigError(f"{where}: fingerprint {str(given)[:40]!r} does not match its path/test/kind/runner")
    return entry


def parse_baseline(text: str, where: str) -> Baseline:
    """Validate an untrusted baseline document; any problem is one `ConfigError` line."""
    if len(text) > MAX_BASELINE_BYTES:
        raise ConfigError(f"{where}: baseline larger than {MAX_BASELINE_BYTES} bytes")
    doc = loads_untrusted(text, where, ConfigError, what="baseline JSON", malformed="malformed")
    if not isinstance(doc, Mapping) or doc.get("schema") != BASELINE_SCHEMA:
        raise ConfigError(f"{where}: not a specmatrix guard baseline (schema must be {BASELINE_SCHEMA!r})")
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, list) or len(raw_entries) > MAX_ENTRIES:
        raise ConfigError(f"{where}: 'entries' must be a list of at most {MAX_ENTRIES} objects")
    entries = tuple(_entry(raw, f"{where}: entry {i + 1}") for i, raw in enumerate(raw_entries))
    first: dict[str, int] = {}
    for number, entry in enumerate(entries, start=1):
        seen = first.setdefault(entry.fingerprint, number)
        if seen != number:
            # Two entries for one finding: whichever won would silently drop the other's expiry or reason.
            raise ConfigError(
                f"{where}: entry {number} repeats entry {seen} (same path, test, kind and runner, fingerprint "
                f"{entry.fingerprint}); keep one of them"
            )
    return Baseline(entries=entries)


def read_baseline(path: Path) -> Baseline:
    return parse_baseline(read_text(path, ConfigError), str(path))


def baseline_document(entries: Iterable[BaselineEntry]) -> dict[str, Any]:
    """The JSON document for `entries`, sorted so a rewrite of the same findings is byte-identical."""
    ordered = sorted(entries, key=lambda e: (e.path, e.test, e.kind, e.runner))
    return {
        "schema": BASELINE_SCHEMA,
        "entries": [
            {
                "fingerprint": e.fingerprint,
                "path": e.path,
                "test": e.test,
                "kind": e.kind,
                "runner": e.runner,
                "reason": e.reason,
                "expires": e.expires.isoformat() if e.expires else None,
            }
            for e in ordered
        ],
    }


# --- comparing findings with a baseline (used by `specmatrix guards --baseline` / `--write-baseline`) ---------

ANY_RUNNER = "*"  # the runner field of a finding that names none (an unparsable file, an unscheduled suite)


def finding_keys(path: str, test: str, kind: str, runners: Iterable[str]) -> list[tuple[str, str, str, str]]:
    """(path, test, kind, runner) for each runner of one finding; one entry with `*` when it names none."""
    names = list(runners) or [ANY_RUNNER]
    return [(path, test, kind, runner) for runner in names]


@dataclass(frozen=True, kw_only=True)
class BaselineComparison:
    """Which finding keys are new, which the baseline knows, and which entries are stale or expired."""

    new: frozenset[str]
    known: frozenset[str]
    stale: tuple[BaselineEntry, ...]
    expired: tuple[BaselineEntry, ...]


def compare_keys(baseline: Baseline, keys: Iterable[tuple[str, str, str, str]], today: dt.date) -> BaselineComparison:
    """Match current finding keys against a baseline by fingerprint (no line numbers, so edits do not churn it)."""
    entries = baseline.by_fingerprint()
    current = {fingerprint(*key) for key in keys}
    known = current & set(entries)
    expired = tuple(entries[f] for f in sorted(known) if entries[f].expired(today))
    stale = tuple(e for f, e in entries.items() if f not in current)
    return BaselineComparison(new=frozenset(current - known), known=frozenset(known), stale=stale, expired=expired)


def updated_entries(keys: Iterable[tuple[str, str, str, str]], previous: Baseline | None) -> list[BaselineEntry]:
    """Entries for the current findings, keeping the reason and expiry a maintainer wrote for ones already there."""
    kept = previous.by_fingerprint() if previous is not None else {}
    out: dict[str, BaselineEntry] = {}
    for path, test, kind, runner in keys:
        entry = BaselineEntry(path=path, test=test, kind=kind, runner=runner)
        old = kept.get(entry.fingerprint)
        out[entry.fingerprint] = old if old is not None else entry
    return list(out.values())


def baseline_text(entries: Iterable[BaselineEntry]) -> str:
    return dumps_indented(baseline_document(entries)) + "\n"


# --- the gate ---------------------------------------------------------------------------------------------------------
# The CI gate over a guard report: what fails, what a baseline acknowledges, what is shown.


@dataclass(frozen=True, kw_only=True)
class Gate:
    """The findings to show (worst first), which of them are new errors, and the baseline's leftovers."""

    shown: tuple[Finding, ...]
    new_errors: tuple[Finding, ...]
    baselined: int
    stale: tuple[BaselineEntry, ...] = ()
    expired: tuple[BaselineEntry, ...] = ()
    hidden: int = 0
    with_baseline: bool = False

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.new_errors or self.expired else EXIT_OK


def error_keys(findings: tuple[Finding, ...]) -> list[tuple[str, str, str, str]]:
    return [k for f in findings if f.failing for k in finding_keys(f.path, f.scope, f.kind, f.runners)]


# Each severity's rank, read once per finding by the gate (a dict, not the `rank` property: thousands of findings).
_RANK = {severity: severity.rank for severity in Severity}


def worst_first(findings: tuple[Finding, ...] | list[Finding]) -> tuple[Finding, ...]:
    rank = _RANK
    return tuple(sorted(findings, key=lambda f: (rank[f.severity], f.path, f.line, f.subject or f.path)))


def gate(report: GuardReport, *, show: Severity, baseline: Baseline | None = None, today: dt.date | None = None) -> Gate:
    """Apply `--show` and `--baseline`: errors the baseline knows are not new; expired entries fail; stale are listed."""
    findings = report.findings
    baselined: set[int] = set()
    stale: tuple[BaselineEntry, ...] = ()
    expired: tuple[BaselineEntry, ...] = ()
    if baseline is not None:
        comparison = compare_keys(baseline, error_keys(findings), today or dt.date.today())
        for index, f in enumerate(findings):
            keys = finding_keys(f.path, f.scope, f.kind, f.runners)
            if f.failing and all(fingerprint(*k) in comparison.known for k in keys):
                baselined.add(index)
        stale, expired = comparison.stale, comparison.expired
    live = [f for i, f in enumerate(findings) if i not in baselined]
    limit = show.rank
    shown = [f for f in live if _RANK[f.severity] <= limit]
    return Gate(
        shown=worst_first(shown),
        new_errors=tuple(f for f in live if f.failing),
        baselined=len(baselined),
        stale=stale,
        expired=expired,
        hidden=len(live) - len(shown),
        with_baseline=baseline is not None,
    )


# --- the writers ------------------------------------------------------------------------------------------------------
# Text, JSON (`specmatrix.guards/1`) and Markdown renderings of a guard report.

REPORT_SCHEMA = "specmatrix.guards/1"
Kind = GuardFindingKind
# The order groups are listed in: the registry's (matrix/core/kinds.py).
ORDER = tuple(Kind(spec.name) for spec in kinds_of(Tool.GUARDS))


def title(kind: GuardFindingKind) -> str:
    return spec_of(Tool.GUARDS, kind.value).title


def shown_path(report: GuardReport, finding: Finding) -> str:
    return str(PurePosixPath(report.root.replace("\\", "/")) / finding.path) if report.root not in ("", ".") else finding.path


def shown_paths(report: GuardReport) -> Callable[[Finding], str]:
    """`shown_path` worked out once per file: a report holds thousands of findings in far fewer files."""
    known: dict[str, str] = {}

    def path_of(finding: Finding) -> str:
        shown = known.get(finding.path)
        if shown is None:
            shown = known[finding.path] = shown_path(report, finding)
        return shown

    return path_of


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
    path_of = shown_paths(report)
    by_kind: dict[str, list[Finding]] = {}
    for f in shown:
        by_kind.setdefault(f.kind, []).append(f)
    for kind in ORDER:
        found = by_kind.get(kind)
        if not found:
            continue
        lines.append(f"== {title(kind)}: {len(found)}")
        for f in found:
            on = f" on {', '.join(f.runners)}" if f.runners else ""
            test = f.subject or "module"
            lines.append(f"{path_of(f)}:{f.line}: {kind.value}: {test}{on}")
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


def to_json_doc(
    report: GuardReport, gate: Gate | None = None, *, exit_code: int | None = None, findings: bool = True
) -> dict[str, Any]:
    """`exit_code` replaces the audit's own where the command returns another (`--write-baseline`: 0); without
    `findings` the document holds None in their place (`to_json` writes them itself)."""
    doc: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "root": report.root,
        "files_scanned": report.files_scanned,
        "test_files": report.test_files,
        "registered_files": report.registered_files,
        "runners": list(report.runners),
        "counts": {k.value: v for k, v in report.counts().items()},
        "exit_code": exit_code if exit_code is not None else report.exit_code if gate is None else gate.exit_code,
        "findings": [{**finding_fields(f), "failing": f.failing, "severity": f.severity.value} for f in report.findings]
        if findings
        else None,
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
    """`dumps_indented(to_json_doc(...))`, with the findings (nearly all of a report's text) written by
    `findings_json`; the rest of the document as `dumps_indented` writes it."""
    doc = to_json_doc(report, gate, exit_code=exit_code, findings=False)
    literal = string_literals()
    parts = []
    for key, value in doc.items():
        text = findings_json(report.findings, literal) if key == "findings" else nested(dumps_indented(value), 1)
        parts.append(f"{literal(key)}: {text}")
    return "{\n  " + ",\n  ".join(parts) + "\n}"


# A finding's entry in the report (`to_json_doc`): its `finding_fields`, then these two.
_REPORT_FIELDS = ("kind", "path", "line", "test", "runners", "guard", "reason", "hint", "failing", "severity")


def findings_json(findings: tuple[Finding, ...], literal: Callable[[str], str]) -> str:
    """The report's `findings` list as `dumps_indented` writes it at its depth in the report (one level in),
    each finding laid out by one f-string rather than walked as a dict: a warm run writes thousands.

    A finding with a field of another type than the layout assumes (a `line` that is not an exact `int`, a text
    that is not a `str`), or a `finding_fields` that grew a field, is written the general way."""
    if not findings:
        return "[]"
    laid_out = (*finding_fields(findings[0]), "failing", "severity") == _REPORT_FIELDS
    kinds: dict[tuple[Tool, str, Severity], tuple[str, bool, str]] = {}
    items = []
    for f in findings:
        kind, runners = f.kind, f.runners
        names = [literal(r) for r in runners if type(r) is str]
        if not (
            laid_out
            and len(names) == len(runners)
            and type(kind) is str
            and type(f.line) is int
            and type(f.path) is str
            and type(f.subject) is str
            and type(f.source) is str
            and type(f.message) is str
            and type(f.hint) is str
            and type(runners) is tuple
        ):
            entry = {**finding_fields(f), "failing": f.failing, "severity": f.severity.value}
            items.append(nested(dumps_indented(entry), 2))
            continue
        facts = kinds.get((f.tool, kind, f.severity))
        if facts is None:  # the kind's literal, whether it fails, the severity's literal
            facts = kinds[(f.tool, kind, f.severity)] = (literal(kind), spec_of(f.tool, kind).fails, literal(f.severity.value))
        shown = "[]" if not names else "[\n        " + ",\n        ".join(names) + "\n      ]"
        items.append(
            f'{{\n      "kind": {facts[0]},\n      "path": {literal(f.path)},\n      "line": {int.__repr__(f.line)},'
            f'\n      "test": {literal(f.subject or f.path)},\n      "runners": {shown},\n      "guard": {literal(f.source)},'
            f'\n      "reason": {literal(f.message)},\n      "hint": {literal(f.hint)},'
            f'\n      "failing": {"true" if facts[1] and not f.accepted_by else "false"},\n      "severity": {facts[2]}\n    }}'
        )
    return "[\n    " + ",\n    ".join(items) + "\n  ]"


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
