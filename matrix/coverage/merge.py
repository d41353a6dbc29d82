"""Merge run reports into per-runner cell coverage and findings; pure (reports are already parsed).

Buckets follow the matrix's coverage layout (`[coverage]` rows and columns, `Matrix.layout`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from matrix.core.errors import ReportError
from matrix.core.expect import effective_versions, expectations
from matrix.core.finding import Finding, Severity
from matrix.core.model import CoverageLayout, Expectation, Matrix, Outcome, RunnerProfile
from matrix.core.report import CellStatus, FindingKind, Report, audit_finding, matrix_digest
from matrix.shard.output import PlannedShards


class Coverage(StrEnum):
    """What one runner did with one cell, over every report from that runner (worst first)."""

    CRASHED = "crashed"
    FAILED = "failed"
    SKIPPED_UNEXPECTED = "skipped-unexpected"
    NEVER_RAN = "never-ran"
    PASSED = "passed"
    SKIPPED_EXPECTED = "skipped-expected"


SEVERITY_ORDER = tuple(Coverage)  # worst first
_FROM_STATUS = {
    CellStatus.PASSED: Coverage.PASSED,
    CellStatus.FAILED: Coverage.FAILED,
    CellStatus.ERROR: Coverage.FAILED,
    CellStatus.SKIPPED_EXPECTED: Coverage.SKIPPED_EXPECTED,
    CellStatus.SKIPPED_UNEXPECTED: Coverage.SKIPPED_UNEXPECTED,
    CellStatus.CRASHED: Coverage.CRASHED,
}
# Findings a report states that this merge recomputes from the cells themselves.
_RECOMPUTED = {FindingKind.UNEXPECTED_SKIP, FindingKind.CRASHED, FindingKind.NOT_RUN, FindingKind.NEVER_RAN}


@dataclass(frozen=True, kw_only=True)
class ReportSource:
    """A parsed report and where it came from (a path, shown in findings)."""

    label: str
    report: Report


@dataclass(frozen=True, kw_only=True)
class CellCoverage:
    runner: str
    arch: str
    cell: str
    row: tuple[str, ...]  # the cell's values of the layout's row axes
    column: tuple[str, ...]  # ... and of its column axes
    expected: Outcome
    status: Coverage
    # The tests whose results on this runner gave `status` (node ids without the cell's parameters); none when no
    # result for the cell came from the runner.
    tests: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class CoverageResult:
    runners: tuple[str, ...]  # the profiles that count, in order
    layout: CoverageLayout
    entries: tuple[CellCoverage, ...]
    findings: tuple[Finding, ...]
    sources: tuple[ReportSource, ...]
    # What each counted runner was judged against: its profile and matrix.core.expect's verdict per cell id.
    profiles: Mapping[str, RunnerProfile] = field(default_factory=dict)
    expectations: Mapping[str, Mapping[str, Expectation]] = field(default_factory=dict)

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)


def arch_of(profile: RunnerProfile) -> str:
    return f"sm{profile.sm}" if profile.sm is not None else "cpu"


def _profile_for(report: Report, runners: Mapping[str, RunnerProfile]) -> RunnerProfile:
    known = runners.get(report.runner.name)
    if known is not None:
        return known
    # A runner defined in a file this merge was not given: judge it by what the report says it was.
    info = report.runner
    return RunnerProfile(name=info.name, gpus=info.gpus, capability=info.capability, labels=info.labels)


_SKIPPED = (CellStatus.SKIPPED_EXPECTED, CellStatus.SKIPPED_UNEXPECTED)


def _status_class(status: CellStatus, expected: Outcome) -> Coverage:
    """What one reported status means against the matrix's expectation. A skip's class is never taken from the
    report: a skip of a cell the matrix says must RUN is unexpected whatever the report calls it."""
    if status in _SKIPPED:
        return Coverage.SKIPPED_UNEXPECTED if expected is Outcome.RUN else Coverage.SKIPPED_EXPECTED
    return _FROM_STATUS.get(status, Coverage.NEVER_RAN if expected is Outcome.RUN else Coverage.SKIPPED_EXPECTED)


def _cell_status(results: Sequence[tuple[CellStatus, str]], expected: Outcome) -> tuple[Coverage, tuple[str, ...]]:
    """The worst class of a cell's results on one runner, and the tests whose results gave it."""
    mapped = [(_status_class(s, expected), test) for s, test in results]
    if not mapped:
        return (Coverage.NEVER_RAN if expected is Outcome.RUN else Coverage.SKIPPED_EXPECTED), ()
    worst = min((c for c, _ in mapped), key=SEVERITY_ORDER.index)
    return worst, tuple(dict.fromkeys(test for c, test in mapped if c is worst))


def bucket_label(layout: CoverageLayout, row: Sequence[str], column: Sequence[str]) -> str:
    """`trtllm_mha topk 4 page_size 16`: the row values as they are, each column value after its axis name."""
    return " ".join([*row, *(f"{axis} {value}" for axis, value in zip(layout.columns, column, strict=True))])


def _summarised(
    layout: CoverageLayout,
    kind: FindingKind,
    runner: str,
    test: str,
    entries: list[CellCoverage],
    *,
    what: str,
    elsewhere: str = "",
) -> Finding:
    """One finding per runner, test and bucket: the test is its subject, the runner its runner; with no test (no
    result for these cells came from the runner) the subject is the runner and bucket. No path: a file-level
    annotation would point at the test file's first line, not at the test."""
    bucket = bucket_label(layout, entries[0].row, entries[0].column)
    ids = [e.cell for e in entries]
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    noun = "cell" if len(ids) == 1 else "cells"
    found = audit_finding(
        kind=kind,
        subject=test or f"{runner}: {bucket}",
        message=f"{bucket} {what} on {runner}{f' in {test}' if test else ''}{elsewhere} ({len(ids)} {noun}: {shown})",
    )
    return replace(found, runners=(runner,))


def _cell_findings(layout: CoverageLayout, entries: Sequence[CellCoverage]) -> list[Finding]:
    ran_anywhere = {e.cell for e in entries if e.status in (Coverage.PASSED, Coverage.FAILED, Coverage.CRASHED)}
    grouped: defaultdict[tuple[Coverage, str, str, str], list[CellCoverage]] = defaultdict(list)
    for e in entries:
        for test in e.tests or ("",):
            grouped[(e.status, e.runner, bucket_label(layout, e.row, e.column), test)].append(e)
    findings: list[Finding] = []
    for (status, runner, _, test), group in sorted(grouped.items(), key=lambda kv: (SEVERITY_ORDER.index(kv[0][0]), kv[0][1:])):
        if status is Coverage.CRASHED:
            findings.append(_summarised(layout, FindingKind.CRASHED, runner, test, group, what="crashed"))
        elif status is Coverage.SKIPPED_UNEXPECTED:
            findings.append(_summarised(layout, FindingKind.UNEXPECTED_SKIP, runner, test, group, what="skipped unexpectedly"))
        elif status is Coverage.NEVER_RAN:
            nowhere = all(e.cell not in ran_anywhere for e in group)
            tail = " and on no other runner" if nowhere else " (some ran on other runners)"
            findings.append(
                _summarised(
                    layout, FindingKind.NEVER_RAN, runner, test, group, what="expected to RUN but never ran", elsewhere=tail
                )
            )
    return findings


def _shard_findings(sources: Sequence[ReportSource], planned: PlannedShards | None, expect_shards: int | None) -> list[Finding]:
    findings: list[Finding] = []
    if planned is not None:
        reported = {c.cell for s in sources if s.report.runner.name == planned.runner for c in s.report.cells}
        for index, cells in sorted(planned.shards.items()):
            if cells and not reported.intersection(cells):
                missing = audit_finding(
                    kind=FindingKind.MISSING_REPORT,
                    subject=f"shard {index}",
                    message=f"shard {index} of {len(planned.shards)} on {planned.runner} ({len(cells)} cells) has no report",
                )
                findings.append(replace(missing, runners=(planned.runner,)))
    if expect_shards is not None:
        labels = {s.report.shard or s.label for s in sources}
        if len(labels) < expect_shards:
            short = audit_finding(
                kind=FindingKind.MISSING_REPORT,
                subject="shards",
                message=f"expected {expect_shards} shard reports, found {len(labels)}",
            )
            findings.append(replace(short, runners=tuple(dict.fromkeys(s.report.runner.name for s in sources))))
    return findings


def _same_matrix(matrix: Matrix, sources: Sequence[ReportSource]) -> None:
    """A report planned from another matrix of the same name is refused: its cells would be judged by rules it was
    not run with. A report without a digest (written before reports kept one) is judged by this matrix alone."""
    digest = matrix_digest(matrix)
    for source in sources:
        if source.report.matrix_digest is not None and source.report.matrix_digest != digest:
            raise ReportError(
                f"{source.label}: planned from another matrix named {matrix.name!r} (its digest "
                f"{source.report.matrix_digest[:19]}, this one's {digest[:19]}); merge reports with the matrix they ran "
                "with (--matrix)"
            )


def merge(
    matrix: Matrix,
    runners: Mapping[str, RunnerProfile],
    sources: Sequence[ReportSource],
    *,
    expect_runners: Sequence[RunnerProfile] = (),
    planned: PlannedShards | None = None,
    expect_shards: int | None = None,
) -> CoverageResult:
    """Count every runner a report came from, plus `expect_runners` (and the plan's runner)."""
    _same_matrix(matrix, sources)
    profiles: dict[str, RunnerProfile] = {}
    versions: dict[str, dict[str, str]] = {}
    statuses: defaultdict[tuple[str, str], list[tuple[CellStatus, str]]] = defaultdict(list)
    for source in sources:
        profile = _profile_for(source.report, runners)
        profiles.setdefault(profile.name, profile)
        versions.setdefault(profile.name, effective_versions(matrix, source.report.versions))
        for result in source.report.cells:
            statuses[(profile.name, result.cell)].append((result.status, result.test))
    extra = list(expect_runners)
    if planned is not None and planned.runner in runners:
        extra.append(runners[planned.runner])
    for profile in extra:
        profiles.setdefault(profile.name, profile)
        versions.setdefault(profile.name, effective_versions(matrix, {}))
    entries: list[CellCoverage] = []
    layout = matrix.layout
    judged: dict[str, Mapping[str, Expectation]] = {}
    for name, profile in profiles.items():
        exps = judged[name] = expectations(matrix, profile, versions[name])
        for cell in matrix.cells:
            exp = exps[cell.id]
            status, tests = _cell_status(statuses.get((name, cell.id), []), exp.outcome)
            entries.append(
                CellCoverage(
                    runner=name,
                    arch=arch_of(profile),
                    cell=cell.id,
                    row=tuple(str(cell.get(a)) for a in layout.rows),
                    column=tuple(str(cell.get(a)) for a in layout.columns),
                    expected=exp.outcome,
                    status=status,
                    tests=tests,
                )
            )
    # A run's own findings name the runner they came from.
    carried = [
        replace(f, subject=f"{s.label}: {f.subject}", runners=f.runners or (s.report.runner.name,))
        for s in sources
        for f in s.report.findings
        if f.severity is Severity.ERROR and f.kind not in _RECOMPUTED
    ]
    findings = _shard_findings(sources, planned, expect_shards) + _cell_findings(layout, entries) + carried
    return CoverageResult(
        runners=tuple(profiles),
        layout=layout,
        entries=tuple(entries),
        findings=tuple(findings),
        sources=tuple(sources),
        profiles=profiles,
        expectations=judged,
    )
