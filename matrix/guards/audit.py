"""Decide what a file's registrations and guards mean on the runners it is registered for; pure."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from matrix.core.model import RunnerProfile
from matrix.guards.evaluate import Evaluation, GuardEvaluator, Tri
from matrix.guards.hints import silent_skip_hint
from matrix.guards.model import (
    IN_SCOPE_PLATFORMS,
    FileAnalysis,
    Guard,
    GuardFinding,
    GuardFindingKind,
    GuardKind,
    Platform,
    Registration,
)
from matrix.guards.predicates import PREDICATES, Predicate, RunnerFacts
from matrix.guards.suites import SuiteMap, SuiteTarget, target_of
from matrix.schedule.model import Schedule, ScheduleEntry, SuiteSelection

Kind = GuardFindingKind


@dataclass(frozen=True, kw_only=True)
class AuditSettings:
    """What the audit knows besides the files: profiles, suite conventions, installed modules."""

    runners: Mapping[str, RunnerProfile]
    suite_map: SuiteMap = field(default_factory=SuiteMap)
    known_suites: frozenset[str] | None = None
    only_runners: tuple[str, ...] = ()
    installed: frozenset[str] = frozenset()
    predicates: Mapping[str, Predicate] = field(default_factory=lambda: PREDICATES)
    # What CI runs, read from its files (matrix.schedule): which runner, --nightly or not, which env.
    schedule: Schedule | None = None
    # Where each registration runs depends only on these settings: worked out once per distinct registration.
    targets: dict[tuple[str, str | None, str, bool], SuiteTarget] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class FileAudit:
    findings: tuple[GuardFinding, ...]
    registered: bool
    runners: tuple[str, ...]


def audit_file(analysis: FileAnalysis, settings: AuditSettings) -> FileAudit:
    """Findings for one analysed file; `--only-runners` keeps those that concern a named runner."""
    if analysis.syntax_error is not None:
        finding = GuardFinding(
            kind=Kind.UNPARSABLE,
            path=analysis.path,
            line=analysis.error_line,
            test=analysis.path,
            reason=f"{analysis.syntax_error}; the audit cannot read its registrations or guards",
        )
        return FileAudit(findings=(finding,), registered=False, runners=())
    findings, runners = registration_findings(analysis, settings)
    env = runner_env(analysis, runners, settings)
    if not analysis.registrations and analysis.is_test_file:
        findings.append(
            GuardFinding(
                kind=Kind.UNREGISTERED,
                path=analysis.path,
                line=1,
                test=analysis.path,
                reason="no register_*_ci(...) call: no CI suite runs this file",
            )
        )
    findings.extend(guard_findings(analysis, runners, settings, elsewhere=elsewhere_of(analysis, settings), env=env))
    findings = merge_findings(findings)
    if settings.only_runners:
        chosen = set(settings.only_runners)
        findings = [f for f in findings if chosen & set(f.runners) or f.kind is Kind.UNPARSABLE]
        runners = tuple(r for r in runners if r in chosen)
    return FileAudit(findings=tuple(findings), registered=bool(analysis.registrations), runners=runners)


def registration_findings(analysis: FileAnalysis, settings: AuditSettings) -> tuple[list[GuardFinding], tuple[str, ...]]:
    """Findings about the registrations, and the runners the file really runs on."""
    findings: list[GuardFinding] = []
    active: list[str] = []
    for reg in analysis.registrations:

        def finding(kind: Kind, reason: str, runners: tuple[str, ...] = (), reg: Registration = reg) -> GuardFinding:
            return GuardFinding(
                kind=kind, path=analysis.path, line=reg.line, test=analysis.path, runners=runners, guard=reg.source, reason=reason
            )

        if reg.problem is not None:
            findings.append(finding(Kind.UNPARSABLE, reg.problem))
            continue
        if reg.platform not in IN_SCOPE_PLATFORMS:
            if reg.disabled is not None:
                findings.append(finding(Kind.DISABLED, f"{reg.function} disabled: {reg.disabled}"))
                continue
            reason = f"{reg.function} targets {reg.platform.value}; runner profiles describe CUDA and GPU-less machines only"
            findings.append(finding(Kind.OUT_OF_SCOPE, reason))
            continue
        suite = reg.suite or ""
        target = target_for(reg, settings)
        if reg.disabled is not None:
            findings.append(finding(Kind.DISABLED, f"suite {suite} disabled: {reg.disabled}", target.profiles))
            continue
        unscheduled = unscheduled_reasons(reg, settings)
        if unscheduled:
            findings.append(finding(Kind.UNSCHEDULED, "; ".join(unscheduled), target.profiles))
            continue
        unknown = unknown_label_reason(reg, settings, target)
        if unknown:
            findings.append(finding(Kind.UNKNOWN_LABEL, unknown, target.profiles))
        if not target.profiles:
            if not unknown:
                findings.append(finding(Kind.UNMAPPED, f"suite {suite}: {target.how}; its guards are not evaluated"))
            continue
        active.extend(p for p in target.profiles if p not in active)
    ordered = tuple(name for name in settings.runners if name in active)
    return findings, ordered


def _hw(reg: Registration) -> str:
    return "cpu" if reg.platform is Platform.CPU else "cuda"


def selecting_runs(reg: Registration, schedule: Schedule) -> tuple[ScheduleEntry, ...]:
    """The schedule entries that select this registration: same suite and hw, `--nightly` equal to its flag."""
    return schedule.suite_entries(reg.suite or "", _hw(reg), reg.nightly)


def suite_runs(schedule: Schedule, suite: str, hw: str) -> tuple[ScheduleEntry, ...]:
    """Entries running `suite` on `hw`, with or without `--nightly`."""
    return schedule.suite_entries(suite, hw, False) + schedule.suite_entries(suite, hw, True)


def target_for(reg: Registration, settings: AuditSettings) -> SuiteTarget:
    """Profiles of the selecting schedule entries (their runs-on labels) when a schedule is read, else the suite map."""
    key = (reg.suite or "", reg.runner_config, reg.platform.value, reg.nightly)
    if key not in settings.targets:
        settings.targets[key] = _target_for(reg, settings)
    return settings.targets[key]


def _target_for(reg: Registration, settings: AuditSettings) -> SuiteTarget:
    if settings.schedule is not None:
        entries = selecting_runs(reg, settings.schedule)
        names = {name for e in entries for name in e.profiles}
        # The machines the selecting jobs run on, as they are: `run_suite.py --hw cpu` in an H100 job runs the
        # CPU registrations on that H100 host.
        found = tuple(n for n in settings.runners if n in names)
        if found:
            labels = sorted({label for e in entries if set(e.profiles) & set(found) for label in e.labels})
            return SuiteTarget(profiles=found, how=f"runs-on {', '.join(labels)} in the workflows")
    return target_of(reg, settings.suite_map, settings.runners)


def unknown_label_reason(reg: Registration, settings: AuditSettings, target: SuiteTarget) -> str:
    """Why the selecting jobs' runners are not known: their labels name no profile (of this platform)."""
    if settings.schedule is None:
        return ""
    entries = selecting_runs(reg, settings.schedule)
    lost = [e for e in entries if not any(n in settings.runners for n in e.profiles)]
    if not lost or (len(lost) < len(entries) and target.how.endswith("in the workflows")):
        return ""
    labels = list(dict.fromkeys(", ".join(e.labels) or "(none)" for e in lost))
    unknown = {str(u.origin): u for u in settings.schedule.unknown_labels}
    nearest = list(dict.fromkeys(n for e in lost for n in (unknown[str(e.origin)].nearest if str(e.origin) in unknown else ())))
    origin = lost[0].origin
    reason = (
        f"suite {reg.suite} runs on runs-on {' | '.join(labels)} ({origin}), a label no runner profile knows"
        + (f" (nearest profiles: {', '.join(nearest)})" if nearest else "")
        + "; add it to a profile's labels or former_labels"
    )
    if target.profiles:
        reason += f"; its guards are evaluated on {', '.join(target.profiles)} from the suite map instead"
    else:
        reason += "; its guards are not evaluated"
    return reason


def runner_env(analysis: FileAnalysis, runners: tuple[str, ...], settings: AuditSettings) -> dict[str, dict[str, str]]:
    """Per runner, the env every selecting workflow job sets alike (a variable set differently is unknown)."""
    if settings.schedule is None:
        return {}
    out: dict[str, dict[str, str]] = {}
    for name in runners:
        envs = [
            dict(entry.env)
            for reg in analysis.registrations
            if reg.problem is None and reg.platform in IN_SCOPE_PLATFORMS
            for entry in selecting_runs(reg, settings.schedule)
            if name in entry.profiles
        ]
        if envs:
            out[name] = {k: v for k, v in envs[0].items() if all(e.get(k) == v for e in envs[1:])}
            for k in {k for e in envs for k in e} - set(out[name]):
                out[name][k] = RUN_TIME  # set by some selecting jobs only, or differently: not known
    return out


RUN_TIME = "${{ run time }}"


def unscheduled_reasons(reg: Registration, settings: AuditSettings) -> list[str]:
    """Why no workflow would pick this registration up; empty when one does."""
    suite = reg.suite or ""
    reasons: list[str] = []
    schedule = settings.schedule
    if schedule is not None:
        runs = suite_runs(schedule, suite, _hw(reg))
        if not runs:
            suites = sorted({e.selection.suite for e in schedule.entries if isinstance(e.selection, SuiteSelection)})
            close = difflib.get_close_matches(suite, suites, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            reasons.append(f"no workflow job runs suite {suite}{hint}")
        elif not selecting_runs(reg, schedule):
            first = runs[0]
            how = (
                "with --nightly"
                if isinstance(first.selection, SuiteSelection) and first.selection.nightly
                else "without --nightly"
            )
            reasons.append(
                f"registered with nightly={reg.nightly}, but suite {suite} only runs {how} ({first.origin}); "
                "run_suite.py keeps a registration only when its nightly flag matches"
            )
    elif settings.suite_map.is_nightly_only(suite) and not reg.nightly:
        reasons.append(
            f"suite {suite} is run only by scheduled workflows, which select nightly=True registrations; "
            "this one has nightly=False"
        )
    if settings.known_suites is not None and suite not in settings.known_suites:
        close = difflib.get_close_matches(suite, sorted(settings.known_suites), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        reasons.append(f"suite {suite} is not in the --suites list{hint}")
    return reasons


def elsewhere_of(analysis: FileAnalysis, settings: AuditSettings) -> tuple[str, ...]:
    """Registrations that may run the file where no profile can tell: other platforms and unmapped suites."""
    out: list[str] = []
    for reg in analysis.registrations:
        if reg.problem is not None or reg.disabled is not None:
            continue
        if reg.platform not in IN_SCOPE_PLATFORMS:
            out.append(f"{reg.function} (suite {reg.suite})")
        elif not target_for(reg, settings).profiles:
            out.append(f"{reg.function} (suite {reg.suite}, unmapped)")
    return tuple(dict.fromkeys(out))


def merge_findings(findings: list[GuardFinding]) -> list[GuardFinding]:
    """One finding per test and kind: runners, guards and reasons of the same (path, test, kind) are joined."""
    merged: dict[tuple[Kind, str, str], GuardFinding] = {}
    for f in findings:
        key = (f.kind, f.path, f.test)
        seen = merged.get(key)
        if seen is None:
            merged[key] = f
            continue
        merged[key] = replace(
            seen,
            runners=tuple(dict.fromkeys((*seen.runners, *f.runners))),
            guard=_join(seen.guard, f.guard),
            reason=_join(seen.reason, f.reason),
            hint=seen.hint or f.hint,
        )
    return list(merged.values())


def _join(a: str, b: str) -> str:
    parts = [p for p in (a, b) if p]
    return " | ".join(dict.fromkeys(" | ".join(parts).split(" | ")))


def guard_findings(
    analysis: FileAnalysis,
    runners: tuple[str, ...],
    settings: AuditSettings,
    elsewhere: tuple[str, ...] = (),
    env: Mapping[str, Mapping[str, str]] | None = None,
) -> list[GuardFinding]:
    """Silent skips, tests that never run, deliberate disables and undetermined guards, over the file's runners."""
    if not runners or not analysis.guards:
        return []
    env = env or {}
    open_names = frozenset(settings.schedule.ci_names) if settings.schedule is not None else frozenset()
    facts = {
        name: RunnerFacts(
            profile=settings.runners[name],
            installed=settings.installed,
            env=env.get(name, {}),
            env_closed=name in env,
            env_open=open_names,
        )
        for name in runners
    }
    early = tuple(g for g in analysis.guards if g.kind is GuardKind.EARLY_RETURN)
    guards = tuple(g for g in analysis.guards if g.kind is not GuardKind.EARLY_RETURN)
    evaluate = GuardEvaluator(analysis.names, settings.predicates)
    verdict = {(index, name): evaluate(guard, facts[name]) for index, guard in enumerate(guards) for name in runners}
    by_scope: dict[str, list[int]] = {}
    for index, guard in enumerate(guards):
        by_scope.setdefault(guard.scope, []).append(index)
    parents = {s.nodeid: s.parent for s in analysis.scopes}

    chains: dict[str, list[str]] = {}

    def chain(nodeid: str) -> list[str]:
        if nodeid not in chains:
            out: list[str] = []
            current: str | None = nodeid
            while current is not None:
                out.append(current)
                current = parents.get(current)
            chains[nodeid] = out[::-1]
        return chains[nodeid]

    def skipper(nodeid: str, runner: str) -> int | None:
        """The outermost guard that certainly skips `nodeid` on `runner`."""
        for scope in chain(nodeid):
            for index in by_scope.get(scope, []):
                if verdict[(index, runner)].skips is Tri.TRUE:
                    return index
        return None

    findings: list[GuardFinding] = []
    never: set[str] = set()
    for scope in analysis.scopes:
        if any(s in never for s in chain(scope.nodeid)[:-1]):
            continue
        deciders = {r: skipper(scope.nodeid, r) for r in runners}
        if all(d is not None for d in deciders.values()):
            never.add(scope.nodeid)
            findings.append(
                _never_runs(
                    nodeid=scope.nodeid,
                    deciders=deciders,
                    guards=guards,
                    verdict=verdict,
                    facts=facts,
                    path=analysis.path,
                    elsewhere=elsewhere,
                    platforms=frozenset(r.platform for r in analysis.registrations if r.problem is None and r.disabled is None),
                )
            )
    for scope in analysis.scopes:
        if any(s in never for s in chain(scope.nodeid)):
            continue
        by_guard: dict[int, list[str]] = {}
        for runner in runners:
            hit = skipper(scope.nodeid, runner)
            if hit is not None and guards[hit].scope == scope.nodeid:
                by_guard.setdefault(hit, []).append(runner)
        for hit, skipped in by_guard.items():
            reason = " | ".join(verdict[(hit, r)].explain(facts[r]) for r in skipped)
            hint = silent_skip_hint(verdict[(hit, skipped[0])], facts[skipped[0]], every=tuple(skipped))
            findings.append(replace(_finding(Kind.SILENT_SKIP, guards[hit], tuple(skipped), reason), hint=hint))
    for guard in early:
        if any(s in never for s in chain(guard.scope)):
            continue
        passing: list[str] = []
        reasons: list[str] = []
        for runner in runners:
            if skipper(guard.scope, runner) is not None:
                continue  # skipped before the body runs: already reported as a skip
            result = evaluate(guard, facts[runner])
            if result.skips is Tri.TRUE and not result.constant:
                passing.append(runner)
                reasons.append(result.explain(facts[runner]).replace("the guard is true, so it skips", "it returns early"))
        if passing:
            hint = (
                "the test returns before testing anything and is counted as a pass: make it a visible skip "
                "(self.skipTest(...) / pytest.skip(...)) so CI reports it, or drop the early return"
            )
            findings.append(replace(_finding(Kind.SILENT_PASS, guard, tuple(passing), " | ".join(reasons)), hint=hint))
    for index, guard in enumerate(guards):
        if any(s in never for s in chain(guard.scope)):
            continue
        unknown = [r for r in runners if verdict[(index, r)].skips is Tri.UNKNOWN and skipper(guard.scope, r) is None]
        if unknown:
            steps = list(dict.fromkeys(s for r in unknown for s in verdict[(index, r)].steps))
            reason = f"cannot tell whether it skips on {', '.join(unknown)}: {'; '.join(steps)}"
            findings.append(_finding(Kind.UNDETERMINED, guard, tuple(unknown), reason))
    return findings


def _never_runs(
    *,
    nodeid: str,
    deciders: Mapping[str, int | None],
    guards: tuple[Guard, ...],
    verdict: Mapping[tuple[int, str], Evaluation],
    facts: Mapping[str, RunnerFacts],
    path: str,
    elsewhere: tuple[str, ...] = (),
    platforms: frozenset[Platform] = frozenset(),
) -> GuardFinding:
    used = [i for i in dict.fromkeys(deciders.values()) if i is not None]
    first = guards[used[0]]
    evaluations = {r: verdict[(i, r)] for r, i in deciders.items() if i is not None}
    guard = " | ".join(dict.fromkeys(guards[i].source for i in used))
    twin = _platform_only(evaluations.values(), platforms)
    if twin is not None:
        # A ROCm/NPU/XPU-only test in a file that also registers that platform runs where it belongs.
        return GuardFinding(
            kind=Kind.OUT_OF_SCOPE,
            path=path,
            line=first.line,
            test=nodeid,
            runners=tuple(deciders),
            guard=guard,
            reason=(
                f"a {_PLATFORM_NAMES[twin]}-only test: it skips on the CUDA/CPU runners ({', '.join(deciders)}) and "
                f"runs through the file's register_{twin.value}_ci registration, which no runner profile describes"
            ),
        )
    if all(e.constant for e in evaluations.values()):
        # The same skip on every machine: a deliberate disable, not an arch mismatch.
        return GuardFinding(
            kind=Kind.DISABLED_BY_SKIP,
            path=path,
            line=first.line,
            test=nodeid,
            runners=tuple(deciders),
            guard=guard,
            reason="an unconditional skip: it skips on every machine, whatever the runner",
            hint='say so in the registration instead: register_cuda_ci(..., disabled="<why>"), so CI reports it as disabled',
        )
    reasons = [e.explain(facts[r]) for r, e in evaluations.items()]
    where = ", ".join(deciders)
    head = f"skipped on every CUDA/CPU runner it is registered for ({where})"
    if elsewhere:
        head += f"; it may still run through {', '.join(elsewhere)}, which no runner profile describes"
    else:
        head = f"skipped on every runner it is registered for ({where})"
    runner = next(iter(evaluations))
    return GuardFinding(
        kind=Kind.NEVER_RUNS,
        path=path,
        line=first.line,
        test=nodeid,
        runners=tuple(deciders),
        guard=guard,
        reason=f"{head}: " + " | ".join(reasons),
        hint=silent_skip_hint(evaluations[runner], facts[runner], every=tuple(deciders)),
    )


# Predicates that say "this is a ROCm / NPU / XPU machine" (false on every CUDA and CPU profile).
PLATFORM_FACTS = {
    "is_hip": Platform.AMD,
    "torch.version.hip": Platform.AMD,
    "is_npu": Platform.NPU,
    "is_xpu": Platform.XPU,
}


_PLATFORM_NAMES = {Platform.AMD: "ROCm", Platform.NPU: "NPU", Platform.XPU: "XPU"}


def _platform_only(evaluations: Iterable[Evaluation], platforms: frozenset[Platform]) -> Platform | None:
    """The platform a never-run test is written for, when only platform facts decided it and the file registers it."""
    found: set[Platform] = set()
    for evaluation in evaluations:
        if not evaluation.facts or any(f not in PLATFORM_FACTS for f in evaluation.facts):
            return None
        found.update(PLATFORM_FACTS[f] for f in evaluation.facts)
    if len(found) == 1 and found <= platforms:
        return found.pop()
    return None


def _finding(kind: Kind, guard: Guard, runners: tuple[str, ...], reason: str) -> GuardFinding:
    path = guard.scope.split("::", 1)[0]
    return GuardFinding(
        kind=kind, path=path, line=guard.line, test=guard.scope, runners=runners, guard=guard.source, reason=reason
    )
