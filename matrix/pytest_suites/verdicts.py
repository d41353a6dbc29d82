"""What the pytest audit says about one test or file, worded for its case: the findings it files; pure.

Each finding's reason and fix speak of the case at hand: a guard that reads a runner fact (schedule it on a
runner the guard admits), a deliberate unconditional skip (a `disabled-by-skip` warning, as `guards` calls it:
`matrix.core.kinds.DELIBERATE_SKIP`), a test the CI commands deselect (`-k`, `-m`, `--deselect`, node ids), a
test a conftest hook skips unless an option or variable no job gives is set (an opt-in). Runners are named once
per finding, in its `runners`; the reason does not repeat them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from matrix.core.finding import Finding, Tool
from matrix.core.kinds import DELIBERATE_SKIP
from matrix.guards.evaluation import Evaluation, Tri
from matrix.guards.model import GuardFindingKind, guard_finding
from matrix.pytest_suites.collect import AppliedGuard, TestItem
from matrix.pytest_suites.packs import GuardClass
from matrix.pytest_suites.select import Deselected
from matrix.pytest_suites.undetermined import Cause, UndeterminedTest, bounded, unread_reason
from matrix.schedule.model import UnreadJob

# The fix for a test that skips on every runner it is sent to, by the kind of fact its guard read.
_SKIP_HINTS = {
    GuardClass.CAPABILITY: "schedule it on a runner whose GPU the guard admits, or drop it from the schedule",
    GuardClass.GPU_COUNT: "schedule it on a runner with as many GPUs as the guard asks for, or drop it from the schedule",
    GuardClass.CUDA_VERSION: "schedule it on a runner whose CUDA version the guard admits, or drop it from the schedule",
    GuardClass.PLATFORM: "schedule it on a runner of the platform the guard admits, or drop it from the schedule",
    GuardClass.ENVIRONMENT: "set the variable the guard reads in a job that runs it, or drop it from the schedule",
    GuardClass.INSTALL: "install what the guard imports in a job that runs it (or pass --assume-installed when the job "
    "does), or drop it from the schedule",
    GuardClass.OPTION: "pass the option in a CI job that runs it, or drop the test",
}
_DEFAULT_HINT = "schedule it on a runner where the guard is false, or drop it from the schedule"
DELIBERATE_HINT = (
    "it skips on every machine: a disabled test (remove the skip, or the test, once it should run again) or a "
    "parameter case the test excludes (drop the case from its parametrization)"
)
_DESELECTED_HINT = "drop the deselection from a CI command that should run it, or delete the test"


@dataclass(frozen=True, kw_only=True)
class PytestFinding:
    finding: Finding
    guard_class: GuardClass


@dataclass(frozen=True, kw_only=True)
class SkipVerdict:
    """Whether a test skips on one runner, the guard that decided it, and, when that is unknown, why."""

    profile: str
    skips: Tri
    guard: AppliedGuard | None = None
    evaluation: Evaluation | None = None
    why: str = ""
    cause: Cause = Cause.GUARD


GuardClassOf = Callable[[AppliedGuard, Evaluation], GuardClass]


def skip_kind(guard_class: GuardClass, kind: GuardFindingKind) -> GuardFindingKind:
    """The kind a test that skips everywhere is filed under: a deliberate unconditional skip is the one kind
    every audit calls it (a warning), whatever the audit would call another skip."""
    if kind is GuardFindingKind.SILENT_SKIP and guard_class is GuardClass.UNCONDITIONAL:
        return GuardFindingKind(DELIBERATE_SKIP)
    return kind


def skip_finding(
    item: TestItem,
    verdicts: Sequence[SkipVerdict],
    class_of: GuardClassOf,
    kind: GuardFindingKind = GuardFindingKind.SILENT_SKIP,
    *,
    where: str = "on every runner CI sends it to",
) -> PytestFinding:
    """A test that skips (or returns early) on every runner of `verdicts`, worded for the fact that decided it."""
    first = verdicts[0]
    assert first.guard is not None and first.evaluation is not None
    runners = tuple(sorted({v.profile for v in verdicts}))
    classes = [class_of(v.guard, v.evaluation) for v in verdicts if v.guard and v.evaluation]
    guard_class = min(classes, key=list(GuardClass).index)
    via = f" (through {first.guard.via})" if first.guard.via else ""
    steps = "; ".join(shown_steps(first.evaluation.steps[:4]))
    kind = skip_kind(guard_class, kind)
    if kind is GuardFindingKind.SILENT_SKIP and (first.guard.deselects or _opted_out(first.guard, guard_class)):
        kind = GuardFindingKind.NEVER_RUNS
    if first.guard.deselects:
        reason = f"{guard_class.value}: a conftest hook deselects it {where}: {steps or 'unconditionally'}"
        hint = DELIBERATE_HINT if kind.value == DELIBERATE_SKIP else _SKIP_HINTS.get(guard_class, _DESELECTED_HINT)
    elif kind is GuardFindingKind.SILENT_PASS:
        reason = f"{guard_class.value}: returns early, testing nothing, {where}: {steps}"
        hint = "skip visibly (pytest.skip) instead of returning, or schedule it on a runner where it does not return"
    elif kind.value == DELIBERATE_SKIP:
        reason = f"skipped unconditionally, on every machine: {steps or 'an unconditional skip'}"
        hint = DELIBERATE_HINT
    elif kind is GuardFindingKind.NEVER_RUNS:  # an opt-in no job opts into
        reason = (
            f"{guard_class.value}: a conftest hook skips it unless it is opted into, which no CI job that runs it does: {steps}"
        )
        hint = _SKIP_HINTS[GuardClass.OPTION] if guard_class is GuardClass.OPTION else _SKIP_HINTS[GuardClass.ENVIRONMENT]
    else:
        reason = f"{guard_class.value}: skips {where}: {steps}"
        hint = _SKIP_HINTS.get(guard_class, _DEFAULT_HINT)
    finding = guard_finding(
        kind,
        path=item.path,
        line=item.line,
        test=item.nodeid,
        runners=runners,
        guard=first.guard.guard.source + via,
        reason=reason,
        hint=hint,
        tool=Tool.PYTEST_AUDIT,
    )
    return PytestFinding(finding=finding, guard_class=guard_class)


def _opted_out(guard: AppliedGuard, guard_class: GuardClass) -> bool:
    """A conftest hook that skips the test unless a command-line option or a variable is given: an opt-in (pytest's
    docs: "Control skipping of tests according to command line option"), not a guard to fix by scheduling."""
    # Read from a hook (a condition declared in a schedule file's `[markers]` describes one, but is no reading of it).
    read = not guard.guard.source.startswith("declared: ")
    hook = read and (guard.via.startswith("marker ") or guard.via == "a conftest hook")
    return guard_class is GuardClass.OPTION or (hook and guard_class is GuardClass.ENVIRONMENT)


def shown_steps(steps: Sequence[str]) -> list[str]:
    """Evaluation steps as a finding shows them: an option read is named as written (`config.getoption('--x')`)."""
    return [s.replace("')() is ", "') is ") for s in steps]


def deselected_finding(item: TestItem, dropped: Sequence[Deselected]) -> PytestFinding:
    """A test every CI command that collects its file leaves out (per test: its file runs)."""
    whys = list(dict.fromkeys(f"{d.entry.origin}: {d.why}" for d in dropped))
    shown = "; ".join(whys[:3]) + (f"; and {len(whys) - 3} more" if len(whys) > 3 else "")
    # A runner no profile describes is named as its labels are (the deselection holds there too).
    runners = tuple(sorted({p for d in dropped for p in d.entry.profiles or (", ".join(d.entry.labels),) if p}))
    finding = guard_finding(
        GuardFindingKind.NEVER_RUNS,
        path=item.path,
        line=item.line,
        test=item.nodeid,
        runners=runners,
        reason=f"deselected by every CI command that collects its file ({shown})",
        hint=_DESELECTED_HINT,
        tool=Tool.PYTEST_AUDIT,
    )
    return PytestFinding(finding=finding, guard_class=GuardClass.SELECTION)


def unread_never_finding(item: TestItem, verdicts: Sequence[SkipVerdict], class_of: GuardClassOf, jobs: int) -> PytestFinding:
    """A test whose guard skips on every runner any CI job can send it to, though which job runs it is not read."""
    where = f"on every runner any CI job can send it to ({jobs} job(s) that may run it are not read, their runners are known)"
    found = skip_finding(item, verdicts, class_of, where=where)
    if found.finding.kind != GuardFindingKind.SILENT_SKIP.value:
        return found  # a deliberate skip stays a warning
    never = guard_finding(
        GuardFindingKind.NEVER_RUNS,
        path=item.path,
        line=item.line,
        test=item.nodeid,
        runners=found.finding.runners,
        guard=found.finding.source,
        reason=found.finding.message,
        hint=found.finding.hint,
        tool=Tool.PYTEST_AUDIT,
    )
    return PytestFinding(finding=never, guard_class=found.guard_class)


# The fix for a finding about a whole file, by its kind (a file that never runs: by what keeps it from running).
_FILE_HINTS = {
    GuardFindingKind.UNSCHEDULED: "add the file to what a CI job runs (its pytest paths), or delete it",
    GuardFindingKind.UNPARSABLE: "fix the syntax error or the encoding: pytest stops on it",
}


def file_finding(
    kind: GuardFindingKind, path: str, reason: str, guard_class: GuardClass, runners: tuple[str, ...] = (), *, hint: str = ""
) -> PytestFinding:
    finding = guard_finding(
        kind,
        path=path,
        line=1,
        test=path,
        runners=runners,
        reason=reason,
        hint=hint or _FILE_HINTS.get(kind, ""),
        tool=Tool.PYTEST_AUDIT,
    )
    return PytestFinding(finding=finding, guard_class=guard_class)


def file_never_runs(path: str, never: Sequence[PytestFinding], scheduled: int, tests: int) -> PytestFinding | None:
    """The file-level finding when none of its tests runs in this CI (each one's own finding says why); None when
    every one of them is a deliberate skip (their warnings say it)."""
    failing = [f for f in never if f.finding.kind != DELIBERATE_SKIP]
    if not failing:
        return None
    counts: dict[GuardClass, int] = {}
    for f in failing:
        counts[f.guard_class] = counts.get(f.guard_class, 0) + 1
    top = max(counts, key=lambda c: (counts[c], -list(GuardClass).index(c)))
    runners = tuple(sorted({r for f in never for r in f.finding.runners}))
    skipping = sum(1 for f in never if f.finding.kind != GuardFindingKind.NEVER_RUNS.value)
    if skipping == len(never) == scheduled:
        reason = f"all {scheduled} scheduled tests skip on every runner they are sent to"
    else:
        left_out = sum(1 for f in never if f.guard_class is GuardClass.SELECTION)
        parts = [
            f"{skipping} skip on every runner they are sent to" if skipping else "",
            f"{left_out} are deselected by every CI command that collects the file" if left_out else "",
            f"{len(never) - skipping - left_out} never run on any runner CI may send them to"
            if len(never) - skipping - left_out
            else "",
        ]
        reason = f"none of its {tests} tests runs in this CI: " + ", ".join(p for p in parts if p)
    hint = (
        _DESELECTED_HINT if top is GuardClass.SELECTION else _SKIP_HINTS.get(top, _DEFAULT_HINT).replace(" it ", " the file ", 1)
    )
    return file_finding(GuardFindingKind.NEVER_RUNS, path, reason, top, runners, hint=hint)


def undetermined_of(item: TestItem, verdicts: Sequence[SkipVerdict]) -> UndeterminedTest:
    """An undetermined test, with the doubt of the first runner whose verdict is unknown."""
    unknown = next(v for v in verdicts if v.skips is Tri.UNKNOWN)
    runner = unknown.profile if unknown.cause in (Cause.GUARD, Cause.NO_PROFILE) else None
    return UndeterminedTest(
        test=item.nodeid,
        path=item.path,
        line=item.line,
        runner=runner,
        reason=unknown.why or "not decided",
        cause=unknown.cause,
        runners=tuple(dict.fromkeys(v.profile for v in verdicts if v.skips is Tri.UNKNOWN)),
    )


def undetermined_unread(item: TestItem, unread: Sequence[UnreadJob]) -> UndeterminedTest:
    """A test that only CI jobs not read may run."""
    reason = unread_reason([f"{u.origin}: {u.reason}" for u in unread])
    return UndeterminedTest(test=item.nodeid, path=item.path, line=item.line, runner=None, reason=reason, cause=Cause.UNREAD)


def undetermined_elsewhere(item: TestItem, job: UnreadJob, runner: str) -> UndeterminedTest:
    """A test that skips on every runner the entries read send it to, while a CI job not read may run it on a runner
    where it is not shown to skip (`runner`; "" when the job's runners are not read)."""
    where = f"on {runner}, where it is not shown to skip" if runner else "on runners that are not read"
    reason = bounded(
        f"skips on every runner of the entries read, but a CI job not read may run it {where} ({job.origin}: {job.reason})"
    )
    return UndeterminedTest(
        test=item.nodeid,
        path=item.path,
        line=item.line,
        runner=runner or None,
        reason=reason,
        cause=Cause.UNREAD,
        runners=(runner,) if runner else (),
    )
