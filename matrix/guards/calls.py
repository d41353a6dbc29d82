"""Stepping into a module's own helper functions while evaluating a guard (no execution).

Covered: parameters bound from literal-valued arguments, assignments (tuple unpacking included), `if`/`else`
with early returns, `return expr`, nested helper calls up to a depth budget. Anything else (loops, `try`,
`raise`, attribute assignment) makes the helper's result unknown, with the reason.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from enum import StrEnum

from matrix.guards.budget import Budget
from matrix.guards.predicates import PartialTuple, Unknown


class _Flow(StrEnum):
    FALLTHROUGH = "fallthrough"


_FALL = _Flow.FALLTHROUGH
Frame = dict[str, object]


class FunctionRunner:
    """Mixin for the evaluator: `value` and `truth` come from it; frames hold the helper's locals."""

    frames: list[Frame]
    budget: Budget

    def value(self, node: ast.expr) -> object:  # pragma: no cover - provided by the evaluator
        raise NotImplementedError

    def call_function(self, name: str, fn: ast.FunctionDef, call: ast.Call) -> object:
        """The value `fn(...)` returns on this runner, or Unknown with the reason."""
        if self.budget.calls >= Budget.MAX_CALLS:
            return Unknown(why=f"`{name}` is more than {Budget.MAX_CALLS} helper calls deep")
        frame = self._bind(fn, call)
        if isinstance(frame, Unknown):
            return frame
        self.budget.calls += 1
        self.frames.append(frame)
        try:
            result = self._block(fn.body)
        finally:
            self.frames.pop()
            self.budget.calls -= 1
        return None if result is _FALL else result

    def _bind(self, fn: ast.FunctionDef, call: ast.Call) -> Frame | Unknown:
        args = fn.args
        if args.vararg or args.kwarg or args.posonlyargs or any(isinstance(a, ast.Starred) for a in call.args):
            return Unknown(why=f"`{fn.name}` takes *args/**kwargs or positional-only parameters")
        names = [a.arg for a in args.args]
        if len(call.args) > len(names):
            return Unknown(why=f"`{fn.name}` called with too many arguments")
        given: dict[str, ast.expr] = dict(zip(names, call.args, strict=False))
        for kw in call.keywords:
            if kw.arg is None or kw.arg in given:
                return Unknown(why=f"`{fn.name}` called with **kwargs or a repeated argument")
            given[kw.arg] = kw.value
        defaults = dict(zip(names[len(names) - len(args.defaults) :], args.defaults, strict=True))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None})
        frame: Frame = {}
        for name in [*names, *(a.arg for a in args.kwonlyargs)]:
            node = given.get(name, defaults.get(name))
            if node is None:
                return Unknown(why=f"`{fn.name}` called without its argument {name!r}")
            frame[name] = self.value(node)
        if set(given) - set(frame):
            return Unknown(why=f"`{fn.name}` called with an unknown keyword")
        return frame

    def _block(self, body: Sequence[ast.stmt]) -> object:
        """Run statements; the returned value, or `_FALL` when the block ends without returning."""
        for index, stmt in enumerate(body):
            self.budget.tick()
            if isinstance(stmt, ast.Return):
                return None if stmt.value is None else self.value(stmt.value)
            if isinstance(stmt, ast.If):
                result = self._if(stmt, body[index + 1 :])
                if result is not _FALL:
                    return result
                continue
            problem = self._simple(stmt)
            if problem is not None:
                return problem
        return _FALL

    def _if(self, stmt: ast.If, rest: Sequence[ast.stmt]) -> object:
        test = self.value(stmt.test)
        if not isinstance(test, Unknown):
            return self._block(stmt.body if test else stmt.orelse)
        # Unknown test: follow both branches; the helper's result is known only when they agree.
        unknown = Unknown(why=f"depends on `{ast.unparse(stmt.test)[:80]}`, which is unknown")
        saved = dict(self.frames[-1])
        first = self._block(stmt.body)
        after_first = dict(self.frames[-1])
        self.frames[-1].clear()
        self.frames[-1].update(saved)
        second = self._block(stmt.orelse)
        if first is _FALL and second is _FALL:
            # Both fall through: names the branches set differently become unknown.
            frame = self.frames[-1]
            for name in set(frame) | set(after_first):
                a, b = frame.get(name, unknown), after_first.get(name, unknown)
                if isinstance(a, Unknown) or type(a) is not type(b) or a != b:
                    frame[name] = unknown
            return _FALL
        if first is _FALL or second is _FALL:
            # One branch returns, the other goes on: what follows must return the same value.
            if first is _FALL:
                self.frames[-1].clear()
                self.frames[-1].update(after_first)
            returned = second if first is _FALL else first
            later = self._block(rest)
            first, second = returned, unknown if later is _FALL else later
        if isinstance(first, Unknown) or isinstance(second, Unknown) or type(first) is not type(second) or first != second:
            return unknown
        return first

    def _simple(self, stmt: ast.stmt) -> Unknown | None:
        """Apply one straight-line statement to the frame; Unknown when the helper cannot be followed."""
        frame = self.frames[-1]
        if isinstance(stmt, ast.Assign):
            value = self.value(stmt.value)
            for target in stmt.targets:
                self._assign(target, value, frame)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            frame[stmt.target.id] = self.value(stmt.value)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            frame[stmt.target.id] = self.value(ast.BinOp(left=ast.Name(id=stmt.target.id), op=stmt.op, right=stmt.value))
        elif isinstance(stmt, ast.ImportFrom) and all(a.asname is None and a.name != "*" for a in stmt.names):
            pass  # `from sglang.srt.utils import is_blackwell` inside the helper: the name means what it says
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                frame[(alias.asname or alias.name).split(".")[0]] = Unknown(why="imported inside a helper")
        elif isinstance(stmt, ast.Expr | ast.Pass | ast.Assert | ast.Global | ast.Nonlocal):
            pass  # docstrings, logging calls and asserts do not change what the helper returns
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            frame[stmt.name] = Unknown(why="a function defined inside a helper")
        else:
            return Unknown(why=f"the helper uses `{type(stmt).__name__.lower()}`, which is not followed")
        return None

    def _assign(self, target: ast.expr, value: object, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            frame[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            names = target.elts
            parts = value.items if isinstance(value, PartialTuple) else value
            items = parts if isinstance(parts, tuple) and len(parts) == len(names) else None
            for i, element in enumerate(names):
                if isinstance(element, ast.Name):
                    frame[element.id] = items[i] if items is not None else Unknown(why="unpacking an unknown value")
