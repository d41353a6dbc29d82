"""A guard that skips a test on registered runners, judged together with the matrix and where the test still runs.

- The matrix knows the backend the test tests (`matrix.registered_suite.tested`): where that backend runs (by
  `matrix.core.expect.expected`), the skip is an error, a missing guard arm, and the message names the rule; where it
  cannot run, the skip is by design (info).
- The matrix knows nothing of it: an arch gate on a runner while the test runs on another runner of the file or
  of the same suite is a registration that only ever skips (a warning, with a hint that fits a shared suite);
  anything else stays a silent-skip error.

A skip on every runner is `never-runs`, decided before this (the test then runs nowhere).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from matrix.core.finding import Finding
from matrix.guards.evaluation import Evaluation
from matrix.guards.model import Guard, GuardFindingKind, guard_finding
from matrix.guards.predicates import RunnerFacts
from matrix.registered_suite.intent import MatrixIntent

Kind = GuardFindingKind

# Facts of the GPU's architecture (sglang.srt.utils.common and torch); a gate that consults only these, and
# whether the GPU or a module is there at all, is an arch gate.
_ARCH = re.compile(r"^(is_sm\d+\w*|is_(blackwell|hopper|ampere)\w*|get_device_sm|torch\.cuda\.get_device_(capability|name))$")
_NEUTRAL = frozenset({"torch.cuda.is_available", "is_flashinfer_available", "is_cuda", "is_cuda_alike"})
_ARCH_PREDICATE = {9: "is_sm90_supported()", 10: "is_sm100_supported()", 12: "is_sm120_supported()"}


def is_arch_gate(evaluations: Sequence[Evaluation]) -> bool:
    """Every evaluation consulted an arch fact, and nothing but arch facts and availability."""
    for evaluation in evaluations:
        used = set(evaluation.facts)
        arch = {f for f in used if _ARCH.match(f)}
        if not arch or used - arch - _NEUTRAL:
            return False
    return bool(evaluations)


@dataclass(frozen=True, kw_only=True)
class Placement:
    """A registration's suite and the runners it puts the file on."""

    suite: str
    runners: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class SkipCase:
    """One guard that certainly skips one test on `skipped`; the test may still run on `others`."""

    path: str
    nodeid: str
    guard: Guard
    skipped: tuple[str, ...]
    others: tuple[str, ...]
    evaluations: Mapping[str, Evaluation]
    facts: Mapping[str, RunnerFacts]
    placements: tuple[Placement, ...]
    imports: tuple[str, ...] = ()


def _finding(kind: Kind, case: SkipCase, runners: tuple[str, ...], reason: str, hint: str) -> Finding:
    g = case.guard
    return guard_finding(
        kind, path=case.path, line=g.line, test=case.nodeid, runners=runners, guard=g.source, reason=reason, hint=hint
    )


def _explain(case: SkipCase, runners: Sequence[str]) -> str:
    return " | ".join(case.evaluations[r].explain(case.facts[r]) for r in runners)


def _admit(runner: RunnerFacts) -> str:
    cap = runner.profile.capability
    if cap is None:
        return "the runner's platform"
    return f"`{_ARCH_PREDICATE.get(cap[0], f'get_device_sm() == {runner.profile.sm}')}`"


def judge_skip(
    case: SkipCase,
    intent: MatrixIntent | None,
    server_args: Callable[[], frozenset[str]],
    fallback_hint: Callable[[], str],
) -> list[Finding]:
    """The findings of one skip: by the matrix when it knows what the test tests, else by where the test runs."""
    how = ""
    if intent is not None:
        subject = intent.subject(case.nodeid, imports=case.imports, server_args=server_args())
        how = subject.how
        if subject.backend is not None:
            return _by_matrix(case, intent, subject.backend, subject.how)
    if case.others and is_arch_gate([case.evaluations[r] for r in case.skipped]):
        return [_skip_only(case, how)]
    reason = _explain(case, case.skipped) + (f" | what it tests: {how}" if how else "")
    return [_finding(Kind.SILENT_SKIP, case, case.skipped, reason, fallback_hint())]


def _by_matrix(case: SkipCase, intent: MatrixIntent, backend: str, how: str) -> list[Finding]:
    verdicts = {r: intent.verdict(backend, case.facts[r].profile) for r in case.skipped}
    runs = tuple(r for r in case.skipped if verdicts[r].runs)
    cannot = tuple(r for r in case.skipped if not verdicts[r].runs)
    out: list[Finding] = []
    tests = f"the test tests {backend} ({how})"
    if runs:
        trail = "; ".join(dict.fromkeys(verdicts[r].trail for r in runs))
        reason = f"{_explain(case, runs)} | {tests}; {trail}"
        first = case.facts[runs[0]]
        hint = (
            f"the matrix says {backend} runs on {', '.join(runs)}: add {_admit(first)} to the guard so the test runs "
            "there (a missing arm); if the matrix is wrong, fix its rule"
        )
        out.append(_finding(Kind.SILENT_SKIP, case, runs, reason, hint))
    if cannot:
        trail = "; ".join(dict.fromkeys(verdicts[r].trail for r in cannot))
        reason = f"by design: {tests}; {trail}; it runs on {', '.join(case.others)} | {_explain(case, cannot)}"
        out.append(_finding(Kind.BY_DESIGN_SKIP, case, cannot, reason, ""))
    return out


def _skip_only(case: SkipCase, how: str) -> Finding:
    shared = [p for p in case.placements if set(p.runners) & set(case.skipped) and set(p.runners) & set(case.others)]
    skipped = ", ".join(case.skipped)
    runs = ", ".join(case.others)
    first = case.facts[case.skipped[0]]
    arch = f"sm{first.profile.sm}" if first.profile.sm is not None else "its platform"
    unknown = f" (the matrix does not say what it tests: {how})" if how else ""
    if shared:
        suites = ", ".join(dict.fromkeys(p.suite for p in shared))
        reason = (
            f"an arch gate: it skips on {skipped} and runs on {runs}, through the same suite {suites}{unknown} | "
            + _explain(case, case.skipped)
        )
        hint = (
            f"nothing to drop: suite {suites} also runs on {runs}, where the test runs; if it is meant for {arch} too, "
            f"add {_admit(first)} to the guard"
        )
    else:
        lonely = [p.suite for p in case.placements if set(p.runners) & set(case.skipped)]
        suites = ", ".join(dict.fromkeys(lonely)) or "its registration"
        reason = (
            f"an arch gate: the registration on {skipped} (suite {suites}) only ever skips this test, which runs on "
            f"{runs}{unknown} | " + _explain(case, case.skipped)
        )
        hint = (
            f"if the test is meant for {runs} only, nothing runs it on {skipped}: drop that registration unless other "
            f"tests of the file need it; if it should run on {arch}, add {_admit(first)} to the guard"
        )
    return _finding(Kind.SKIP_ONLY_REGISTRATION, case, case.skipped, reason, hint)
