"""What evaluating a guard on a runner gives: `Tri` (true, false, unknown) and `Evaluation` (whether it skips, and the
facts that decided it). Records only, so a run that reads them back from a cache does not import the evaluator
(`matrix.guards.evaluate`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matrix.guards.predicates import RunnerFacts


class Tri(StrEnum):
    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    def negated(self) -> Tri:
        return {Tri.TRUE: Tri.FALSE, Tri.FALSE: Tri.TRUE}.get(self, Tri.UNKNOWN)


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """Whether a guard skips on a runner, and the facts that decided it (in evaluation order)."""

    skips: Tri
    steps: tuple[str, ...]
    # The runner facts consulted (predicate names such as `is_sm90_supported`, `torch.cuda.device_count`).
    facts: tuple[str, ...] = ()
    # Those of them that decided it: a fact read only by an `or` operand that was false (an `and` operand that
    # was true) before another operand settled the answer is left out. None: every fact consulted.
    decided: tuple[str, ...] | None = None

    @property
    def deciding(self) -> tuple[str, ...]:
        return self.facts if self.decided is None else self.decided

    @property
    def constant(self) -> bool:
        """True when no runner fact was involved: the guard says the same on every machine."""
        return self.skips is not Tri.UNKNOWN and not self.facts

    def explain(self, facts: RunnerFacts) -> str:
        verdict = {Tri.TRUE: "the guard is true, so it skips", Tri.FALSE: "the guard is false, so it runs"}
        shown = "; ".join(self.steps) or "no runner fact involved"
        return f"on {facts.describe()}: {shown} -> {verdict.get(self.skips, 'cannot tell whether it skips')}"
