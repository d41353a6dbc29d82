"""The pytest audit: for each test CI schedules, does it skip on every runner it is sent to? Pure.

A test skips on a runner when one of its guards is true there (three-valued: unknown never counts as a skip).
Findings use the guard audit's records: `silent-skip` per test that skips on every runner of its schedule
(naming the runners and the guard; `disabled-by-skip` when the skip is unconditional), `never-runs` per test that
every CI command collecting its file leaves out (`-k`, `-m`, `--deselect`, node ids), that a conftest hook skips
unless an opt-in no job gives is set, or whose guard skips on every runner any CI job can send it to while which
job runs it is not read, and per file none of whose tests runs; `unscheduled` per test file no entry selects,
`unparsable` per file that does not parse; each carries the guard's class. Every test left undetermined is listed
with its reason (`undetermined.py`).
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from matrix.core.errors import EXIT_FINDINGS, EXIT_OK
from matrix.core.profile import RunnerProfile
from matrix.guards.evaluation import Evaluation, Tri
from matrix.guards.hardware import HardwareTable, as_profile, stand_in
from matrix.guards.model import (
    AlwaysSkips,
    ExprCondition,
    Guard,
    GuardFindingKind,
    GuardKind,
    ModuleNames,
    dotted,
)
from matrix.guards.predicates import Predicate, RunnerFacts
from matrix.pytest_suites.collect import AppliedGuard, TestFile, TestItem
from matrix.pytest_suites.invocation import Invocation
from matrix.pytest_suites.optins import option_table, option_values
from matrix.pytest_suites.packs import GuardClass, PredicatePacks, capability_call
from matrix.pytest_suites.select import Deselected, Selected, collected, selection, selects
from matrix.pytest_suites.undetermined import Cause, UndeterminedTest, guard_reason, reason_counts
from matrix.pytest_suites.verdicts import (
    PytestFinding,
    deselected_finding,
    file_finding,
    file_never_runs,
    skip_finding,
    undetermined_elsewhere,
    undetermined_of,
    undetermined_unread,
    unread_never_finding,
)
from matrix.pytest_suites.verdicts import SkipVerdict as _RunnerVerdict
from matrix.schedule.environment.conftest_options import DeclaredOption
from matrix.schedule.environment.model import JobEnvironment
from matrix.schedule.environment.project_imports import ProjectImports
from matrix.schedule.labels import LabelIndex, platform_of
from matrix.schedule.model import (
    Container,
    PytestSelection,
    RunnerHardware,
    Schedule,
    ScheduleEntry,
    UnknownLabel,
    UnreadJob,
)

# When a skip reads several kinds of fact, the finding names the first of these it read.
_PRECEDENCE = (
    GuardClass.CAPABILITY,
    GuardClass.GPU_COUNT,
    GuardClass.CUDA_VERSION,
    GuardClass.PLATFORM,
    GuardClass.ENVIRONMENT,
    GuardClass.INSTALL,
    GuardClass.OPTION,
)


class ItemOutcome(StrEnum):
    """What the schedule does with one test: every runner runs it, every runner skips it, no entry selects it,
    or not decided."""

    RUNS = "runs"
    SKIPS = "skips"
    NOT_SELECTED = "not-selected"
    UNDETERMINED = "undetermined"


@dataclass(frozen=True, kw_only=True)
class RunnerVerdict:
    """A test's static verdict on one runner a run came from (the entries that send it there, together), with the
    guard read: the one true there when it skips, else the guards evaluated (empty: none)."""

    runner: str
    outcome: ItemOutcome
    guard: str = ""
    guard_class: str = ""  # the class of the fact that decides a skip (`GuardClass`), else empty
    reason: str = ""
    scheduled: bool = True  # an entry read sends it there


@dataclass(frozen=True, kw_only=True)
class ItemVerdicts:
    """One collected test's verdict on each runner of a join, in the order the runners were given; `elsewhere`:
    the runners its entries also send it to that no run covers."""

    nodeid: str
    path: str
    line: int
    verdicts: tuple[RunnerVerdict, ...]
    elsewhere: tuple[str, ...] = ()


def on_runner(runner: str, entry: ScheduleEntry, profile: str | None) -> bool:
    """Whether a run from `runner` (a profile, or a runs-on label as the CI files write it) is this entry's run on
    `profile` (None: an entry whose runner has no profile)."""
    return runner == profile or runner in entry.labels or runner in entry.other_runners


@dataclass(frozen=True, kw_only=True)
class PytestAuditReport:
    root: str
    files: int
    tests: int
    scheduled_tests: int
    runners: tuple[str, ...]
    findings: tuple[PytestFinding, ...]
    undetermined: int
    unread: tuple[UnreadJob, ...] = ()
    # Tests in files no read entry selects while a CI job was not read: undetermined, never unscheduled.
    unread_only: int = 0
    unknown_labels: tuple[UnknownLabel, ...] = ()
    assumptions: tuple[str, ...] = ()
    verdicts: tuple[ItemVerdicts, ...] = ()  # per test and runner of a join (`SuiteAuditor.join`), else empty
    # Every test counted in `undetermined` or `unread_only`, with its reason.
    undetermined_tests: tuple[UndeterminedTest, ...] = ()

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if any(f.finding.failing for f in self.findings) else EXIT_OK

    def of_kind(self, kind: GuardFindingKind) -> tuple[PytestFinding, ...]:
        return tuple(f for f in self.findings if f.finding.kind == kind)

    def class_counts(self, kind: GuardFindingKind) -> dict[GuardClass, int]:
        found = Counter(f.guard_class for f in self.of_kind(kind))
        return {c: found[c] for c in GuardClass if found[c]}


_Key = tuple[
    int,
    int,
    str,
    tuple[tuple[str, str], ...],
    Container | None,
    frozenset[str],
    JobEnvironment | None,
    RunnerHardware | None,
    str,
    bool,
    tuple[tuple[str, object], ...],
    tuple[str, ...],
]


class _Evaluator:
    """Evaluates guards on runner facts, once per (guard, profile, env); rewrites capability calls first."""

    def __init__(
        self,
        packs: PredicatePacks,
        profiles: Mapping[str, RunnerProfile],
        installed: frozenset[str],
        ci_names: frozenset[str] = frozenset(),
        project: ProjectImports | None = None,
    ):
        self.ci_names = ci_names
        self.project = project
        # Names the audited file's own process sets (its conftests, itself, pytest-env): see `for_file`.
        self.written: frozenset[str] = frozenset()
        # Set for a job that was not read: its environment is not known (see `unread`).
        self.open_env = False
        # The values of the options a conftest declares, in the command being judged (see `with_options`).
        self.options: tuple[tuple[str, object], ...] = ()
        self.packs = packs
        self.profiles = profiles
        self.installed = installed
        self.table: dict[str, Predicate] = dict(packs.table)
        self.cache: dict[_Key, Evaluation] = {}
        self.hardware_tables: dict[RunnerHardware, Mapping[str, Predicate]] = {}
        # Keyed by object ids: the collected files hold every guard and names object for the whole audit.
        self.rewritten: dict[tuple[int, int], tuple[Guard, ModuleNames]] = {}
        self.kept: list[AppliedGuard] = []
        self.kept_names: list[ModuleNames] = []
        self.names: dict[int, ModuleNames] = {}

    def for_file(self, written: frozenset[str]) -> _Evaluator:
        """This evaluator (its caches shared) for a file whose process sets `written` itself: those names may be
        set where it runs, whatever the job gives."""
        if written == self.written:
            return self
        view = copy.copy(self)
        view.written = written
        return view

    def with_options(self, options: tuple[tuple[str, object], ...]) -> _Evaluator:
        """This evaluator (its caches shared) for a command giving these option values (optins.py)."""
        if options == self.options:
            return self
        view = copy.copy(self)
        view.options = options
        return view

    def unread(self) -> _Evaluator:
        """This evaluator (its caches shared) for a job that was not read: no variable is known set or unset."""
        view = copy.copy(self)
        view.open_env = True
        return view

    def evaluate(self, applied: AppliedGuard, entry: ScheduleEntry, profile: str) -> Evaluation:
        return self.evaluate_on(applied, entry, self.profiles[profile])

    def evaluate_hardware(self, applied: AppliedGuard, entry: ScheduleEntry, hardware: RunnerHardware) -> Evaluation:
        """On a runner no profile describes: as the profile its labels make (an NVIDIA host of known count and
        capability), else on what its labels say of it (`matrix.guards.hardware`)."""
        profile = as_profile(hardware)
        if profile is not None:
            return self.evaluate_on(applied, entry, profile)
        table = self.hardware_tables.get(hardware)
        if table is None:
            table = self.hardware_tables[hardware] = HardwareTable(self.table, hardware)
        return self.evaluate_on(applied, entry, stand_in(hardware), hardware=hardware, table=table)

    def evaluate_on(
        self,
        applied: AppliedGuard,
        entry: ScheduleEntry,
        runner: RunnerProfile,
        *,
        hardware: RunnerHardware | None = None,
        table: Mapping[str, Predicate] | None = None,
    ) -> Evaluation:
        options = self.options if applied.options else ()
        key = (
            id(applied.guard),
            id(applied.names),
            runner.name,
            entry.env,
            entry.container,
            self.written,
            entry.environment,
            hardware,
            (platform := platform_of(entry.labels)).os + "/" + platform.machine,
            self.open_env,
            options,
            entry.unset,
        )
        found = self.cache.get(key)
        if found is None:
            guard, names = self._rewrite(applied)
            # The job's environment is what its entry sets; a variable no CI file mentions is unset there (an opt-in
            # such as `LIGER_KERNEL_IMPL == "cutile"` that no job gives never holds).
            facts = RunnerFacts(
                profile=runner,
                installed=self.installed,
                # a name the suite's own process writes (a conftest, the module, pytest-env) holds what it wrote,
                # not what the job gave: known only at run time
                env={k: v for k, v in entry.env_map.items() if k not in self.written} if self.written else entry.env_map,
                env_closed=not self.open_env,
                env_open=self.ci_names | self.written if self.written else self.ci_names,
                # run through `docker exec`: only what the container is given reaches the tests
                container=f"the container {entry.container.name}" if entry.container else "",
                container_unread=entry.container.unread if entry.container else "",
                environment=entry.environment,
                hardware=hardware,
                project=self.project,
                platform=platform,
                unset=frozenset(entry.unset) - self.written,
            )
            base = self.table if table is None else table
            from matrix.guards.evaluate import evaluate_guard  # only where a file is audited, not read from the cache

            found = evaluate_guard(guard, facts, names, {**base, **option_table(options)} if options else base)
            self.cache[key] = found
        return found

    def _rewrite(self, applied: AppliedGuard) -> tuple[Guard, ModuleNames]:
        key = (id(applied.guard), id(applied.names))
        if key not in self.rewritten:
            guard = applied.guard
            if applied.calls:
                conditions = tuple(
                    replace(c, expr=self._calls(c.expr)) if isinstance(c, ExprCondition) else c for c in guard.conditions
                )
                local = tuple((n, self._calls(e) if e is not None else None) for n, e in guard.local_names)
                guard = replace(guard, conditions=conditions, local_names=local)
                # The key is the objects' ids: they are kept alive with it, or a guard made later (a marker guard
                # of another file) could get the same id and this rewrite (the value holds only the copy).
                self.kept.append(applied)
            self.rewritten[key] = (guard, self._names(applied.names) if applied.calls else applied.names)
        return self.rewritten[key]

    def _names(self, names: ModuleNames) -> ModuleNames:
        found = self.names.get(id(names))
        if found is None:
            aliases = tuple((n, self._calls(e) if e is not None else None) for n, e in names.aliases)
            found = replace(names, aliases=aliases) if aliases != names.aliases else names
            self.names[id(names)] = found
            self.kept_names.append(names)  # alive with its id (see `_rewrite`)
        return found

    def _calls(self, expr: ast.expr) -> ast.expr:
        """`X.has_device_capability(90)` -> a call of a predicate named for the literal argument."""
        if not any(
            isinstance(n, ast.Call) and (dotted(n.func) or "").rpartition(".")[2] in self.packs.calls for n in ast.walk(expr)
        ):
            return expr
        table, calls = self.table, self.packs.calls

        class _Rewrite(ast.NodeTransformer):
            def visit_Call(self, node: ast.Call) -> ast.expr:
                self.generic_visit(node)
                last = (dotted(node.func) or "").rpartition(".")[2]
                if last not in calls or len(node.args) != 1 or node.keywords:
                    return node
                try:
                    argument = ast.literal_eval(node.args[0])
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    return node
                op = calls[last].op
                name = f"{last}({argument!r})"
                table[name] = _capability_predicate(op, argument)
                return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[], keywords=[])

        try:
            return _Rewrite().visit(copy.deepcopy(expr))  # type: ignore[no-any-return]
        except RecursionError:
            return expr  # nested past Python's limit: left as written, so the evaluator's budget answers unknown

    def guard_class(self, applied: AppliedGuard, evaluation: Evaluation) -> GuardClass:
        if any(isinstance(c, AlwaysSkips) for c in applied.guard.conditions) or evaluation.constant:
            return GuardClass.UNCONDITIONAL
        # The facts that decided it, not every one consulted: `device_count() < 2 or WORLD_SIZE < 2` on a two-GPU
        # runner is skipped by the variable.
        classes = {self.packs.class_of(f) for f in evaluation.deciding}
        for wanted in _PRECEDENCE:
            if wanted in classes:
                return wanted
        return GuardClass.UNKNOWN


def _capability_predicate(op: str, argument: object) -> Predicate:
    def predicate(facts: RunnerFacts) -> object:
        return capability_call(op, argument, facts)

    return predicate


def _verdict(item: TestItem, entry: ScheduleEntry, profile: str, evaluator: _Evaluator, *, early: bool = False) -> _RunnerVerdict:
    """Whether the item skips on this runner (`early`: whether it returns early, a silent pass, instead)."""
    unknown: tuple[AppliedGuard, Evaluation] | None = None
    guards = item.guards
    if any(g.deselects for g in guards):
        # A deselection happens at collection, before any skip: it is the verdict whenever it holds.
        guards = tuple(sorted(guards, key=lambda g: not g.deselects))
    for applied in guards:
        if (applied.guard.kind is GuardKind.EARLY_RETURN) is not early:
            continue
        evaluation = evaluator.evaluate(applied, entry, profile)
        if evaluation.skips is Tri.TRUE:
            return _RunnerVerdict(profile=profile, skips=Tri.TRUE, guard=applied, evaluation=evaluation)
        if unknown is None and evaluation.skips is Tri.UNKNOWN:
            unknown = (applied, evaluation)
    if unknown is None:
        return _RunnerVerdict(profile=profile, skips=Tri.FALSE)
    why = guard_reason(unknown[0].guard.source, unknown[0].via, unknown[1].steps)
    return _RunnerVerdict(profile=profile, skips=Tri.UNKNOWN, why=why)


# Two machines as unlike as a runner can be: a guard on an entry whose runner has no profile is judged on both,
# and its answer kept only when it is the same on both and no fact of the machine decided it (only the job's
# environment, which the entry gives, or nothing at all).
_UNPROFILED = (
    RunnerProfile(name="(no profile: no GPU)", gpus=0, capability=None),
    RunnerProfile(
        name="(no profile: eight GPUs)",
        gpus=8,
        capability=(12, 0),
        device_name="(any)",
        in_ci=True,
        amd_ci=True,
        cuda="99.0",
        host_arch="aarch64",
    ),
)
# The job's environment and installs are the entry's, not the machine's.
_MACHINE_FREE = frozenset({"env", "install"})


def _unprofiled_verdict(item: TestItem, entry: ScheduleEntry, evaluator: _Evaluator) -> _RunnerVerdict:
    """An entry whose runner has no profile. A test with no skip guard runs there, as on any runner. A guard made
    only of unconditional skips (`mark.skip`) skips there as anywhere, since it reads no runner fact. On a runner
    its labels describe (`ScheduleEntry.hardware`: a ROCm, XPU, macOS or CPU host, four A10Gs) each guard is judged
    on what they say (`matrix.guards.hardware`); on a runner no label describes, a guard that only the job's
    environment decides (an opt-in variable the job does not set) skips; anything else there is unknown."""
    where = ", ".join(entry.other_runners) or ", ".join(entry.labels) or "(no runs-on)"
    skip_guards = [g for g in item.guards if g.guard.kind is not GuardKind.EARLY_RETURN]
    for applied in skip_guards:
        conditions = applied.guard.conditions
        if bool(conditions) and all(isinstance(c, AlwaysSkips) for c in conditions):
            evaluation = Evaluation(skips=Tri.TRUE, steps=("unconditional skip",))
            return _RunnerVerdict(profile=where, skips=Tri.TRUE, guard=applied, evaluation=evaluation)
    if entry.hardware is not None:
        unknown: tuple[AppliedGuard, Evaluation] | None = None
        for applied in skip_guards:
            evaluation = evaluator.evaluate_hardware(applied, entry, entry.hardware)
            if evaluation.skips is Tri.TRUE:
                return _RunnerVerdict(profile=where, skips=Tri.TRUE, guard=applied, evaluation=evaluation)
            if unknown is None and evaluation.skips is Tri.UNKNOWN:
                unknown = (applied, evaluation)
        if unknown is None:
            return _RunnerVerdict(profile=where, skips=Tri.FALSE)
        return _RunnerVerdict(
            profile=where, skips=Tri.UNKNOWN, why=guard_reason(unknown[0].guard.source, unknown[0].via, unknown[1].steps)
        )
    for applied in skip_guards:
        both = [evaluator.evaluate_on(applied, entry, runner) for runner in _UNPROFILED]
        if all(e.skips is Tri.TRUE and set(e.deciding) <= _MACHINE_FREE for e in both):
            return _RunnerVerdict(profile=where, skips=Tri.TRUE, guard=applied, evaluation=both[0])
    why = f"sent to {where}, a runner with no profile: its guards are not judged there"
    return _RunnerVerdict(profile=where, skips=Tri.UNKNOWN if skip_guards else Tri.FALSE, why=why, cause=Cause.NO_PROFILE)


def _everywhere(
    item: TestItem, verdicts: list[_RunnerVerdict], evaluator: _Evaluator, entry: ScheduleEntry
) -> list[_RunnerVerdict]:
    """A guard that skips on every machine (`skip`, `skipif(True)`, a parameter value) is the reason given before
    a runner fact that also skips there, so the finding's class is the same on every runner."""
    if verdicts[0].profile not in evaluator.profiles:
        return verdicts  # a runner without a profile: its verdict names its own guard
    for applied in item.guards:
        if applied.guard.kind is GuardKind.EARLY_RETURN:
            continue
        evaluation = evaluator.evaluate(applied, entry, verdicts[0].profile)
        if evaluation.skips is Tri.TRUE and (
            evaluation.constant or any(isinstance(c, AlwaysSkips) for c in applied.guard.conditions)
        ):
            return [replace(v, guard=applied, evaluation=evaluation) for v in verdicts]
    return verdicts


@dataclass(frozen=True, kw_only=True)
class FileAudit:
    """One file's share of the report."""

    findings: tuple[PytestFinding, ...]
    tests: int
    scheduled: int
    undetermined: int
    assumptions: tuple[str, ...]
    unread_only: int = 0
    verdicts: tuple[ItemVerdicts, ...] = ()
    undetermined_tests: tuple[UndeterminedTest, ...] = ()


class SuiteAuditor:
    """Audits one collected file at a time against a schedule (files can be audited in any order)."""

    def __init__(
        self,
        schedule: Schedule,
        profiles: Mapping[str, RunnerProfile],
        packs: PredicatePacks,
        installed: frozenset[str] = frozenset(),
        invocations: Sequence[Invocation] | None = None,
        *,
        join: Sequence[str] = (),
        project: ProjectImports | None = None,
    ):
        self.join = tuple(join)  # the runners whose runs are joined: each file's audit carries its tests' verdicts there
        self.entries = schedule.pytest_entries()
        self.unread = schedule.unread
        # What each entry's pytest command collects and selects; read from the selection alone when not given.
        self.invocations = tuple(invocations) if invocations is not None else tuple(map(_plain, self.entries))
        self.base = _Evaluator(packs, profiles, installed, frozenset(schedule.ci_names), project)
        self.labels = LabelIndex(profiles)  # what a runner label of a job not read says of its machine
        self.evaluator = self.base  # for the file being audited (`_Evaluator.for_file`)
        self.not_run = tuple(f"{e.origin}: {i.why_not}" for e, i in zip(self.entries, self.invocations, strict=True) if i.why_not)
        self.invocation_of = {id(e): i for e, i in zip(self.entries, self.invocations, strict=True)}
        # The options the audited file's conftests declare, and their values per command (by the conftests' paths).
        self.file_options: tuple[DeclaredOption, ...] = ()
        self.option_memo: dict[tuple[int, tuple[int, ...]], tuple[tuple[str, object], ...]] = {}

    def forget_evaluations(self) -> None:
        """Forget the guards evaluated so far: an evaluation may follow a name into another file, a read the
        results cache records for the file being audited (see `Collector.forget_derived`)."""
        self.base.cache.clear()

    def audit_file(self, test_file: TestFile) -> FileAudit:
        self.evaluator = self.base.for_file(test_file.env_written)
        self.file_options = test_file.options
        if test_file.error is not None:
            finding = file_finding(GuardFindingKind.UNPARSABLE, test_file.path, test_file.error, GuardClass.UNKNOWN)
            return FileAudit(findings=(finding,), tests=0, scheduled=0, undetermined=0, assumptions=())
        ignores = test_file.conftest_ignores
        entries = [
            (e, i, found)
            for e, i in zip(self.entries, self.invocations, strict=True)
            if (found := collected(test_file.path, i, ignores))[0]
        ]
        # Only the unread entries that could run this file count: one whose text bounds it elsewhere cannot.
        unread = [u for u in self.unread if u.may_run(test_file.path)]
        skips: list[PytestFinding] = []
        passes: list[PytestFinding] = []
        never: list[PytestFinding] = []  # tests left out wherever CI collects them, opted out, or skipped everywhere
        doubtful: list[UndeterminedTest] = []
        scheduled = undetermined = unread_only = 0
        assumptions: list[str] = list(test_file.notes)
        for item in test_file.tests:
            chosen: list[Selected] = []
            dropped: list[Deselected] = []
            for e, i, found in entries:
                picked = selection(e, i, item, ignores, found)
                if isinstance(picked, Selected):
                    chosen.append(picked)
                elif isinstance(picked, Deselected):
                    dropped.append(picked)
            if not chosen:
                if unread:
                    # A job not read may run it: it never runs only if its guard skips on every runner they use.
                    found_never = self._never_unread(item, unread)
                    if found_never is not None:
                        never.append(found_never)
                    else:
                        unread_only += 1
                        doubtful.append(undetermined_unread(item, unread))
                elif dropped:
                    never.append(deselected_finding(item, dropped))
                continue
            scheduled += 1
            for s in chosen:
                assumptions.extend(a for a in (*s.entry.assumptions, *s.assumptions) if a not in assumptions)
            verdicts = [self._verdict(item, s, p) for s in chosen for p in s.entry.profiles]
            verdicts += [self._unprofiled(item, s) for s in chosen if not s.entry.profiles]
            # No verdict at all: every entry that selects it names runners no profile knows; nothing is certain.
            away = self._elsewhere(item, unread) if unread and verdicts and all(v.skips is Tri.TRUE for v in verdicts) else None
            if away is not None:
                # It skips wherever the entries read send it, but an unread job may run it where it does not skip.
                undetermined += 1
                doubtful.append(undetermined_elsewhere(item, *away))
            elif verdicts and all(v.skips is Tri.TRUE for v in verdicts):
                if len({v.guard.guard.line for v in verdicts if v.guard is not None}) > 1:
                    verdicts = _everywhere(item, verdicts, self.evaluator, chosen[0].entry)
                skips.append(skip_finding(item, verdicts, self.evaluator.guard_class))
            elif not any(v.skips is Tri.FALSE for v in verdicts):
                undetermined += 1
                doubtful.append(undetermined_of(item, verdicts))
            elif any(g.guard.kind is GuardKind.EARLY_RETURN for g in item.guards):
                early = [_verdict(item, s.entry, p, self.evaluator, early=True) for s in chosen for p in s.entry.profiles]
                if early and all(v.skips is Tri.TRUE for v in early):
                    passes.append(skip_finding(item, early, self.evaluator.guard_class, kind=GuardFindingKind.SILENT_PASS))
        findings = [*skips, *never, *passes]
        if skips and unread:
            assumptions.append(
                f"{test_file.path}: its skips are judged on the runners of the entries read; "
                f"{len(unread)} CI job(s) not read may send it elsewhere"
            )
        if test_file.tests and not scheduled and not never and unread:
            # A job the reader could not read may run it: "cannot read" is never "does not run".
            first = unread[0]
            assumptions.append(
                f"{test_file.path}: no entry read selects it, but {len(unread)} CI job(s) could not be read "
                f"(first: {first.origin}: {first.reason}): whether it runs is undetermined"
            )
        elif test_file.tests and not scheduled and not never and (stopped := self._stopped(test_file)):
            # Selected, but every command that collects it stops on a collection error first.
            why, names_nothing = stopped
            fix = (
                "correct or remove the path or node id the command names that names nothing"
                if names_nothing
                else "fix the file that does not parse, or pass --continue-on-collection-errors"
            )
            findings.append(file_finding(GuardFindingKind.NEVER_RUNS, test_file.path, why, GuardClass.COLLECTION, hint=fix))
        elif test_file.tests and not scheduled and not never:
            findings.append(
                file_finding(GuardFindingKind.UNSCHEDULED, test_file.path, "no CI entry selects this file", GuardClass.UNKNOWN)
            )
        elif (scheduled and len(skips) == scheduled) or (not scheduled and never and len(never) == len(test_file.tests)):
            whole = file_never_runs(test_file.path, [*skips, *never], scheduled, len(test_file.tests))
            if whole is not None:
                findings.append(whole)
        return FileAudit(
            findings=tuple(findings),
            tests=len(test_file.tests),
            scheduled=scheduled,
            undetermined=undetermined,
            assumptions=tuple(assumptions),
            unread_only=unread_only,
            verdicts=self.runner_verdicts(test_file) if self.join else (),
            undetermined_tests=tuple(doubtful),
        )

    def _elsewhere(self, item: TestItem, unread: Sequence[UnreadJob]) -> tuple[UnreadJob, str] | None:
        """A job not read whose text bounds what it may run to folders holding the item, and its runner where the
        item is not shown to skip (a runner no profile describes counts as one; "" when its runners are not read);
        None when every such job skips it there. A job whose reach nothing bounds (it may run any test of the tree)
        is left to the file's assumption: its skips are judged on the runners of the entries read, as the output
        says."""
        evaluator = self.evaluator.unread()
        selection = PytestSelection(paths=(item.path,))
        for job in unread:
            if job.reach is None:
                continue
            for runner in job.runners or ("",):
                if runner in self.base.profiles:
                    entry = ScheduleEntry(selection=selection, labels=(), profiles=(runner,), origin=job.origin)
                    verdict = _verdict(item, entry, runner, evaluator)
                else:
                    # A known runner without a profile (its labels), or runners not read (""): judged on what the
                    # labels say of the machine, else only a guard no machine decides skips there.
                    labels = tuple(runner.split(", ")) if runner else ()
                    hardware = self.labels.resolve(labels).hardware if labels else None
                    entry = ScheduleEntry(selection=selection, labels=labels, profiles=(), origin=job.origin, hardware=hardware)
                    verdict = _unprofiled_verdict(item, entry, evaluator)
                if verdict.skips is not Tri.TRUE:
                    return job, runner
        return None

    def _never_unread(self, item: TestItem, unread: Sequence[UnreadJob]) -> PytestFinding | None:
        """The finding for a test no read entry runs whose guard skips on every runner of the jobs not read that may
        run it (each of which runs on known runners); None when that is not certain."""
        runners = [r for u in unread for r in (u.runners or ())]
        if not item.guards or any(not u.runners for u in unread) or any(r not in self.base.profiles for r in runners):
            return None
        evaluator = self.evaluator.unread()
        entry = ScheduleEntry(
            selection=PytestSelection(paths=(item.path,)),
            labels=(),
            profiles=tuple(dict.fromkeys(runners)),
            origin=unread[0].origin,
        )
        verdicts = [_verdict(item, entry, p, evaluator) for p in entry.profiles]
        if not all(v.skips is Tri.TRUE for v in verdicts):
            return None
        if len({v.guard.guard.line for v in verdicts if v.guard is not None}) > 1:
            verdicts = _everywhere(item, verdicts, evaluator, entry)
        return unread_never_finding(item, verdicts, evaluator.guard_class, len(unread))

    def _stopped(self, test_file: TestFile) -> tuple[str, bool] | None:
        """Why pytest runs nothing of a file a command would collect but for a collection error (see collect_errors.py),
        and whether the stop is a path or node id that names nothing."""
        for invocation in self.invocations:
            if (
                invocation.collection_error
                and collected(test_file.path, replace(invocation, runs=True), test_file.conftest_ignores)[0]
            ):
                return f"collected by a CI command that runs no test: {invocation.why_not}", invocation.names_nothing
        return None

    def outcomes(self, test_file: TestFile) -> dict[str, ItemOutcome]:
        """Each collected test's outcome over the whole schedule (the differential tests compare these with pytest)."""
        self.evaluator = self.base.for_file(test_file.env_written)
        self.file_options = test_file.options
        ignores = test_file.conftest_ignores
        pairs = [(e, i, collected(test_file.path, i, ignores)) for e, i in zip(self.entries, self.invocations, strict=True)]
        out: dict[str, ItemOutcome] = {}
        for item in test_file.tests:
            chosen = [s for s in (selects(e, i, item, ignores, found) for e, i, found in pairs) if s is not None]
            verdicts = [self._verdict(item, s, p) for s in chosen for p in s.entry.profiles]
            verdicts += [self._unprofiled(item, s) for s in chosen if not s.entry.profiles]
            if not chosen:
                out[item.nodeid] = ItemOutcome.NOT_SELECTED
            elif verdicts and all(v.skips is Tri.TRUE for v in verdicts):
                deselected = all(v.guard is not None and v.guard.deselects for v in verdicts)
                out[item.nodeid] = ItemOutcome.NOT_SELECTED if deselected else ItemOutcome.SKIPS
            elif verdicts and all(v.skips is Tri.FALSE for v in verdicts):
                out[item.nodeid] = ItemOutcome.RUNS
            else:
                out[item.nodeid] = ItemOutcome.UNDETERMINED
        return out

    def runner_verdicts(self, test_file: TestFile) -> tuple[ItemVerdicts, ...]:
        """Each collected test's outcome on each runner of `join`, over the entries that send it there, as
        `outcomes` gives it over the whole schedule; a test no entry read selects is undetermined, not unselected,
        where a CI job that was not read may run its file."""
        self.evaluator = self.base.for_file(test_file.env_written)
        ignores = test_file.conftest_ignores
        pairs = [(e, i, collected(test_file.path, i, ignores)) for e, i in zip(self.entries, self.invocations, strict=True)]
        unread = any(u.may_run(test_file.path) for u in self.unread)
        out = []
        for item in test_file.tests:
            chosen = [s for s in (selects(e, i, item, ignores, found) for e, i, found in pairs) if s is not None]
            where = [(s, p) for s in chosen for p in (s.entry.profiles or (None,))]
            per_runner = []
            for runner in self.join:
                here = [
                    self._verdict(item, s, p) if p else self._unprofiled(item, s)
                    for s, p in where
                    if on_runner(runner, s.entry, p)
                ]
                per_runner.append(self._runner_verdict(runner, item, here, unread))
            elsewhere = {p or ", ".join(s.entry.labels) for s, p in where if not any(on_runner(r, s.entry, p) for r in self.join)}
            out.append(
                ItemVerdicts(
                    nodeid=item.nodeid,
                    path=item.path,
                    line=item.line,
                    verdicts=tuple(per_runner),
                    elsewhere=tuple(sorted(elsewhere)),
                )
            )
        return tuple(out)

    def _runner_verdict(self, runner: str, item: TestItem, here: list[_RunnerVerdict], unread: bool) -> RunnerVerdict:
        guards = "; ".join(g.guard.source for g in item.guards[:3]) + ("; ..." if len(item.guards) > 3 else "")
        if not here:
            why = "a CI job that was not read may run its file" if unread else "no entry read sends it there"
            outcome = ItemOutcome.UNDETERMINED if unread else ItemOutcome.NOT_SELECTED
            return RunnerVerdict(runner=runner, outcome=outcome, reason=why, scheduled=False)
        skipping = [v for v in here if v.skips is Tri.TRUE and v.guard is not None and v.evaluation is not None]
        if len(skipping) == len(here) and all(v.guard is not None and v.guard.deselects for v in skipping):
            return RunnerVerdict(runner=runner, outcome=ItemOutcome.NOT_SELECTED, reason="a conftest hook deselects it there")
        if len(skipping) == len(here):
            first = skipping[0]
            assert first.guard is not None and first.evaluation is not None
            via = f" (through {first.guard.via})" if first.guard.via else ""
            return RunnerVerdict(
                runner=runner,
                outcome=ItemOutcome.SKIPS,
                guard=first.guard.guard.source + via,
                guard_class=self.evaluator.guard_class(first.guard, first.evaluation).value,
                reason="; ".join(first.evaluation.steps[:4]),
            )
        if all(v.skips is Tri.FALSE for v in here):
            return RunnerVerdict(runner=runner, outcome=ItemOutcome.RUNS, guard=guards, reason="no skip guard is true there")
        mixed = all(v.skips is not Tri.UNKNOWN for v in here)
        unknown = next((v.why for v in here if v.skips is Tri.UNKNOWN and v.why), "a skip guard's value is unknown there")
        why = "it skips in some of the jobs there and runs in others" if mixed else unknown
        return RunnerVerdict(runner=runner, outcome=ItemOutcome.UNDETERMINED, guard=guards, reason=why)

    def _unprofiled(self, item: TestItem, selected: Selected) -> _RunnerVerdict:
        return _doubted(_unprofiled_verdict(item, selected.entry, self._for(selected)), selected)

    def _verdict(self, item: TestItem, selected: Selected, profile: str) -> _RunnerVerdict:
        return _doubted(_verdict(item, selected.entry, profile, self._for(selected)), selected)

    def _for(self, selected: Selected) -> _Evaluator:
        """The evaluator for the command that selected the test: its values of the conftests' own options."""
        if not self.file_options:
            return self.evaluator
        invocation = self.invocation_of[id(selected.entry)]
        # The collector keeps each conftest's declarations for the whole audit: their ids name them.
        key = (id(invocation), tuple(id(o) for o in self.file_options))
        values = self.option_memo.get(key)
        if values is None:
            later = [o for o in self.file_options if o not in invocation.options]
            values = self.option_memo[key] = option_values(invocation.options, later, invocation.words)
        return self.evaluator.with_options(values)


def _doubted(verdict: _RunnerVerdict, selected: Selected) -> _RunnerVerdict:
    """A runner's verdict under what the selection left unsure, the same for runners with and without a profile:
    skips not all read (conftests pytest does not load) make any verdict unknown; a doubt that the test is there
    and selected as read makes "runs" unknown."""
    if selected.skips_unsure or (verdict.skips is Tri.FALSE and selected.doubts):
        stops = ("confcutdir", "pytest stops")
        why = next((d for d in selected.doubts if any(s in d for s in stops)), selected.doubts[0]) if selected.doubts else ""
        return replace(verdict, skips=Tri.UNKNOWN, why=f"{selected.entry.origin}: {why}", cause=Cause.SELECTION)
    return verdict


def _plain(entry: ScheduleEntry) -> Invocation:
    """An entry's invocation read from its selection's fields alone (no tree: in-memory schedules)."""
    selection = entry.selection
    assert isinstance(selection, PytestSelection)
    return Invocation(
        args=selection.paths,
        ignore=selection.ignore,
        deselect=selection.deselect,
        keyword=selection.keyword,
        markexpr=selection.markexpr,
    )


def combine(root: str, parts: Sequence[FileAudit], schedule: Schedule, notes: Sequence[str] = ()) -> PytestAuditReport:
    """The report of a tree from its files' audits (`notes`: entries whose pytest command runs no test)."""
    assumptions: list[str] = list(notes)
    for part in parts:
        assumptions.extend(a for a in part.assumptions if a not in assumptions)
    doubtful = tuple(t for p in parts for t in p.undetermined_tests)
    if doubtful:
        # Never an empty list of assumptions while tests are undetermined: the most frequent reasons, counted.
        top = "; ".join(f"{n} for: {r[:200]}" for r, n in reason_counts(doubtful)[:3])
        assumptions.append(
            f"{len(doubtful)} tests are undetermined: what CI does with them is not read (each is listed with its "
            f"reason in undetermined_tests); most common: {top}"
        )
    runners = sorted({p for e in schedule.pytest_entries() for p in e.profiles})
    return PytestAuditReport(
        root=root,
        files=len(parts),
        tests=sum(p.tests for p in parts),
        scheduled_tests=sum(p.scheduled for p in parts),
        runners=tuple(runners),
        findings=tuple(f for p in parts for f in p.findings),
        undetermined=sum(p.undetermined for p in parts),
        unread=schedule.unread,
        unread_only=sum(p.unread_only for p in parts),
        unknown_labels=schedule.unknown_labels,
        assumptions=tuple(assumptions),
        verdicts=tuple(v for p in parts for v in p.verdicts),
        undetermined_tests=doubtful,
    )


def audit_suite(
    root: str,
    files: Sequence[TestFile],
    schedule: Schedule,
    *,
    profiles: Mapping[str, RunnerProfile],
    packs: PredicatePacks,
    installed: frozenset[str] = frozenset(),
) -> PytestAuditReport:
    """Findings for every collected test against every schedule entry that selects it."""
    auditor = SuiteAuditor(schedule, profiles, packs, installed)
    return combine(root, [auditor.audit_file(f) for f in files], schedule)
