"""The single truth: what a runner is expected to do with a cell."""

from __future__ import annotations

from collections.abc import Mapping

from matrix.core.conditions import describe, holds
from matrix.core.model import Cell, Expectation, Matrix, Outcome, Rule, RuleVerdict, RunnerProfile, Value
from matrix.core.versions import satisfies


def resolve_impl(matrix: Matrix, backend: str, sm: int | None) -> str | None:
    """The implementation a backend uses on an arch (e.g. trtllm_mha on sm90 -> xqa)."""
    if sm is None:
        return None
    for choice in matrix.impls:
        if choice.backend == backend and sm in choice.sms:
            return choice.impl
    return None if any(c.backend == backend for c in matrix.impls) else backend


def _subject_value(subject: str, cell: Cell, runner: RunnerProfile, impl: str | None) -> Value | None:
    if subject == "sm":
        return runner.sm
    if subject == "gpus":
        return runner.gpus
    if subject == "impl":
        return impl
    return cell.get(subject)


def _shown(subject: str, value: Value | None) -> str:
    if value is None:
        return {"sm": "runner has no GPU", "impl": "no implementation on this arch"}.get(subject, f"{subject} unset")
    return f"{subject} is {value}"


def _judge(rule: Rule, cell: Cell, runner: RunnerProfile, impl: str | None, versions: Mapping[str, str]) -> RuleVerdict:
    failures: list[str] = []
    for cond in rule.require:
        value = _subject_value(cond.subject, cell, runner, impl)
        if not holds(cond, value):
            failures.append(f"needs {describe(cond)}; {_shown(cond.subject, value)}")
    for req in rule.versions:
        installed = versions.get(req.library)
        if installed is None:
            failures.append(f"needs {req.library}{req.specifier}; {req.library} version unknown")
            continue
        # An unparsable version raises (VersionError, exit 2): it used to count as "requirement not met",
        # which turned must-run cells into expected skips.
        if not satisfies(req.library, installed, req.specifier):
            failures.append(f"needs {req.library}{req.specifier}; have {installed}")
    if failures:
        return RuleVerdict(rule=rule, satisfied=False, detail="; ".join(failures))
    met = [describe(c) for c in rule.require] + [f"{r.library}{r.specifier}" for r in rule.versions]
    return RuleVerdict(rule=rule, satisfied=True, detail="ok: " + ", ".join(met))


def expected(matrix: Matrix, cell: Cell, runner: RunnerProfile, versions: Mapping[str, str]) -> Expectation:
    """RUN, or SKIP with the trail of every rule that applied (blocking ones marked)."""
    backend = cell.get("backend")
    impl = resolve_impl(matrix, str(backend), runner.sm) if backend is not None else None
    trail: list[RuleVerdict] = []
    for rule in matrix.rules:
        if all(holds(c, _subject_value(c.subject, cell, runner, impl)) for c in rule.when):
            trail.append(_judge(rule, cell, runner, impl, versions))
    outcome = Outcome.SKIP if any(not v.satisfied for v in trail) else Outcome.RUN
    return Expectation(cell_id=cell.id, runner=runner.name, outcome=outcome, impl=impl, trail=tuple(trail))


def effective_versions(matrix: Matrix, detected: Mapping[str, str | None]) -> dict[str, str]:
    """Pinned versions overlaid with detected ones: a library that is not installed is judged at its pin."""
    merged = dict(matrix.pins)
    merged.update({lib: v for lib, v in detected.items() if v})
    return merged


def expectations(matrix: Matrix, runner: RunnerProfile, versions: Mapping[str, str]) -> dict[str, Expectation]:
    """Every cell's expectation on one runner, in matrix order."""
    return {cell.id: expected(matrix, cell, runner, versions) for cell in matrix.cells}
