"""Expression values remembered by the context values each evaluation read; pure.

A reusable workflow is walked once per distinct set of inputs, and every walk evaluates the same `if:`, `env:`
and `run:` expressions again; most of them read a few context values that are the same from one walk to the
next (`github.event_name`, `inputs.ref`). An evaluation is a function of the text and of the values the resolver
gives it, read in an order the text and the earlier values decide. So the values read are kept as a path in a
tree per text: a later evaluation of the text reads the same paths again (through its own resolver, so what a
read records on the way happens as before) and, when each value is the same as a stored one, takes the stored
result. Scalars compare by type and value (`1`, `1.0` and `True` are three values); an evaluation that read a
list or a mapping (a table, a mapping read lazily, an environment changed in place) is not stored: it is done in
full each time.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from matrix.schedule.expressions import OneOf, Resolver, Unknown

MAX_TEXTS = 4096  # distinct texts remembered
MAX_BRANCHES = 256  # distinct values stored after one read
MAX_ALTERNATIVES = 64  # values of a OneOf compared one by one


@dataclass(kw_only=True)
class _Read:
    """The next path the evaluation reads, and what follows for each value it has had."""

    path: tuple[str, ...]
    after: dict[Hashable, _Read | _Result] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class _Result:
    value: Any


class EvaluationMemo:
    """`value(body, lookup, compute)`: `compute(body, lookup)`, or the result of an earlier evaluation of `body`
    that read the same values (see the module docstring)."""

    def __init__(self) -> None:
        self._texts: dict[str, _Read | _Result] = {}
        self.hits = 0
        self.misses = 0

    def value(self, body: str, lookup: Resolver, compute: Callable[[str, Resolver], Any]) -> Any:
        node = self._texts.get(body)
        while isinstance(node, _Read):
            node = node.after.get(value_key(lookup(node.path)))
        if node is not None:
            self.hits += 1
            return node.value
        self.misses += 1
        reads: list[tuple[tuple[str, ...], Any]] = []

        def recording(path: tuple[str, ...]) -> Any:
            value = lookup(path)
            reads.append((path, value))
            return value

        result = compute(body, recording)
        self._store(body, reads, result)
        return result

    def _store(self, body: str, reads: list[tuple[tuple[str, ...], Any]], result: Any) -> None:
        keys = [value_key(value) for _, value in reads]
        if any(key is None for key in keys) or (body not in self._texts and len(self._texts) >= MAX_TEXTS):
            return
        if not reads:
            self._texts[body] = _Result(value=result)
            return
        node = self._texts.get(body)
        if node is None:
            node = self._texts[body] = _Read(path=reads[0][0])
        for index, key in enumerate(keys):
            if not isinstance(node, _Read) or node.path != reads[index][0]:
                return  # cannot happen for a pure evaluation; a store that does not fit is left out
            following = node.after.get(key)
            if following is None:
                if len(node.after) >= MAX_BRANCHES:
                    return
                last = index == len(keys) - 1
                following = _Result(value=result) if last else _Read(path=reads[index + 1][0])
                node.after[key] = following
            node = following


def value_key(value: Any) -> Hashable | None:
    """A key equal for two values exactly when an evaluation cannot tell them apart; None for a value that is not
    compared (a list or mapping: it may be large, read lazily, or changed in place later), never stored."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return (kind, value)
    if kind is float:
        return (kind, repr(value))  # -0.0 and 0.0 print differently; nan is not equal to itself
    if kind is Unknown:
        return (kind, value.text)
    if kind is OneOf and len(value.values) <= MAX_ALTERNATIVES:
        parts = [value_key(v) if type(v) is not OneOf else None for v in value.values]
        return None if None in parts else (kind, value.why, tuple(parts))
    return None
