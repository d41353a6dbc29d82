"""The CI gate over a guard report: what fails, what a baseline acknowledges, what is shown."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from matrix.core.errors import EXIT_FINDINGS, EXIT_OK
from matrix.core.finding import Finding, Severity
from matrix.guards.baseline import Baseline, BaselineEntry, compare_keys, finding_keys, fingerprint
from matrix.guards.model import GuardReport


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


def worst_first(findings: tuple[Finding, ...] | list[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: (f.severity.rank, f.path, f.line, f.scope)))


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
    shown = [f for f in live if f.severity.rank <= show.rank]
    return Gate(
        shown=worst_first(shown),
        new_errors=tuple(f for f in live if f.failing),
        baselined=len(baselined),
        stale=stale,
        expired=expired,
        hidden=len(live) - len(shown),
        with_baseline=baseline is not None,
    )
