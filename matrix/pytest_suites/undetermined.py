"""The tests the pytest audit leaves undetermined, each with the reason where the doubt arose; pure.

A test is undetermined when no certain verdict follows from what was read: a fact one of its guards reads is
unknown on a runner it is sent to (the evaluator's `Unknown(why=...)`), the command that selects it is not read
as pytest reads it (a selection doubt), a CI job that was not read may run it, or it is sent to a runner with no
profile. Every such test is listed (JSON); text and Markdown summarise them by reason, most frequent first, so a
maintainer sees which CI text to change.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

# How many reasons the text and Markdown summaries show, and how long a reason may be there (the JSON list is
# complete and keeps each reason whole, up to MAX_REASON).
SHOWN_REASONS = 8
SHOWN_REASON_CHARS = 200
MAX_REASON = 1_000
_UNKNOWN_STEP = re.compile(r"^(?P<what>.*?) is unknown \((?P<why>.*)\)$", re.DOTALL)


class Cause(StrEnum):
    """Where the doubt about a test arose."""

    GUARD = "guard"  # a fact a guard reads is unknown on a runner the test is sent to
    SELECTION = "selection"  # whether the CI command collects and selects it is not read as pytest reads it
    UNREAD = "unread"  # a CI job that was not read may run it
    NO_PROFILE = "no-profile"  # a runner it is sent to has no profile


@dataclass(frozen=True, kw_only=True)
class UndeterminedTest:
    """One undetermined test: its node id, where it is defined, the runner the doubt is about (None when the
    doubt is about no one runner) and why; `runners`: every runner on which it is undetermined (the reason is the
    first one's)."""

    test: str
    path: str
    line: int
    runner: str | None
    reason: str
    cause: Cause
    runners: tuple[str, ...] = ()

    def doc(self) -> dict[str, object]:
        return {
            "test": self.test,
            "path": self.path,
            "line": self.line,
            "runner": self.runner,
            "reason": self.reason,
            "cause": self.cause.value,
            "runners": list(self.runners),
        }


# The words a run-time value's reason carries (`matrix.guards.predicates.run_time_value`).
_RUN_TIME = "known only at run time"


def bounded(text: str, limit: int = MAX_REASON) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def guard_reason(source: str, via: str, steps: Sequence[str]) -> str:
    """Why a guard is unknown on a runner: a value known only at run time that it reads (no CI text can settle
    it), else the first fact its evaluation could not read, else the guard itself."""
    late = [s for s in steps if _RUN_TIME in s and _UNKNOWN_STEP.match(s)]
    for step in (*late[:1], *steps):
        if step.startswith("whether "):  # the job environment's own account of an install it cannot tell
            return bounded(f"guard reads {step}")
        found = _UNKNOWN_STEP.match(step)
        if found is not None:
            what, why = found.group("what"), found.group("why")
            # `importorskip('x')` is unknown (whether x is installed ...): the fact itself says what is missing.
            return bounded(f"guard reads {why}" if why.startswith("whether ") else f"guard reads {what}: {why}")
    where = f" (through {via})" if via else ""
    first = source.splitlines()[0] if source else "a guard"
    return bounded(f"guard not decided: {first}{where}")


def unread_reason(origins: Sequence[str]) -> str:
    """A test only CI jobs that were not read may run (the first named; the JSON's `unread` lists them all)."""
    more = f" and {len(origins) - 1} more" if len(origins) > 1 else ""
    return bounded(f"only a CI job not read may run it ({origins[0]}{more})")


def reason_counts(tests: Iterable[UndeterminedTest]) -> list[tuple[str, int]]:
    """Each reason with the number of tests it leaves undetermined, most first (then by the reason's text)."""
    counts = Counter(t.reason for t in tests)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def summary_lines(tests: Sequence[UndeterminedTest], limit: int = SHOWN_REASONS) -> list[str]:
    """The text summary: one line per reason, the most frequent first, bounded in lines and length."""
    if not tests:
        return []
    counts = reason_counts(tests)
    out = [f"undetermined tests by reason ({len(tests)} tests, {len(counts)} reasons; --format json lists each test):"]
    for reason, count in counts[:limit]:
        out.append(f"  {count} {'test' if count == 1 else 'tests'}: {bounded(reason, SHOWN_REASON_CHARS)}")
    rest = counts[limit:]
    if rest:
        left = sum(n for _, n in rest)
        out.append(f"  ... {left} more tests under {len(rest)} other reasons")
    return out
