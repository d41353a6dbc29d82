"""The CI gate every finding command applies: `--show`, `--baseline` and the exit rule, over core `Finding`s.

A finding fails when its kind fails (`KindSpec.fails`, read through `Finding.failing`) and no baseline entry
acknowledges it; an entry past its expiry date acknowledges nothing: its finding is shown and fails like a new one
(so JUnit, SARIF and annotations show what the exit code says), and the entry is listed as expired. Paths are keyed
from the repository root (`repo_prefix`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.baseline import Baseline, BaselineEntry, Key, compare_keys, key_fingerprint, keys_of
from matrix.core.errors import EXIT_FINDINGS, EXIT_OK
from matrix.core.finding import Finding, Severity

MAX_PARENTS = 64  # a git top level further up than this is not looked for


def repo_top(path: Path) -> Path | None:
    """The git top level at or above `path` (a folder holding `.git`, a folder or a worktree's file); in a tree
    without git metadata (an exported archive), the nearest folder holding `.github`; else None."""
    here = path.resolve()
    if not here.is_dir():
        here = here.parent
    candidates = (here, *list(here.parents)[:MAX_PARENTS])
    for marker in (".git", ".github"):
        for candidate in candidates:
            if (candidate / marker).exists():
                return candidate
    return None


def repo_prefix(audited: Path, root: Path | None = None) -> str | None:
    """The audited folder as a POSIX path from the repository root (`root`, else the git top level): empty when it
    is the root, None when no root is known or the folder lies outside it."""
    top = root.resolve() if root is not None else repo_top(audited)
    if top is None:
        return None
    here = audited.resolve()
    if not here.is_dir():
        here = here.parent
    try:
        rel = here.relative_to(top)
    except ValueError:
        return None
    text = rel.as_posix()
    return "" if text == "." else text


@dataclass(frozen=True, kw_only=True)
class Gate:
    """The findings to show (worst first), which of them are new errors, and the baseline's leftovers."""

    shown: tuple[Finding, ...]
    new_errors: tuple[Finding, ...]  # every error finding no entry acknowledges, those of expired entries included
    baselined: int
    stale: tuple[BaselineEntry, ...] = ()
    expired: tuple[BaselineEntry, ...] = ()
    hidden: int = 0
    with_baseline: bool = False
    lapsed: int = 0  # of `new_errors`, those an expired entry once acknowledged

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.new_errors or self.expired else EXIT_OK


def error_keys(findings: Sequence[Finding], prefix: str = "") -> list[Key]:
    return [k for f in findings if f.failing for k in keys_of(f, prefix)]


# Each severity's rank, read once per finding by the gate (a dict, not the `rank` property: thousands of findings).
_RANK = {severity: severity.rank for severity in Severity}


def worst_first(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    rank = _RANK
    return tuple(sorted(findings, key=lambda f: (rank[f.severity], f.path, f.line, f.subject or f.path)))


def gate(
    findings: Sequence[Finding],
    *,
    show: Severity,
    baseline: Baseline | None = None,
    today: dt.date | None = None,
    prefix: str = "",
) -> Gate:
    """Apply `--show` and `--baseline`: errors the baseline knows are not new; expired entries fail; stale are listed."""
    baselined: set[int] = set()
    lapsed = 0
    stale: tuple[BaselineEntry, ...] = ()
    expired: tuple[BaselineEntry, ...] = ()
    if baseline is not None:
        comparison = compare_keys(baseline, error_keys(findings, prefix), today or dt.date.today(), prefix)
        gone = {e.fingerprint for e in comparison.expired}
        for index, f in enumerate(findings):
            if not f.failing:
                continue
            prints = [key_fingerprint(k) for k in keys_of(f, prefix)]
            if all(p in comparison.known for p in prints):
                if any(p in gone for p in prints):
                    lapsed += 1  # acknowledged no longer: shown, and failing, as a new one is
                else:
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
        lapsed=lapsed,
    )


def gate_line(gate: Gate | None) -> str:
    """What `--show` hid and what the baseline did, on one line (empty when neither applies)."""
    if gate is None:
        return ""
    parts = []
    if gate.hidden:
        parts.append(f"{gate.hidden} informational finding(s) hidden (--show info lists them)")
    if gate.with_baseline:
        parts.append(
            f"baseline: {len(gate.new_errors) - gate.lapsed} new error(s), {gate.baselined} acknowledged, "
            f"{len(gate.expired)} expired, {len(gate.stale)} stale"
        )
    return "; ".join(parts)


def status_line(gate: Gate) -> str:
    """The run's one final line: the exit code the command returns and why."""
    if gate.exit_code == 0:
        return "exit 0: no new error findings" + (" (the rest are in the baseline)" if gate.baselined else "")
    new = len(gate.new_errors) - gate.lapsed
    why = [f"{new} new error finding(s)"] if new else []
    why += [f"{len(gate.expired)} expired baseline entries (their findings are shown)"] if gate.expired else []
    return f"exit {gate.exit_code}: {', '.join(why)}"


def baseline_doc(gate: Gate) -> dict[str, Any]:
    """The gate's baseline counts as every JSON report carries them (under `baseline`)."""
    return {
        "new_errors": len(gate.new_errors),
        "acknowledged": gate.baselined,
        "expired": [e.fingerprint for e in gate.expired],
        "stale": [e.fingerprint for e in gate.stale],
    }


def entry_lines(gate: Gate | None) -> list[str]:
    """Expired and stale baseline entries, one section each (text output)."""
    lines: list[str] = []
    if gate is None:
        return lines
    for heading, entries in (("Expired baseline entries (fail)", gate.expired), ("Stale baseline entries", gate.stale)):
        if entries:
            lines.append(f"== {heading}: {len(entries)}")
            lines += [f"{e.path}: {e.kind}: {e.test} on {e.runner} ({e.fingerprint})" for e in entries]
            lines.append("")
    return lines
