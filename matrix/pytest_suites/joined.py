"""The join of the static audit with the runs CI made: each test's verdict on a runner beside what the runner's
JUnit XML says it did; pure but for reading the files (`read_runs`).

For each test and each runner given a run: **confirmed** (the run agrees with a certain verdict), **contradicted**
(a certain verdict the run refutes, a `contradicted-by-run` warning naming the guard the audit read and the skip
message the run gave; a test the schedule as read does not send to that runner but whose run holds it is one too),
**resolved** (an undetermined verdict the run decides, `resolved-by-run`), **absent** (scheduled there, missing
from the run: `absent-from-run`), or not judged (its file did not collect in the run). Across runners, a test that
skipped in every run given for it, and is sent to no runner without a run, is `skipped-in-every-run` (an error:
the runtime form of `silent-skip`); a testcase that is no test static collection found is `not-collected`.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from matrix.core.errors import ReportError, UsageError
from matrix.core.finding import Finding, Tool
from matrix.pytest_suites.audit import ItemOutcome, ItemVerdicts, RunnerVerdict
from matrix.pytest_suites.junit_names import NodeIndex
from matrix.pytest_suites.junit_runs import Observed, RunCase, RunFile, junit_files, read_junit
from matrix.pytest_suites.packs import GuardClass
from matrix.pytest_suites.verdicts import PytestFinding
from matrix.schedule.model import Schedule

ABSENT = "absent"  # the observed outcome of a test a run does not hold
MAX_MESSAGES = 3  # distinct skip messages kept per test and runner


class JoinKind(StrEnum):
    """The kinds of finding the join reports (matrix/core/kinds.py, tool `pytest-audit`)."""

    SKIPPED_IN_EVERY_RUN = "skipped-in-every-run"
    CONTRADICTED = "contradicted-by-run"
    NOT_COLLECTED = "not-collected"
    ABSENT = "absent-from-run"
    RESOLVED = "resolved-by-run"


class Outcome(StrEnum):
    """What the join says of one test on one runner."""

    CONFIRMED = "confirmed"
    CONTRADICTED = "contradicted"
    RESOLVED = "resolved"
    ABSENT = "absent"
    NOT_JUDGED = "not-judged"  # its file did not collect in the run: it neither ran nor skipped
    NOT_COLLECTED = "not-collected"  # in the run, not among the tests static collection found


@dataclass(frozen=True, kw_only=True)
class RunInput:
    """One `--junit RUNNER=PATH`: the runner the files came from and the files read from PATH."""

    runner: str
    path: str
    files: tuple[RunFile, ...]


@dataclass(frozen=True, kw_only=True)
class JoinRow:
    """One test on one runner: the static verdict beside the observed outcome."""

    test: str
    path: str
    line: int
    runner: str
    static: str  # an `ItemOutcome` value, or "not collected"
    observed: str  # an `Observed` value, or `ABSENT`
    message: str  # the run's skip (or failure) messages
    outcome: Outcome
    guard: str = ""


@dataclass(frozen=True, kw_only=True)
class JoinResult:
    inputs: tuple[RunInput, ...]
    rows: tuple[JoinRow, ...]
    findings: tuple[PytestFinding, ...]
    matched: Mapping[str, int] = field(default_factory=dict)  # per file: testcases that are tests of the tree
    offsets: Mapping[str, str] = field(default_factory=dict)  # per file: how its names were mapped (when they were)

    def counts(self, runner: str | None = None) -> dict[str, int]:
        """Tests per join outcome (all runners, or one), and the tests that skipped in every run."""
        found = Counter(r.outcome for r in self.rows if runner is None or r.runner == runner)
        everywhere = [f for f in self.findings if f.finding.kind == JoinKind.SKIPPED_IN_EVERY_RUN]
        skipped = sum(1 for f in everywhere if runner is None or runner in f.finding.runners)
        head = {o.value: found[o] for o in (Outcome.CONFIRMED, Outcome.CONTRADICTED, Outcome.RESOLVED)}
        return {
            **head,
            JoinKind.SKIPPED_IN_EVERY_RUN.value: skipped,
            **{o.value: found[o] for o in Outcome if o.value not in head},
        }


# --- reading the runs --------------------------------------------------------------------------------------------


def parse_junit_option(value: str) -> tuple[str, Path]:
    """`RUNNER=PATH` as `--junit` takes it."""
    runner, sep, path = value.partition("=")
    if not sep or not runner.strip() or not path.strip():
        raise UsageError(f"--junit {value!r}: expected RUNNER=PATH (a runner label or profile, then a JUnit file or folder)")
    return runner.strip(), Path(path)


def read_runs(pairs: Sequence[tuple[str, Path]]) -> tuple[RunInput, ...]:
    """Every JUnit file of every `--junit` (a folder gives its *.xml files); the same file twice is read once."""
    seen: set[Path] = set()
    out = []
    for runner, path in pairs:
        files = []
        for found in junit_files(path):
            key = found.resolve()
            if key in seen:
                continue
            seen.add(key)
            files.append(read_junit(found))
        out.append(RunInput(runner=runner, path=str(path), files=tuple(files)))
    return tuple(out)


def runner_names(schedule: Schedule) -> set[str]:
    """Every name a run's runner may be given by: the profiles, runs-on labels and known runners of pytest entries."""
    names: set[str] = set()
    for entry in schedule.pytest_entries():
        names.update(entry.profiles, entry.labels, entry.other_runners)
    return names


def check_runners(join: Sequence[str], schedule: Schedule) -> None:
    """Each runner of `--junit` must be one the schedule sends pytest to: a run from elsewhere cannot be judged."""
    known = runner_names(schedule)
    for runner in join:
        if runner not in known:
            near = difflib.get_close_matches(runner, sorted(known), n=3)
            hint = f"did you mean {', '.join(near)}? " if near else ""
            listed = ", ".join(sorted(known)[:12]) + (" ..." if len(known) > 12 else "")
            raise UsageError(
                f"--junit {runner}=...: no CI entry read runs pytest on runner {runner!r} ({hint}profiles and runs-on "
                f"labels of the schedule: {listed or 'none'})"
            )


# --- the join ------------------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class _Seen:
    """What one runner's runs say of one test: a test that ran in any case or job ran (the worst of how: failed,
    error, xpassed, xfailed, passed); one that only skipped skipped; else its file did not collect."""

    observed: Observed = Observed.COLLECTION_ERROR
    messages: list[str] = field(default_factory=list)

    def add(self, case: RunCase) -> None:
        if _RANK[case.observed] < _RANK[self.observed]:
            self.observed = case.observed
        if case.message and len(self.messages) < MAX_MESSAGES and case.message not in self.messages:
            self.messages.append(case.message)

    @property
    def message(self) -> str:
        return "; ".join(self.messages)


_RANK = {
    o: k
    for k, o in enumerate(
        (
            Observed.FAILED,
            Observed.ERROR,
            Observed.XPASSED,
            Observed.XFAILED,
            Observed.PASSED,
            Observed.SKIPPED,
            Observed.COLLECTION_ERROR,
        )
    )
}


def join_runs(verdicts: Sequence[ItemVerdicts], inputs: Sequence[RunInput], runners: Sequence[str]) -> JoinResult:
    """Join `inputs` with the static verdicts (`runners`: the order of each test's verdicts). A file of testcases
    none of which is a test of the tree is refused (one line): it is from another checkout, or named wrongly."""
    index = NodeIndex((t.nodeid, t.path) for t in verdicts)
    seen: dict[tuple[str, str], _Seen] = defaultdict(_Seen)
    strays: dict[tuple[str, str], tuple[str, RunCase, _Seen]] = {}  # (node id, runner) -> path, first case, outcomes
    matched: dict[str, int] = {}
    offsets: dict[str, str] = {}
    for run in inputs:
        for file in run.files:
            found = 0
            for number in range(len(file.suites) or 1):
                cases = [c for c in file.cases if c.suite == number]
                offset = index.offset(cases)
                if offset.said:
                    offsets[file.path] = offset.said
                for case in cases:
                    tests = index.locate(case, offset)
                    found += bool(tests)
                    for nodeid in tests:
                        seen[(nodeid, run.runner)].add(case)
                    if not tests:
                        nodeid, path = index.node_id(case, offset)
                        stray = strays.setdefault((nodeid, run.runner), (path, case, _Seen()))
                        stray[2].add(case)
            if file.cases and not found:
                first = file.cases[0]
                raise ReportError(
                    f"{file.path} (--junit {run.runner}): none of its {len(file.cases)} testcases is a test collected "
                    f"from this checkout (first: classname {first.classname[:80]!r}, name {first.name[:80]!r}); "
                    "is it from another repository or commit?"
                )
            matched[file.path] = found
    given = tuple(dict.fromkeys(r.runner for r in inputs))
    position = {r: k for k, r in enumerate(runners)}
    rows: list[JoinRow] = []
    findings: list[PytestFinding] = []
    for test in verdicts:
        here = [(test.verdicts[position[r]], seen.get((test.nodeid, r))) for r in given]
        for verdict, observed in here:
            row = _row(test, verdict, observed)
            if row is not None:
                rows.append(row)
                findings.extend(_finding(row, verdict))
        findings.extend(_everywhere(test.nodeid, test.path, test.line, here, test.elsewhere))
    by_test: dict[str, list[tuple[str, str, RunCase, _Seen]]] = defaultdict(list)
    for (nodeid, runner), (path, case, observed) in strays.items():
        by_test[nodeid].append((runner, path, case, observed))
    for nodeid, found_in in by_test.items():
        for runner, path, case, observed in found_in:
            row = JoinRow(
                test=nodeid,
                path=path,
                line=0,
                runner=runner,
                static="not collected",
                observed=observed.observed.value,
                message=observed.message,
                outcome=Outcome.NOT_COLLECTED,
            )
            rows.append(row)
            findings.append(_not_collected(row, case))
        unknown = [(RunnerVerdict(runner=r, outcome=ItemOutcome.UNDETERMINED), o) for r, _, _, o in found_in]
        findings.extend(_everywhere(nodeid, found_in[0][1], 0, unknown, ()))
    return JoinResult(inputs=tuple(inputs), rows=tuple(rows), findings=tuple(findings), matched=matched, offsets=offsets)


def _row(test: ItemVerdicts, verdict: RunnerVerdict, seen: _Seen | None) -> JoinRow | None:
    static = verdict.outcome
    if seen is None:
        if not verdict.scheduled:
            return None  # sent to no job there and not in its run: nothing to compare
        outcome, observed, message = Outcome.ABSENT, ABSENT, ""
    else:
        observed, message = seen.observed.value, seen.message
        if seen.observed is Observed.COLLECTION_ERROR:
            outcome = Outcome.NOT_JUDGED
        elif static is ItemOutcome.UNDETERMINED:
            outcome = Outcome.RESOLVED
        elif static is ItemOutcome.RUNS:
            outcome = Outcome.CONFIRMED if seen.observed.ran else Outcome.CONTRADICTED
        elif static is ItemOutcome.SKIPS:
            outcome = Outcome.CONTRADICTED if seen.observed.ran else Outcome.CONFIRMED
        else:
            outcome = Outcome.CONTRADICTED  # no entry read sends it to this runner, yet its run holds it
    return JoinRow(
        test=test.nodeid,
        path=test.path,
        line=test.line,
        runner=verdict.runner,
        static=static.value,
        observed=observed,
        message=message,
        outcome=outcome,
        guard=verdict.guard,
    )


def _quoted(message: str) -> str:
    return f": {message}" if message else ""


def _finding(row: JoinRow, verdict: RunnerVerdict) -> list[PytestFinding]:
    on = row.runner
    if row.outcome is Outcome.CONTRADICTED:
        if verdict.outcome is ItemOutcome.SKIPS:
            said = f"predicted to skip on {on} ({verdict.guard_class}: {verdict.reason})"
            hint = (
                "the guard reads a fact the audit believes of this runner and the run shows otherwise: check the "
                "runner's profile, the job's environment and what its install steps install"
            )
        elif verdict.outcome is ItemOutcome.RUNS:
            read = f"skip guards read: {verdict.guard}" if verdict.guard else "no skip guard read"
            said = f"predicted to run on {on} ({read}, none true there)"
            hint = (
                "the skip comes from code the audit does not read as a guard (a helper, a fixture, a hook) or from "
                "a fact it misjudged: write the skip as a mark the audit reads, or fix the reading"
            )
        else:
            said = f"no CI entry read sends it to {on} ({verdict.reason})"
            hint = "check that the file came from a job on this runner; declare a job the audit did not read (--schedule-file)"
        message = f"{said}; the run there: {row.observed}{_quoted(row.message)}"
        return [_wrap(JoinKind.CONTRADICTED, row, message, guard=verdict.guard, hint=hint, guard_class=verdict.guard_class)]
    if row.outcome is Outcome.RESOLVED:
        message = f"undetermined on {on} ({verdict.reason}); the run there: {row.observed}{_quoted(row.message)}"
        return [_wrap(JoinKind.RESOLVED, row, message, guard=verdict.guard)]
    if row.outcome is Outcome.ABSENT:
        message = (
            f"sent to {on} (static: {row.static}) but not in the run from there: deselected or not collected at run "
            "time, or the run given is one part of what that runner runs"
        )
        hint = "give every run of the runner (a folder of their files), or read the job's run-time selection"
        return [_wrap(JoinKind.ABSENT, row, message, guard=verdict.guard, hint=hint)]
    return []


def _everywhere(
    nodeid: str,
    path: str,
    line: int,
    here: Sequence[tuple[RunnerVerdict, _Seen | None]],
    elsewhere: Sequence[str],
) -> list[PytestFinding]:
    """The test skipped in every run that holds it, ran in none, and no runner without a run is sent it."""
    if elsewhere or not any(s is not None and s.observed is Observed.SKIPPED for _, s in here):
        return []
    present = [(v, s) for v, s in here if s is not None and s.observed is not Observed.COLLECTION_ERROR]
    if any(s.observed.ran for _, s in present):
        return []
    runners = tuple(v.runner for v, _ in present)
    said: dict[str, list[str]] = defaultdict(list)
    for v, s in present:
        said[s.message or "no message"].append(v.runner)
    skips = "; ".join(f"{', '.join(where)}: {message}" for message, where in said.items())
    static = ", ".join(f"{v.runner} {v.outcome}" for v, _ in present)
    guard = next((v.guard for v, _ in present if v.outcome is ItemOutcome.SKIPS), "")
    finding = Finding(
        tool=Tool.PYTEST_AUDIT,
        kind=JoinKind.SKIPPED_IN_EVERY_RUN.value,
        subject=nodeid,
        message=f"skipped in every run given for it ({skips}); static verdict: {static}",
        path=path,
        line=line,
        runners=runners,
        hint="make a runner CI sends it to run it (install what it needs there, give the job what the guard asks), "
        "or drop it from the schedule",
        source=guard,
    )
    return [PytestFinding(finding=finding, guard_class=GuardClass.UNKNOWN)]


def _not_collected(row: JoinRow, case: RunCase) -> PytestFinding:
    message = (
        f"in the run from {row.runner} (classname {case.classname!r}, name {case.name!r}: {row.observed}"
        f"{_quoted(row.message)}), but no test static collection found"
    )
    hint = (
        "a test made at run time (a plugin's item, a generated test) is not audited; a run of another checkout is not this tree's"
    )
    return _wrap(JoinKind.NOT_COLLECTED, row, message, hint=hint)


def _wrap(kind: JoinKind, row: JoinRow, message: str, *, guard: str = "", hint: str = "", guard_class: str = "") -> PytestFinding:
    finding = Finding(
        tool=Tool.PYTEST_AUDIT,
        kind=kind.value,
        subject=row.test,
        message=message,
        path=row.path,
        line=row.line,
        runners=(row.runner,),
        hint=hint,
        source=guard,
    )
    return PytestFinding(finding=finding, guard_class=GuardClass(guard_class) if guard_class else GuardClass.UNKNOWN)


def join_kinds() -> tuple[str, ...]:
    return tuple(k.value for k in JoinKind)


def runners_of(inputs: Iterable[RunInput]) -> tuple[str, ...]:
    """The runners of `--junit`, each once, in the order given."""
    return tuple(dict.fromkeys(r.runner for r in inputs))
