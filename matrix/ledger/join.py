"""Join what ran (ledger processes) with what is registered, per runner profile; pure."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from matrix.audit.findings import AllowEntry
from matrix.core.baseline import Baseline, BaselineEntry, key_fingerprint
from matrix.core.errors import EXIT_FINDINGS, EXIT_OK, DetectionError, SpecmatrixError
from matrix.core.finding import Finding, Tool
from matrix.core.machine import MachineFacts, auto_runner, differences, find_runner
from matrix.core.profile import RunnerProfile
from matrix.guards.model import GuardFindingKind
from matrix.ledger.records import BadLine, Process, RunnerSeen, TestRecord, TestStatus
from matrix.ledger.registered import RegisteredFile, SuiteView

SILENT_SKIP_KIND = GuardFindingKind.SILENT_SKIP.value
RAN = frozenset({TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.XFAILED, TestStatus.XPASSED})


class LedgerFindingKind(StrEnum):
    SILENT_SKIP = "silent-skip"
    NEVER_EXECUTED = "never-executed"
    RAN_NOTHING = "ran-nothing"
    NO_EXIT = "no-exit"
    LOST_RECORDS = "lost-records"
    SETTLED = "settled"
    NOT_SERVED = "not-served"
    NO_RUNNER = "no-runner"
    BAD_LINE = "bad-line"


# What each kind means and whether it fails: matrix/core/kinds.py. Reports list the kinds in this order.
ORDER = {kind.value: i for i, kind in enumerate(LedgerFindingKind)}


def ledger_finding(
    *,
    kind: LedgerFindingKind,
    message: str,
    path: str = "",
    line: int = 0,
    test: str = "",
    runner: str = "",
    detail: str = "",
    accepted_by: str = "",
    evidence: str = "",
) -> Finding:
    """A ledger finding in the core record: `test` is its subject (the file itself for a whole-file finding), `runner`
    its one runner, `detail` the static audit's word on it, `evidence` the ledger line it was read from."""
    return Finding(
        tool=Tool.LEDGER,
        kind=kind.value,
        subject=test,
        message=message,
        path=path,
        line=line,
        runners=(runner,) if runner else (),
        detail=detail,
        accepted_by=accepted_by,
        evidence=evidence,
    )


@dataclass(frozen=True, kw_only=True)
class RunnerSummary:
    runner: str
    registered: int
    executed: int
    statuses: Mapping[str, int]


@dataclass(frozen=True, kw_only=True)
class LedgerReport:
    root: str
    ledgers: tuple[str, ...]
    runners: tuple[RunnerSummary, ...]
    findings: tuple[Finding, ...]
    processes: int
    records: int

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.failing)

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.failing else EXIT_OK

    def of_kind(self, kind: LedgerFindingKind) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == kind.value)


@dataclass(frozen=True, kw_only=True)
class JoinSettings:
    runners: Mapping[str, RunnerProfile]
    forced_runner: str | None = None  # --runner NAME; None means auto (from each process's recorded machine)
    allow: tuple[AllowEntry, ...] = ()
    baseline: Baseline = field(default_factory=lambda: Baseline(entries=()))
    today: dt.date = field(default_factory=dt.date.today)
    partial: bool = False


class RunnerMismatchError(SpecmatrixError):
    """A ledger says its tests ran on a machine the claimed runner profile does not describe."""


def machine_of(seen: RunnerSeen) -> MachineFacts | None:
    if seen.gpus is None:
        return None
    caps = (seen.capability,) * seen.gpus if seen.capability and seen.gpus else ()
    names = (seen.name,) * seen.gpus if seen.name and seen.gpus else ()
    return MachineFacts(gpus=seen.gpus, capabilities=caps, names=names)


def runner_of(process: Process, settings: JoinSettings) -> str | None:
    """The profile a process ran on: the forced one (checked against what it saw) or the one its machine fits."""
    facts = machine_of(process.runner)
    if settings.forced_runner is not None:
        profile = find_runner(settings.runners, settings.forced_runner)
        gaps = differences(profile, facts) if facts is not None else []
        if gaps:
            raise RunnerMismatchError(
                f"{process.where}: --runner {profile.name} claimed, but the process recorded {process.runner.describe()}: "
                + "; ".join(gaps)
            )
        return profile.name
    if facts is None:
        return None
    try:
        return auto_runner(settings.runners, facts).name
    except DetectionError as exc:
        raise DetectionError(f"{process.where}: {exc} (or name the profile with --runner)") from None


class _PathIndex:
    """Matches a path recorded relative to the ledger's root to a registered path relative to the suite root."""

    def __init__(self, files: Sequence[RegisteredFile]) -> None:
        self.by_name: dict[str, list[RegisteredFile]] = {}
        for f in files:
            self.by_name.setdefault(f.path.rpartition("/")[2], []).append(f)

    def find(self, recorded: str) -> RegisteredFile | None:
        recorded = recorded.replace("\\", "/")
        candidates = self.by_name.get(recorded.rpartition("/")[2], [])
        hits = [f for f in candidates if recorded == f.path or recorded.endswith("/" + f.path)]
        return max(hits, key=lambda f: len(f.path)) if hits else None


def _rebase(test: str, recorded_file: str, path: str) -> str:
    """A test id recorded against the ledger's path, re-rooted on the registered path."""
    return path + test[len(recorded_file) :] if test.startswith(recorded_file) else test


def _chain(test: str) -> list[str]:
    parts = test.split("::")
    return ["::".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass
class _FileRun:
    processes: list[Process] = field(default_factory=list)
    tests: dict[str, list[TestRecord]] = field(default_factory=dict)


def join(
    suite: SuiteView,
    processes: Sequence[Process],
    bad_lines: Sequence[BadLine],
    settings: JoinSettings,
    ledgers: Sequence[str] = (),
) -> LedgerReport:
    """Findings for every registered file on every runner the ledgers (or --runner) name."""
    index = _PathIndex(suite.files)
    findings: list[Finding] = []
    runs: dict[tuple[str, str], _FileRun] = {}
    in_play: list[str] = [settings.forced_runner] if settings.forced_runner else []
    unattributed: Counter[str] = Counter()
    unserved: dict[tuple[str, str], RegisteredFile] = {}  # registered files that ran on a runner serving none of their suites
    for process in processes:
        runner = runner_of(process, settings)
        if runner is None:
            unattributed[process.runner.describe()] += 1
            continue
        if runner not in in_play:
            in_play.append(runner)
        # A process belongs to its script's file and to every file its test records name: one whose process line
        # is missing, cut or corrupt (no script), or a pytest process (its script is pytest), is still judged for
        # its exit where its tests ran.
        owners: dict[str, None] = {}
        script_file = index.find(process.script)
        if script_file is not None:
            if runner not in script_file.runners:
                unserved.setdefault((runner, script_file.path), script_file)
            owners[script_file.path] = None
        for record in process.tests:
            file = index.find(record.file)
            if file is None:
                continue
            if runner not in file.runners:
                unserved.setdefault((runner, file.path), file)
            owners[file.path] = None
            test = _rebase(record.test, record.file, file.path)
            runs.setdefault((runner, file.path), _FileRun()).tests.setdefault(test, []).append(record)
        for path in owners:
            runs.setdefault((runner, path), _FileRun()).processes.append(process)
    for described, count in unattributed.items():
        findings.append(
            ledger_finding(
                kind=LedgerFindingKind.NO_RUNNER,
                message=f"{count} process(es) recorded no runner facts ({described}); their records are not judged. "
                "Set SPECMATRIX_DETECT on the test step or pass --runner",
            )
        )
    findings.extend(_not_served(file, runner, settings) for (runner, _), file in sorted(unserved.items()))
    static_by_scope: dict[tuple[str, str], list[Finding]] = {}
    for finding in suite.static:
        for runner in finding.runners:
            static_by_scope.setdefault((runner, finding.scope), []).append(finding)
    summaries: list[RunnerSummary] = []
    ordered = [name for name in settings.runners if name in in_play]
    for runner in ordered:
        mine = [f for f in suite.files if runner in f.runners]
        statuses: Counter[str] = Counter()
        executed = 0
        for file in mine:
            run = runs.get((runner, file.path))
            if run is None:
                if not settings.partial:
                    findings.append(_never_executed(file, runner))
                continue
            executed += 1
            for records in run.tests.values():
                statuses[_final(records).value] += 1
            findings.extend(_file_findings(file, runner, run, static_by_scope, settings))
        findings.extend(_settled(runner, runs, static_by_scope))
        summaries.append(RunnerSummary(runner=runner, registered=len(mine), executed=executed, statuses=dict(statuses)))
    findings.extend(ledger_finding(kind=LedgerFindingKind.BAD_LINE, message=f"{b.where}: {b.problem}") for b in bad_lines)
    findings.sort(key=lambda f: (not f.failing, ORDER[f.kind], f.runners, f.path, f.subject))
    return LedgerReport(
        root=suite.root,
        ledgers=tuple(ledgers),
        runners=tuple(summaries),
        findings=tuple(findings),
        processes=len(processes),
        records=sum(len(p.tests) + 1 + (p.exit is not None) for p in processes),
    )


def _not_served(file: RegisteredFile, runner: str, settings: JoinSettings) -> Finding:
    """A registered file that ran on a runner whose profile serves none of its suites: its outcomes there judge
    nothing about the suite it is registered for (wrong --runner, wrong job, or a suite map that misses the job)."""
    return ledger_finding(
        kind=LedgerFindingKind.NOT_SERVED,
        path=file.path,
        line=file.line,
        test=file.path,
        runner=runner,
        message=f"ran on {runner}, which serves none of its suites ({', '.join(file.suites) or 'none'}; registered for "
        f"{', '.join(file.runners)}): its outcomes are not judged",
        accepted_by="--partial (the ledgers cover a part of the jobs)" if settings.partial else "",
    )


def _final(records: Sequence[TestRecord]) -> TestStatus:
    """A test counts as run when any attempt ran it; otherwise it skipped."""
    ran = [r.status for r in records if r.status in RAN]
    if not ran:
        return TestStatus.SKIPPED
    for status in (TestStatus.ERROR, TestStatus.FAILED, TestStatus.XPASSED, TestStatus.XFAILED):
        if status in ran:
            return status
    return TestStatus.PASSED


def _never_executed(file: RegisteredFile, runner: str) -> Finding:
    return ledger_finding(
        kind=LedgerFindingKind.NEVER_EXECUTED,
        path=file.path,
        line=file.line,
        test=file.path,
        runner=runner,
        message=f"registered for {', '.join(file.suites)} (served by {runner}) but no process on {runner} left a record for it",
    )


def _static_note(runner: str, test: str, static_by_scope: Mapping[tuple[str, str], list[Finding]]) -> tuple[str, int]:
    for scope in reversed(_chain(test)):
        for finding in static_by_scope.get((runner, scope), []):
            return f"static: {finding.kind} ({finding.source or finding.message})", finding.line
    return "", 0


def _file_findings(
    file: RegisteredFile,
    runner: str,
    run: _FileRun,
    static_by_scope: Mapping[tuple[str, str], list[Finding]],
    settings: JoinSettings,
) -> list[Finding]:
    out: list[Finding] = []
    baseline = {e.fingerprint: e for e in settings.baseline.entries if e.kind == SILENT_SKIP_KIND and e.runner == runner}
    for test, records in sorted(run.tests.items()):
        if _final(records) is not TestStatus.SKIPPED:
            continue
        reason = records[-1].reason
        static, line = _static_note(runner, test, static_by_scope)
        out.append(
            ledger_finding(
                kind=LedgerFindingKind.SILENT_SKIP,
                path=file.path,
                line=line or file.line,
                test=test,
                runner=runner,
                message=f"skipped at runtime on {runner}: {reason!r}" if reason else f"skipped at runtime on {runner}",
                detail=static,
                accepted_by=_accepted(
                    path=file.path, test=test, runner=runner, reason=reason, baseline=baseline, settings=settings
                ),
                evidence=str(records[-1].where),
            )
        )
    ran_tests = bool(run.tests)
    for process in run.processes:
        if process.exit is None:
            out.append(
                ledger_finding(
                    kind=LedgerFindingKind.NO_EXIT,
                    path=file.path,
                    line=file.line,
                    test=file.path,
                    runner=runner,
                    message=f"process {process.pid} started ({process.where}) and never recorded its exit: killed or crashed "
                    f"after {len(process.tests)} test outcome(s)",
                    evidence=str(process.where),
                )
            )
        elif process.exit.tests > len(process.tests):
            # The process counted more outcomes than the ledger holds: lines were cut, edited or unreadable, and a
            # skip among them would otherwise vanish from the verdict.
            out.append(
                ledger_finding(
                    kind=LedgerFindingKind.LOST_RECORDS,
                    path=file.path,
                    line=file.line,
                    test=file.path,
                    runner=runner,
                    message=f"process {process.pid} recorded {process.exit.tests} test outcome(s) at exit, but only "
                    f"{len(process.tests)} are readable in the ledger",
                    evidence=str(process.exit.where),
                )
            )
    exits = [p.exit for p in run.processes]
    if run.processes and not ran_tests and all(e is not None and e.status == 0 and e.tests == 0 for e in exits):
        last = run.processes[-1]
        out.append(
            ledger_finding(
                kind=LedgerFindingKind.RAN_NOTHING,
                path=file.path,
                line=file.line,
                test=file.path,
                runner=runner,
                message=f"process {last.pid} exited 0 ({last.exit.how if last.exit else '?'}) without running a single test",
                evidence=str(last.where),
            )
        )
    return out


def _accepted(
    *, path: str, test: str, runner: str, reason: str, baseline: Mapping[str, BaselineEntry], settings: JoinSettings
) -> str:
    for entry in settings.allow:
        if entry.expires >= settings.today and entry.covers(test, reason):
            return f"allowlist {entry.label} until {entry.expires.isoformat()}"
    for scope in _chain(test):
        found = baseline.get(key_fingerprint((path, scope, SILENT_SKIP_KIND, runner)))
        if found is not None and not found.expired(settings.today):
            return f"baseline entry for {scope}" + (f": {found.reason}" if found.reason else "")
    return ""


def _settled(
    runner: str, runs: Mapping[tuple[str, str], _FileRun], static_by_scope: Mapping[tuple[str, str], list[Finding]]
) -> list[Finding]:
    """Each static `undetermined` guard on this runner, with what the tests under its scope did at runtime."""
    out: list[Finding] = []
    for (name, scope), static in sorted(static_by_scope.items()):
        if name != runner:
            continue
        for finding in static:
            if finding.kind != GuardFindingKind.UNDETERMINED:
                continue
            run = runs.get((runner, finding.path))
            under = {t: r for t, r in (run.tests.items() if run else ()) if t == scope or t.startswith(scope + "::")}
            outcome = Counter(_final(r).value for r in under.values())
            if not under:
                what = "no record of its tests"
            elif outcome.get("skipped"):
                reasons = sorted({r[-1].reason for r in under.values() if _final(r) is TestStatus.SKIPPED})
                what = "skipped " + ", ".join(repr(x) for x in reasons[:3])
            else:
                what = "ran (" + ", ".join(f"{n} {s}" for s, n in sorted(outcome.items())) + ")"
            out.append(
                ledger_finding(
                    kind=LedgerFindingKind.SETTLED,
                    path=finding.path,
                    line=finding.line,
                    test=scope,
                    runner=runner,
                    message=f"static: undetermined ({finding.source}); runtime on {runner}: {what}",
                    detail=f"static reason: {finding.message}" if finding.message else "",
                )
            )
    return out
