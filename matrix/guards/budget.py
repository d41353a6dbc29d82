"""Bounds on guard evaluation: nesting depth, steps, helper-call depth and integer size.

Audited files are untrusted: a 500-term sum, 500 stacked `not`s, a 4,000-digit literal squared or
`A1 = A*A` ... `A26` must each end quickly as "unknown, past the budget", never as a RecursionError,
a ValueError from int-to-str conversion, or minutes of big-integer arithmetic.
"""

from __future__ import annotations

import ast
import functools

from matrix.guards.predicates import Unknown


class OverBudget(Exception):
    """Raised inside the evaluator when a budget runs out; caught once per condition."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


class Budget:
    """Counters for one condition's evaluation."""

    MAX_DEPTH = 48  # nested expression levels (about three Python frames each)
    MAX_STEPS = 20_000  # expression nodes and statements visited
    MAX_CALLS = 6  # helper functions stepped into, one inside the other
    INT_BITS = 256  # larger integers are unknown; no guard needs them

    def __init__(self) -> None:
        self.depth = 0
        self.steps = 0
        self.calls = 0

    def enter(self) -> None:
        self.depth += 1
        self.steps += 1
        if self.depth > self.MAX_DEPTH:
            raise OverBudget(f"the expression is nested deeper than {self.MAX_DEPTH} levels")
        if self.steps > self.MAX_STEPS:
            raise OverBudget(f"more than {self.MAX_STEPS} evaluation steps")

    def leave(self) -> None:
        self.depth -= 1

    def tick(self) -> None:
        self.steps += 1
        if self.steps > self.MAX_STEPS:
            raise OverBudget(f"more than {self.MAX_STEPS} evaluation steps")


def bounded_int(value: int, what: str) -> object:
    """`value`, or unknown when it is past the integer budget."""
    if value.bit_length() > Budget.INT_BITS:
        return Unknown(why=f"{what} beyond {Budget.INT_BITS} bits")
    return value


_MAX_TEXT = 160


def text_of(value: object) -> str:
    """Short source text of a node, or repr of a value, safe on deep trees and huge values."""
    if isinstance(value, ast.AST):
        return _node_text(value)
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return "<too large to show>"
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


@functools.lru_cache(maxsize=8192)
def _node_text(node: ast.AST) -> str:
    # Nodes hash by identity and the cache keeps them alive, so a key is never reused; every runner's
    # evaluation of the same guard shares the text.
    if isinstance(node, ast.FunctionDef):
        return f"<function {node.name}>"
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        return "<too large to show>"
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."
