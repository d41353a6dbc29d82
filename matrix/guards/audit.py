"""Decide what a file's registrations and guards mean on the runners it is registered for; pure."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field

from matrix.core.model import RunnerProfile
from matrix.guards.evaluate import Evaluation, Tri, evaluate_guard
from matrix.guards.model import (
    IN_SCOPE_PLATFORMS,
    FileAnalysis,
    Guard,
    GuardFinding,
    GuardFindingKind,
    Registration,
)
from matrix.guards.predicates import PREDICATES, Predicate, RunnerFacts
from matrix.guards.suites import SuiteMap, target_of

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
    findings.extend(guard_findings(analysis, runners, settings))
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
            reason = f"{reg.function} targets {reg.platform.value}; runner profiles describe CUDA and GPU-less machines only"
            findings.append(finding(Kind.OUT_OF_SCOPE, reason))
            continue
        suite = reg.suite or ""
        target = target_of(reg, settings.suite_map, settings.runners)
        if reg.disabled is not None:
            findings.append(finding(Kind.DISABLED, f"suite {suite} disabled: {reg.disabled}", target.profiles))
            continue
        unscheduled = unscheduled_reasons(reg, settings)
        if unscheduled:
            findings.append(finding(Kind.UNSCHEDULED, "; ".join(unscheduled), target.profiles))
            continue
        if not target.profiles:
            findings.append(finding(Kind.UNMAPPED, f"suite {suite}: {target.how}; its guards are not evaluated"))
            continue
        active.extend(p for p in target.profiles if p not in active)
    ordered = tuple(name for name in settings.runners if name in active)
    return findings, ordered


def unscheduled_reasons(reg: Registration, settings: AuditSettings) -> list[str]:
    """Why no workflow would pick this registration up; empty when one does."""
    suite = reg.suite or ""
    reasons: list[str] = []
    if settings.suite_map.is_nightly_only(suite) and not reg.nightly:
        reasons.append(
            f"suite {suite} is run only by scheduled workflows, which select nightly=True registrations; "
            "this one has nightly=False"
        )
    if settings.known_suites is not None and suite not in settings.known_suites:
        close = difflib.get_close_matches(suite, sorted(settings.known_suites), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        reasons.append(f"suite {suite} is not in the --suites list{hint}")
    return reasons


def guard_findings(analysis: FileAnalysis, runners: tuple[str, ...], settings: AuditSettings) -> list[GuardFinding]:
    """Silent skips, tests that never run, and undetermined guards, over the file's runners."""
    if not runners or not analysis.guards:
        return []
    facts = {name: RunnerFacts(profile=settings.runners[name], installed=settings.installed) for name in runners}
    guards = analysis.guards
    verdict = {
        (index, name): evaluate_guard(guard, facts[name], analysis.names, settings.predicates)
        for index, guard in enumerate(guards)
        for name in runners
    }
    by_scope: dict[str, list[int]] = {}
    for index, guard in enumerate(guards):
        by_scope.setdefault(guard.scope, []).append(index)
    parents = {s.nodeid: s.parent for s in analysis.scopes}

    def chain(nodeid: str) -> list[str]:
        out: list[str] = []
        current: str | None = nodeid
        while current is not None:
            out.append(current)
            current = parents.get(current)
        return out[::-1]

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
                    nodeid=scope.nodeid, deciders=deciders, guards=guards, verdict=verdict, facts=facts, path=analysis.path
                )
            )
    for scope in analysis.scopes:
        if any(s in never for s in chain(scope.nodeid)):
            continue
        for runner in runners:
            hit = skipper(scope.nodeid, runner)
            if hit is not None and guards[hit].scope == scope.nodeid:
                reason = verdict[(hit, runner)].explain(facts[runner])
                findings.append(_finding(Kind.SILENT_SKIP, guards[hit], (runner,), reason))
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
) -> GuardFinding:
    used = [i for i in dict.fromkeys(deciders.values()) if i is not None]
    first = guards[used[0]]
    reasons = [verdict[(i, r)].explain(facts[r]) for r, i in deciders.items() if i is not None]
    return GuardFinding(
        kind=Kind.NEVER_RUNS,
        path=path,
        line=first.line,
        test=nodeid,
        runners=tuple(deciders),
        guard=" | ".join(dict.fromkeys(guards[i].source for i in used)),
        reason="skipped on every runner it is registered for: " + " | ".join(reasons),
    )


def _finding(kind: Kind, guard: Guard, runners: tuple[str, ...], reason: str) -> GuardFinding:
    path = guard.scope.split("::", 1)[0]
    return GuardFinding(
        kind=kind, path=path, line=guard.line, test=guard.scope, runners=runners, guard=guard.source, reason=reason
    )
