"""Three-valued evaluation of a guard condition on one runner profile; parses, never executes.

The evaluator steps into the module's own helper functions (`FunctionRunner`) and stays within the budget of
`matrix.guards.predicates`: an expression past it is unknown with the reason, never an exception.
"""

from __future__ import annotations

import ast
import functools
import itertools
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from matrix.guards import decorated
from matrix.guards.decorated import DecoratedReader
from matrix.guards.evaluation import Evaluation, Tri
from matrix.guards.model import (
    AlwaysSkips,
    CaseLayers,
    CaseSearch,
    ExprCondition,
    Guard,
    Linked,
    MissingModules,
    ModuleNames,
    OpaqueCondition,
    SkipCondition,
    dotted,
)
from matrix.guards.platform import PLATFORM_ATTRIBUTES
from matrix.guards.predicates import (
    ATTRIBUTES,
    BUILTINS,
    CONSTANTS,
    NOT_ENV,
    PREDICATES,
    STR_METHODS,
    VALUE_CALLS,
    Budget,
    KnownMembers,
    OverBudget,
    PartialTuple,
    PartText,
    Predicate,
    Record,
    RunnerFacts,
    SomeText,
    Unknown,
    VersionRange,
    bounded_int,
    distribution_version,
    environment,
    importable,
    lookup,
    module_version,
    partial_compare,
    plain,
    run_time_value,
    text_of,
    unset_variable,
)
from matrix.guards.source import IMPORTABLE, TRY_VALUE, VERSION_BELOW, catches_import_error, resolve, tried_modules
from matrix.schedule.environment.versions import is_version, parse_version, range_decides

if TYPE_CHECKING:
    from packaging.version import Version

# --- helper calls -----------------------------------------------------------------------------------------------------
# Stepping into a module's own helper functions while evaluating a guard (no execution).
#
# Covered: parameters bound from literal-valued arguments, assignments (tuple unpacking included), `if`/`else`
# with early returns, `return expr`, nested helper calls up to a depth budget. Anything else (loops, `try`,
# `raise`, attribute assignment) makes the helper's result unknown, with the reason.


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
            if isinstance(stmt, ast.Try) and not stmt.finalbody:
                result = self._try(stmt)
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

    def _try(self, stmt: ast.Try) -> object:
        """A `try` in a helper: its body's outcome when that body cannot raise here (every value in it known, no
        statement that may raise unseen); otherwise known only when the body and every handler agree."""
        imported = self._import_try(stmt)
        if imported is not None and not isinstance(imported, Unknown):
            return imported
        frame = self.frames[-1]
        saved = dict(frame)
        first = self._block(stmt.body)
        if first is _FALL:
            first = self._block(stmt.orelse)
        after_try = dict(frame)
        quiet = not _may_raise(stmt.body) and not isinstance(first, Unknown)
        if quiet and not any(isinstance(v, Unknown) for k, v in frame.items() if saved.get(k) is not v):
            return first
        unknown = imported if imported is not None else Unknown(why="a helper's `try` whose branches disagree")
        outcomes: list[tuple[object, Frame]] = [(first, after_try)]
        for handler in stmt.handlers:
            frame.clear()
            frame.update(saved)
            if handler.name:
                frame[handler.name] = Unknown(why="an exception object")
            outcomes.append((self._block(handler.body), dict(frame)))
        results = [r for r, _ in outcomes]
        frame.clear()
        frame.update(after_try)
        if all(r is _FALL for r in results):
            for name in set().union(*(f.keys() for _, f in outcomes)):
                values = [f.get(name, unknown) for _, f in outcomes]
                if any(isinstance(v, Unknown) or type(v) is not type(values[0]) or v != values[0] for v in values):
                    frame[name] = unknown
            return _FALL
        if any(r is _FALL or isinstance(r, Unknown) or type(r) is not type(results[0]) or r != results[0] for r in results):
            return unknown
        return results[0]

    def _import_try(self, stmt: ast.Try) -> object | None:
        """`try: import m` then statements that cannot raise unseen, one handler that catches ImportError (`return
        True` / `except ImportError: return False`): the body's outcome where every module imports on the job, the
        handler's where one certainly does not, else why that is unknown. None for a `try` of any other shape."""
        if len(stmt.handlers) != 1 or stmt.orelse or stmt.handlers[0].name or not catches_import_error(stmt.handlers[0]):
            return None
        modules = tried_modules(stmt.body)
        rest = [s for s in stmt.body if not isinstance(s, ast.Import | ast.ImportFrom)]
        relative = any(isinstance(s, ast.ImportFrom) and s.level for s in stmt.body)
        if not modules or relative or _may_raise(rest):
            return None
        call = ast.Call(func=ast.Name(id=IMPORTABLE, ctx=ast.Load()), args=[ast.Constant(value=m) for m in modules], keywords=[])
        answer = self.value(call)  # the evaluator answers `__importable__` from the job's installs
        if isinstance(answer, Unknown):
            return answer
        return self._block(stmt.body if answer else stmt.handlers[0].body)

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
        elif isinstance(stmt, ast.Import) and all(a.asname is None for a in stmt.names):
            pass  # `import subprocess` inside the helper: the module, as at module level
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                frame[(alias.asname or alias.name).split(".")[0]] = Unknown(why="imported inside a helper")
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _stops(stmt.value):
            # `pytest.skip("no x")` in a helper ends the collection or the test where it runs: not a statement the
            # helper goes on after
            return Unknown(why=f"the helper calls {dotted(stmt.value.func)}(), which ends the test where it runs")
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


# Calls that end a test or the process where they run: pytest's outcomes (`_pytest/outcomes.py`: skip, fail, xfail,
# exit, importorskip), unittest's `self.skipTest`, `sys.exit`, `os._exit`, `os.abort`.
_STOPPING = frozenset({"skip", "fail", "xfail", "exit", "importorskip", "skipTest", "_exit", "abort"})
_STOPPING_OWNERS = frozenset({"", "pytest", "self", "sys", "os", "unittest"})


def _stops(call: ast.Call) -> bool:
    """Whether a call made for its effect is one of those that end the test (`pytest.skip(...)`, `skip(...)` after
    `from pytest import skip`, `sys.exit(1)`)."""
    owner, _, last = (dotted(call.func) or "").rpartition(".")
    return last in _STOPPING and owner in _STOPPING_OWNERS


def _may_raise(body: Sequence[ast.stmt]) -> bool:
    """Statements whose failure the evaluator would not see: calls made for their effect, imports, raises."""
    return any(
        isinstance(n, ast.Import | ast.ImportFrom | ast.Raise | ast.Assert | ast.With | ast.For | ast.While | ast.Delete)
        or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Call | ast.Await))
        for stmt in body
        for n in ast.walk(stmt)
        if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda)
    )


# --- the evaluator ----------------------------------------------------------------------------------------------------
# Three-valued evaluation of a guard condition on one runner profile; parses, never executes.
#
# Evaluation is bounded: nesting depth, steps, helper-call depth and integer size all have a budget, and an
# expression past it is unknown with the reason (never an exception, never unbounded arithmetic).


def tri_of(value: object) -> Tri:
    if isinstance(value, SomeText):
        return Tri.TRUE  # set, and not empty
    if isinstance(value, Unknown):
        return Tri.UNKNOWN
    return Tri.TRUE if bool(value) else Tri.FALSE


# Fact reads kept for `Evaluation.decided` (the evaluation budget bounds them long before this).
_MAX_READS = 4096

_ORDER: Mapping[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_ARITH: Mapping[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_MAX_STEPS_SHOWN = 40


class _Evaluator(FunctionRunner, DecoratedReader):
    """Walks one expression; records leaf facts as steps. Only reads the tree."""

    def __init__(
        self, facts: RunnerFacts, names: ModuleNames, local: Mapping[str, ast.expr | None], table: Mapping[str, Predicate]
    ):
        self.facts = facts
        self.current = names
        # The module each function reached through a link was read in (by the function node's id).
        self.homes: dict[int, ModuleNames] = {}
        self.imports = names.import_map
        # Shared per file: never written to here.
        self.aliases: Mapping[str, ast.expr | None] = {**names.alias_map, **local} if local else names.alias_map
        self.local = frozenset(local)
        self.defined = names.defined
        self.functions = names.function_map
        self.ambiguous = names.ambiguous
        self.linker = names.linker
        self.table = table
        self.steps: list[str] = []
        self.used: list[str] = []
        # Every read of a fact in order, and the spans of it that an operand passed over by a short-circuit read.
        self.reads: list[str] = []
        self.passed: list[tuple[int, int]] = []
        self.active: set[str] = set()
        self.memo: dict[int, object] = {}
        self.active_links: set[int] = set()
        self.frames: list[dict[str, object]] = []
        self.budget = Budget()
        # Every read of a runner fact and what it gave: another runner giving the same answers to all of them
        # evaluates the guard the same way, step for step (see GuardEvaluator).
        self.probes: list[tuple[Callable[[RunnerFacts], object], object]] = []

    def probe(self, read: Callable[[RunnerFacts], object]) -> object:
        value = read(self.facts)
        self.probes.append((read, value))
        return value

    def note(self, text: str, value: object) -> None:
        shown = _shown(value)
        step = f"{text} is {shown}"
        if step not in self.steps and len(self.steps) < _MAX_STEPS_SHOWN:
            self.steps.append(step)

    def use(self, fact: str) -> None:
        if fact not in self.used:
            self.used.append(fact)
        if len(self.reads) < _MAX_READS:
            self.reads.append(fact)

    def decided(self) -> tuple[str, ...]:
        out: list[str] = []
        for i, fact in enumerate(self.reads):
            if fact not in out and not any(start <= i < end for start, end in self.passed):
                out.append(fact)
        return tuple(out) if out else tuple(self.used)

    def truth(self, node: ast.expr) -> Tri:
        return tri_of(self.value(node))

    def value(self, node: ast.expr) -> object:
        self.budget.enter()
        try:
            method = _DISPATCH.get(type(node))
            if method is None:
                result: object = Unknown(why="not a known guard expression")
                self.note(text_of(node), result)
                return result
            found: object = method(self, node)
            return found
        finally:
            self.budget.depth -= 1

    def _Constant(self, node: ast.Constant) -> object:
        if isinstance(node.value, int) and not isinstance(node.value, bool):
            return bounded_int(node.value, "an integer literal")
        return node.value

    def _Tuple(self, node: ast.Tuple | ast.List) -> object:
        items = [self.value(e) for e in node.elts]
        unknown = next((i for i in items if isinstance(i, Unknown)), None)
        if unknown is None:
            return tuple(items)
        return PartialTuple(why=unknown.why, items=tuple(items))

    _List = _Tuple

    def _Set(self, node: ast.Set) -> object:
        # `{(9, 0), (10, 0)}`: membership is all a guard asks of a set literal; an unhashable member stays unknown.
        items = [self.value(e) for e in node.elts]
        unknown = next((i for i in items if isinstance(i, Unknown)), None)
        if unknown is not None:
            return plain(unknown)
        try:
            return frozenset(items)
        except TypeError:
            return Unknown(why="a set of unhashable values")

    def _Name(self, node: ast.Name) -> object:
        name = node.id
        if self.frames and name in self.frames[-1]:
            return self.frames[-1][name]
        if name in self.aliases:
            bound = self.aliases[name]
            if bound is None:
                result: object = Unknown(why=f"`{name}` is bound more than once")
            elif name in self.active:
                result = Unknown(why=f"`{name}` refers to itself")
            else:
                return self._alias(name, bound)
        elif name in self.ambiguous:
            result = Unknown(why=f"`{name}` is bound more than one way")
        elif name in self.functions:
            return self.functions[name]
        else:
            linked = self._link(name)
            if linked is not None:
                return self._linked_value(name, linked)
            imported = PLATFORM_ATTRIBUTES.get(resolve(name, self.imports)) if name in self.imports else None
            if imported is not None:
                # `from torch.testing._internal.common_utils import IS_WINDOWS`: a fact of the runner
                self.use(resolve(name, self.imports))
                result = self.probe(imported)
            else:
                result = Unknown(why="not a known name")
        self.note(name, result)
        return result

    # --- names the audited project defines in another file -------------------------------------------------------

    def _link(self, name: str) -> Linked | None:
        head = name.partition(".")[0]
        if self.linker is None or head in self.defined or head in self.ambiguous or head in self.local:
            return None
        return self.linker.link(name)

    def _enter(self, names: ModuleNames) -> tuple[Any, ...]:
        """Evaluate in another module's names (a linked helper or constant); returns what `_leave` restores."""
        saved = (
            self.imports,
            self.aliases,
            self.local,
            self.defined,
            self.functions,
            self.ambiguous,
            self.linker,
            self.frames,
            self.current,
        )
        self.current = names
        self.imports, self.aliases, self.local = names.import_map, names.alias_map, frozenset()
        self.defined, self.functions, self.ambiguous = names.defined, names.function_map, names.ambiguous
        self.linker, self.frames = names.linker, []
        return saved

    def _leave(self, saved: tuple[Any, ...]) -> None:
        (
            self.imports,
            self.aliases,
            self.local,
            self.defined,
            self.functions,
            self.ambiguous,
            self.linker,
            self.frames,
            self.current,
        ) = saved

    def _linked_value(self, name: str, linked: Linked) -> object:
        if isinstance(linked.node, ast.FunctionDef):
            self.homes[id(linked.node)] = linked.names
            return linked.node
        key = id(linked.node)
        if key in self.memo:
            return self.memo[key]
        if key in self.active_links:
            return Unknown(why=f"`{name}` refers to itself")
        mark = len(self.steps)
        saved = self._enter(linked.names)
        self.active_links.add(key)
        try:
            result = self.value(linked.node)
        finally:
            self.active_links.discard(key)
            self._leave(saved)
        del self.steps[mark:]
        self.note(f"{name} (= {text_of(linked.node)}, {linked.where})", result)
        self.memo[key] = result
        return result

    def _call_linked(self, name: str, linked: Linked, call: ast.Call) -> object:
        fn = linked.node
        assert isinstance(fn, ast.FunctionDef)
        if self.budget.calls >= Budget.MAX_CALLS:
            return Unknown(why=f"`{name}` is more than {Budget.MAX_CALLS} helper calls deep")
        frame = self._bind(fn, call)  # the arguments are the caller's expressions
        if isinstance(frame, Unknown):
            return frame
        saved = self._enter(linked.names)
        self.budget.calls += 1
        self.frames.append(frame)
        try:
            result = self._block(fn.body)
        finally:
            self.budget.calls -= 1
            self._leave(saved)
        return None if result is _FALL else result

    def _alias(self, name: str, bound: ast.expr) -> object:
        # Module-level names mean the same wherever they are read: evaluate once, outside any helper frame.
        key = id(bound)
        module_scope = name not in self.local
        if module_scope and key in self.memo:
            return self.memo[key]
        mark = len(self.steps)
        frames, self.frames = self.frames, ([] if module_scope else self.frames)
        self.active.add(name)
        try:
            result = self.value(bound)
        finally:
            self.active.discard(name)
            self.frames = frames
        # The alias line names its expression, so the inner steps would only repeat it.
        del self.steps[mark:]
        self.note(f"{name} (= {text_of(bound)})", result)
        if module_scope:
            self.memo[key] = result
        return result

    def _callee(self, func: ast.expr) -> tuple[str, Predicate] | None:
        name = dotted(func)
        if name is None:
            return None
        head = name.partition(".")[0]
        if head in self.defined or head in self.ambiguous:
            return None  # the module binds that name itself
        if head in self.aliases and "." not in name:
            bound = self.aliases[head]
            # `check = is_sm100_supported` then `check()`
            return self._callee(bound) if isinstance(bound, ast.Name | ast.Attribute) else None
        resolved = resolve(name, self.imports)
        found = lookup(self.table, resolved)
        return (resolved.rpartition(".")[2] if resolved not in self.table else resolved, found) if found else None

    def _Call(self, node: ast.Call) -> object:
        plain_func = self._dunder_import(node.func)
        if plain_func is not None:
            node = ast.copy_location(ast.Call(func=plain_func, args=node.args, keywords=node.keywords), node)
        name = dotted(node.func) or ""
        head = name.partition(".")[0]
        if self.frames and head in self.frames[-1]:
            if isinstance(node.func, ast.Attribute) and node.func.attr in STR_METHODS and "." not in name.partition(".")[2]:
                return self._str_method(node, node.func)  # `cuda.split(".")` on a string the helper computed
            result: object = Unknown(why=f"`{head}` is a value computed inside a helper")
        elif "." not in name and name in self.functions and name not in self.aliases:
            result = self.call_function(name, self.functions[name], node)
            self.note(text_of(node), result)
            return result
        elif name == IMPORTABLE:
            result = self._importable(node)
        elif name == VERSION_BELOW:
            result = self._version_below(node)
        elif name == TRY_VALUE:
            tried = self.value(node.args[0])  # known only where computing it cannot have raised
            result = plain(tried) if isinstance(tried, Unknown) else tried
        elif "." not in name and name in BUILTINS and not self._shadowed(name):
            return BUILTINS[name](self, node)
        elif isinstance(node.func, ast.Attribute) and node.func.attr in STR_METHODS and self._callee(node.func) is None:
            return self._str_method(node, node.func)
        else:
            resolved = resolve(name, self.imports) if name else ""
            env = environment(resolved, node, self.facts) if name else NOT_ENV
            installs = self._install_call(resolved, node) if name and env is NOT_ENV else NOT_ENV
            if installs is not NOT_ENV:
                result = installs
            elif resolved in VALUE_CALLS and head not in self.defined and head not in self.ambiguous:
                result = VALUE_CALLS[resolved](self, node)
            elif (late := run_time_value(resolved)) is not None and head not in self.defined and head not in self.ambiguous:
                result = late
            elif env is not NOT_ENV:
                self.probes.append((functools.partial(environment, resolved, node), env))
                self.use("env")
                result = env
                unset = self.probe(functools.partial(_unset, node))
                if unset is not None:
                    self.steps.append(f"needs {unset}")
            else:
                found = self._callee(node.func)
                linked = self._link(name) if found is None and name else None
                if found is not None:
                    self.use(found[0])
                    result = self.probe(found[1])
                elif linked is not None and isinstance(linked.node, ast.FunctionDef):
                    result = self._call_linked(name, linked, node)
                    self.note(f"{text_of(node)} ({linked.where})", result)
                    return result
                elif (
                    isinstance(node.func, ast.Attribute)
                    and node.func.attr in decorated.METHODS
                    and (answer := self.decorated_method(node)) is not None
                ):
                    result = answer
                else:
                    why = "a name this module binds itself" if head in self.defined or head in self.ambiguous else None
                    result = Unknown(why=why or "not a known guard helper")
        self.note(text_of(node), result)
        return result

    def _dunder_import(self, func: ast.expr) -> ast.expr | None:
        """`__import__("torch").cuda.is_available` as the dotted name it is (`torch.cuda.is_available`; `__import__`
        gives the top-level package), when `__import__` is the builtin; None for anything else."""
        chain: list[str] = []
        root = func
        while isinstance(root, ast.Attribute):
            chain.append(root.attr)
            root = root.value
        if not (
            chain
            and isinstance(root, ast.Call)
            and isinstance(root.func, ast.Name)
            and root.func.id == "__import__"
            and not self._shadowed("__import__")
            and len(root.args) == 1
            and not root.keywords
            and isinstance(root.args[0], ast.Constant)
            and isinstance(root.args[0].value, str)
            and all(part.isidentifier() for part in root.args[0].value.split("."))
        ):
            return None
        out: ast.expr = ast.Name(id=root.args[0].value.split(".")[0], ctx=ast.Load())
        for part in reversed(chain):
            out = ast.Attribute(value=out, attr=part, ctx=ast.Load())
        return out

    def _importable(self, node: ast.Call) -> object:
        """Whether `try: import m` succeeds: the modules assumed installed (--assume-installed) or that the job's
        installs say are there, else unknown (or False, where the job's environment shows it is not there)."""
        modules = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if modules and all(imported_with(m, self.current, self.facts) for m in modules):
            self.note(_implied_why(modules[0]), True)
            return True
        self.use("install")
        self.probes.append((_installed, self.facts.installed))
        self.probes.append((_environment, self.facts.environment))
        if self.facts.environment is None:  # only --assume-installed says what is there
            missing = [m.partition(":")[0] for m in modules if m.split(".", maxsplit=1)[0] not in self.facts.installed]
            return Unknown(why=f"whether {', '.join(missing)} is installed (see --assume-installed)") if missing else True
        return all_importable(modules, self.facts)

    def _version_below(self, node: ast.Call) -> object:
        """Whether `module.__version__` is below importorskip's minversion: decided by the version the job installs of
        the distribution named like the module (as `module.__version__` is read), else unknown with what is known."""
        module, minimum = (self.value(a) for a in node.args)
        if not isinstance(module, str) or not isinstance(minimum, str):
            return Unknown(why="importorskip's minversion or module is not a literal")
        wanted = parse_version(minimum)
        if wanted is None:
            return Unknown(why=f"importorskip's minversion {minimum[:40]!r} is not a version")
        top = module.split(".", maxsplit=1)[0]
        self.use("install")
        self.probes.append((_environment, self.facts.environment))
        installed = module_version(self.facts, top)
        head = f"whether {module}.__version__ is at least {minimum} (importorskip's minversion)"
        if isinstance(installed, str):
            have = parse_version(installed)
            return Unknown(why=f"{head}: {installed!r} is not a version") if have is None else have < wanted
        if isinstance(installed, VersionRange):
            decided = range_decides(installed.specifier, "Lt", wanted)
            return Unknown(why=f"{head}: {installed.why}, a range that does not decide it") if decided is None else decided
        why = installed.why if isinstance(installed, Unknown) else "its version is not known"
        return Unknown(why=f"{head}: {_provider_note(self.facts, top, wanted) or why}")

    def _install_call(self, resolved: str, node: ast.Call) -> object:
        """`importlib.util.find_spec("m")`, `importlib.metadata.version("d")`, `version.parse(x)`; NOT_ENV if not one."""
        if resolved not in _FIND_SPEC and resolved not in _METADATA_VERSION and resolved not in _VERSION_PARSE:
            return NOT_ENV
        argument = node.args[0] if len(node.args) == 1 and not node.keywords else None
        if resolved in _VERSION_PARSE:
            value = self.value(argument) if argument is not None else Unknown(why="version.parse() form")
            if isinstance(value, str):
                parsed = parse_version(value)
                return parsed if parsed is not None else Unknown(why=f"{value[:40]!r} is not a version")
            return value if isinstance(value, Unknown) else Unknown(why="version.parse() of a value the audit does not model")
        # The name as written, or as a helper's parameter bound to a literal (`is_package_at_least("x", "1.0")`).
        name = self.value(argument) if argument is not None else None
        if not isinstance(name, str):
            return name if isinstance(name, Unknown) else Unknown(why=f"{resolved.rpartition('.')[2]}() of a computed name")
        if resolved in _FIND_SPEC and imported_with(name, self.current, self.facts):
            self.note(_implied_why(name), True)
            return _SPEC
        self.use("install")
        self.probes.append((_environment, self.facts.environment))
        self.probes.append((_installed, self.facts.installed))
        if resolved in _METADATA_VERSION:
            return distribution_version(self.facts, name)
        found = importable(self.facts, name)
        return _SPEC if found is True else None if found is False else found

    def _str_method(self, node: ast.Call, func: ast.Attribute) -> object:
        base = self.value(func.value)
        args = [self.value(a) for a in node.args]
        if isinstance(base, Unknown):
            return plain(base)
        if not isinstance(base, str) or node.keywords or not all(isinstance(a, str) for a in args):
            return Unknown(why=f".{func.attr}() on a value the audit does not model")
        try:
            return STR_METHODS[func.attr](base, *args)
        except (TypeError, ValueError):
            return Unknown(why=f".{func.attr}() with these arguments")

    def _shadowed(self, name: str) -> bool:
        return name in self.aliases or name in self.imports or name in self.defined or name in self.ambiguous

    def _Attribute(self, node: ast.Attribute) -> object:
        name = dotted(node)
        if name is not None and (
            (self.frames and name.partition(".")[0] in self.frames[-1]) or name.partition(".")[0] in self.aliases
        ):
            # `props.major` of a value the helper or the module computed (`props = torch.cuda.get_device_properties(0)`)
            name = None
        if name is None:  # an attribute of a computed value: `get_jit_cuda_arch().major`
            base = self.value(node.value)
            if isinstance(base, ast.FunctionDef) and node.attr in decorated.ATTRIBUTES:
                found = self.decorated_attribute(node)  # `check_fn._supported_ccs` of a function a helper was given
                if found is not None:
                    self.note(text_of(node), found)
                    return found
            result = base.get(node.attr) if isinstance(base, Record) else plain(base) if isinstance(base, Unknown) else None
            if result is None:
                result = Unknown(why=f"attribute {node.attr} of a value the audit does not model")
            self.note(text_of(node), result)
            return result
        resolved = resolve(name, self.imports) if name else ""
        head = name.partition(".")[0] if name else ""
        if resolved in CONSTANTS and head not in self.aliases and head not in self.defined and head not in self.ambiguous:
            constant = CONSTANTS[resolved]  # `torch.float16`: the same on every runner
            self.note(text_of(node), constant)
            return constant
        getter = (PLATFORM_ATTRIBUTES.get(resolved) or lookup(ATTRIBUTES, resolved)) if name else None
        if resolved.endswith(".__version__") and resolved.count(".") == 1 and resolved.partition(".")[0] in self.imports.values():
            # `transformers.__version__` of an imported module: the version the job installs
            self.use("install")
            self.probes.append((_environment, self.facts.environment))
            result = module_version(self.facts, resolved.partition(".")[0])
            self.note(text_of(node), result)
            return result
        if getter is not None:
            self.use(resolved)
        else:
            linked = self._link(name)
            if linked is not None:
                return self._linked_value(name, linked)
            if node.attr in decorated.ATTRIBUTES and (answer := self.decorated_attribute(node)) is not None:
                self.note(text_of(node), answer)
                return answer
        result = self.probe(getter) if getter else Unknown(why="not a known attribute")
        self.note(text_of(node), result)
        return result

    def _Subscript(self, node: ast.Subscript) -> object:
        resolved = resolve(dotted(node.value) or "", self.imports) + "[]"
        env = environment(resolved, node, self.facts)
        if env is not NOT_ENV:
            self.probes.append((functools.partial(environment, resolved, node), env))
            self.use("env")
            self.note(text_of(node), env)
            unset = self.probe(functools.partial(_unset, node))
            if unset is not None:
                self.steps.append(f"needs {unset}")
            return env
        base, index = self.value(node.value), self.value(node.slice)
        if (
            isinstance(base, PartialTuple)
            and isinstance(index, int)
            and not isinstance(index, bool)
            and -len(base.items) <= index < len(base.items)
        ):
            return base.items[index]
        if isinstance(base, Unknown):
            return plain(base)
        if (
            isinstance(base, tuple | str)
            and isinstance(index, int)
            and not isinstance(index, bool)
            and -len(base) <= index < len(base)
        ):
            return base[index]
        return Unknown(why=f"cannot index {text_of(base)} by {text_of(index)}")

    def _BoolOp(self, node: ast.BoolOp) -> object:
        # Kleene logic with Python's short-circuit: a decisive operand stops evaluation.
        decisive = Tri.FALSE if isinstance(node.op, ast.And) else Tri.TRUE
        unknown: Unknown | None = None
        start = len(self.reads)
        for operand in node.values:
            mark = len(self.reads)
            value = self.value(operand)
            t = tri_of(value)
            if t is decisive:
                if mark > start:
                    self.passed.append((start, mark))  # the operands before it did not decide the answer
                return decisive is Tri.TRUE
            if t is Tri.UNKNOWN and unknown is None:
                # The first operand left open names the cause (`find_spec('cutlass')`: whether it is installed).
                why = value.why if isinstance(value, Unknown) and not isinstance(value, SomeText) else "not known"
                named = why.startswith("whether ") or "known only at run time" in why  # these name their subject
                unknown = Unknown(why=why if named else f"{text_of(operand)[:80]}: {why}")
        return unknown if unknown is not None else decisive is not Tri.TRUE

    def _UnaryOp(self, node: ast.UnaryOp) -> object:
        if isinstance(node.op, ast.Not):
            t = self.truth(node.operand).negated()
            return Unknown(why="negation of unknown") if t is Tri.UNKNOWN else t is Tri.TRUE
        operand = self.value(node.operand)
        if isinstance(operand, int | float) and not isinstance(operand, bool) and isinstance(node.op, ast.USub | ast.UAdd):
            return -operand if isinstance(node.op, ast.USub) else operand
        return Unknown(why="unsupported unary operation")

    def _BinOp(self, node: ast.BinOp) -> object:
        left, right = self.value(node.left), self.value(node.right)
        fn = _ARITH.get(type(node.op))
        if fn is None or not all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
            unknown = left if isinstance(left, Unknown) else right if isinstance(right, Unknown) else Unknown(why="arithmetic")
            return plain(unknown)
        assert isinstance(left, int) and isinstance(right, int)
        if isinstance(node.op, ast.FloorDiv | ast.Mod) and right == 0:
            return Unknown(why="division by zero")
        # Refuse before computing: the product of two budget-sized integers is still computed cheaply.
        if isinstance(node.op, ast.Mult) and left.bit_length() + right.bit_length() > 2 * Budget.INT_BITS:
            return Unknown(why=f"an integer beyond {Budget.INT_BITS} bits")
        return bounded_int(fn(left, right), "arithmetic")

    def _IfExp(self, node: ast.IfExp) -> object:
        t = self.truth(node.test)
        if t is Tri.TRUE:
            return self.value(node.body)
        if t is Tri.FALSE:
            return self.value(node.orelse)
        body, orelse = self.value(node.body), self.value(node.orelse)
        if not isinstance(body, Unknown) and body == orelse:
            return body
        test = self.value(node.test)  # keeps the cause (a module that may not be installed) in the reason
        return plain(test) if isinstance(test, Unknown) else Unknown(why="conditional on unknown")

    def _Compare(self, node: ast.Compare) -> object:
        left = self.value(node.left)
        unknown: Unknown | None = None
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.value(comparator)
            result = compare(op, left, right)
            if result is False:
                return False
            if isinstance(result, Unknown) and unknown is None:
                # Keep the cause (an unknown fact, the integer budget) rather than a generic word.
                side = left if isinstance(left, Unknown) else right if isinstance(right, Unknown) else None
                unknown = Unknown(why=side.why) if isinstance(side, SomeText) else side or Unknown(why="a comparison is unknown")
            left = right
        return unknown if unknown is not None else True


def _shown(value: object) -> str:
    """A value as a step says it: a partly known one by what is known of it."""
    if isinstance(value, KnownMembers):
        return f"known to hold {', '.join(sorted(value.members))} ({value.why})"
    if isinstance(value, PartText):
        return f"a text holding {value.known!r} ({value.why})"
    if isinstance(value, SomeText):
        return f"set ({value.why})"
    if isinstance(value, PartialTuple) and any(not isinstance(i, Unknown) for i in value.items):
        known = ", ".join("?" if isinstance(i, Unknown) else text_of(i) for i in value.items)
        return f"({known}) ({value.why})"
    return f"unknown ({value.why})" if isinstance(value, Unknown) else text_of(value)


# Node type -> evaluator method, looked up once rather than by name on every node.
_DISPATCH: dict[type[ast.AST], Callable[[_Evaluator, Any], object]] = {
    getattr(ast, name[1:]): method
    for name, method in vars(_Evaluator).items()
    if name.startswith("_") and name[1:2].isupper() and isinstance(getattr(ast, name[1:], None), type)
}


def compare(op: ast.cmpop, left: object, right: object) -> bool | Unknown:
    """Python's comparison on plain values; Unknown where Python would raise or a side is unknown."""
    if isinstance(op, ast.Is | ast.IsNot | ast.Eq | ast.NotEq) and (
        (isinstance(left, SomeText) and right is None) or (isinstance(right, SomeText) and left is None)
    ):
        return isinstance(op, ast.IsNot | ast.NotEq)  # a set text is not None
    ranged = _range_compare(op, left, right)
    if ranged is not None:
        return ranged
    partial = partial_compare(op, left, right, compare)
    if partial is not None:
        return partial
    if isinstance(left, Unknown) or isinstance(right, Unknown):
        return Unknown(why="a side is unknown")
    if isinstance(left, ast.AST) or isinstance(right, ast.AST):
        return Unknown(why="a comparison with a function")
    if isinstance(op, ast.Eq | ast.NotEq):
        return (left == right) is isinstance(op, ast.Eq)
    if isinstance(op, ast.Is | ast.IsNot):
        if left is None or right is None or isinstance(left, bool) or isinstance(right, bool):
            return (left is right) is isinstance(op, ast.Is)
        return Unknown(why="identity of values")
    if isinstance(op, ast.In | ast.NotIn):
        if isinstance(right, tuple | frozenset) or (isinstance(right, str) and isinstance(left, str)):
            return (left in right) is isinstance(op, ast.In)
        return Unknown(why="membership in a non-container")
    fn = _ORDER[type(op)]
    numbers = all(isinstance(v, int | float) for v in (left, right))
    same = numbers or (type(left) is type(right) and (isinstance(left, tuple | str) or is_version(left)))
    if not same:
        return Unknown(why="ordering of unlike values")
    try:
        return bool(fn(left, right))
    except TypeError:
        return Unknown(why="ordering of unlike values")


def _range_compare(op: ast.cmpop, left: object, right: object) -> bool | Unknown | None:
    """A version known as a range (`>=4.52.0`) compared with a literal version: decided when the range's bounds
    decide it (`matrix.schedule.environment.versions`); None when neither side is a range."""
    flipped = {ast.Lt: "Gt", ast.Gt: "Lt", ast.LtE: "GtE", ast.GtE: "LtE"}
    if isinstance(right, VersionRange) and is_version(left):
        name = flipped.get(type(op))
        decided = None if name is None else range_decides(right.specifier, name, left)
        return Unknown(why=right.why) if decided is None else decided
    if isinstance(left, VersionRange) and is_version(right):
        decided = range_decides(left.specifier, type(op).__name__, right)
        return Unknown(why=left.why) if decided is None else decided
    return None


Probes = list[tuple[Callable[[RunnerFacts], object], object]]


def evaluate_condition(
    condition: SkipCondition,
    facts: RunnerFacts,
    names: ModuleNames,
    local: Mapping[str, ast.expr | None] | None = None,
    table: Mapping[str, Predicate] = PREDICATES,
    *,
    probes: Probes | None = None,
) -> Evaluation:
    """Whether one condition holds on a runner; past the evaluation budget it is unknown, with the reason.

    The runner facts read are appended to `probes` when given."""
    if isinstance(condition, AlwaysSkips):
        return Evaluation(skips=Tri.TRUE, steps=("unconditional skip",))
    if isinstance(condition, OpaqueCondition):
        return Evaluation(skips=Tri.UNKNOWN, steps=(condition.why,), facts=("opaque",))
    if isinstance(condition, CaseSearch):
        return search_cases(condition, facts, names, table, probes=probes)
    if isinstance(condition, MissingModules):
        implied = [m for m in condition.modules if imported_with(m, names, facts)]
        if len(implied) == len(condition.modules):
            why = "; ".join(_implied_why(m) for m in implied)
            return Evaluation(skips=Tri.FALSE, steps=(why,), facts=("install",))
        if probes is not None:
            probes.append((_installed, facts.installed))
            probes.append((_environment, facts.environment))
        if facts.environment is not None:
            found = all_importable(condition.modules, facts)
            if found is True:
                why = "; ".join(str(_answer_why(m, facts)) for m in condition.modules)
                return Evaluation(skips=Tri.FALSE, steps=(why,), facts=("install",))
            if found is False:
                why = "; ".join(str(_answer_why(m, facts)) for m in condition.modules if importable(facts, m) is False)
                return Evaluation(skips=Tri.TRUE, steps=(why,), facts=("install",))
            assert isinstance(found, Unknown)
            return Evaluation(skips=Tri.UNKNOWN, steps=(found.why,), facts=("install",))
        modules = list(dict.fromkeys(m.partition(":")[0] for m in condition.modules))
        missing = [m for m in modules if m.split(".")[0] not in facts.installed]
        if not missing:
            return Evaluation(skips=Tri.FALSE, steps=(f"{', '.join(modules)} assumed installed",), facts=("install",))
        return Evaluation(
            skips=Tri.UNKNOWN,
            steps=(f"whether {', '.join(missing)} is installed is unknown (see --assume-installed)",),
            facts=("install",),
        )
    evaluator = _Evaluator(facts, names, local or {}, table)
    try:
        t = evaluator.truth(condition.expr)
    except OverBudget as exc:
        return Evaluation(skips=Tri.UNKNOWN, steps=(f"evaluation budget exceeded: {exc.why}",), facts=("budget",))
    except RecursionError:
        return Evaluation(skips=Tri.UNKNOWN, steps=("evaluation budget exceeded: Python recursion limit",), facts=("budget",))
    finally:
        if probes is not None:
            probes.extend(evaluator.probes)
    return Evaluation(
        skips=t.negated() if condition.negate else t,
        steps=tuple(evaluator.steps),
        facts=tuple(evaluator.used),
        decided=evaluator.decided(),
    )


# Distinct cases (the parameters the guards read) a case search evaluates before it gives up as unknown.
MAX_CASES_SEARCHED = 512


def search_cases(
    condition: CaseSearch,
    facts: RunnerFacts,
    names: ModuleNames,
    table: Mapping[str, Predicate] = PREDICATES,
    *,
    probes: Probes | None = None,
) -> Evaluation:
    """Whether every case of a parametrized test meets a skip: false at the first case no guard skips, true when
    each case (of the parameters the guards read, all of them searched) meets one, else unknown."""
    read = _parameters_read(condition)
    layers = _distinct_layers(condition, read)
    unknown: tuple[Evaluation, str] | None = None
    first_skip: tuple[Evaluation, str] | None = None
    used: list[str] = []
    searched = 0
    for combination in itertools.product(*(rows for _, rows in layers)):
        if searched >= MAX_CASES_SEARCHED:
            break
        searched += 1
        values = {
            n: v for (argnames, _), row in zip(layers, combination, strict=True) for n, v in zip(argnames, row, strict=True)
        }
        shown = ", ".join(f"{n}={text_of(v)}" for n, v in values.items())[:200]
        outcome: Evaluation | None = None
        for guard in condition.guards:
            result = evaluate_guard(_with_case(guard, values), facts, names, table, probes=probes)
            used.extend(f for f in result.facts if f not in used)
            if result.skips is Tri.TRUE:
                outcome = result
                break
            if result.skips is Tri.UNKNOWN and outcome is None:
                outcome = result
        if outcome is None:
            return Evaluation(skips=Tri.FALSE, steps=(f"the case {shown} meets no skip",), facts=tuple(used))
        if outcome.skips is Tri.TRUE:
            first_skip = first_skip or (outcome, shown)
        elif unknown is None:
            unknown = (outcome, shown)
    if unknown is not None:
        return Evaluation(skips=Tri.UNKNOWN, steps=unknown[0].steps, facts=tuple(used))
    total = math.prod(len(rows) for _, rows in layers)
    if searched < total or first_skip is None:
        why = f"{total} cases of the parameters its guards read, more than the {MAX_CASES_SEARCHED} searched"
        return Evaluation(skips=Tri.UNKNOWN, steps=(why,), facts=("budget",))
    every = f"each of the {total} cases of {', '.join(sorted(read))} meets a skip (first: {first_skip[1]})"
    return Evaluation(skips=Tri.TRUE, steps=(every, *first_skip[0].steps), facts=tuple(used))


def cases_to_search(condition: CaseSearch) -> int:
    """How many distinct cases a search goes through: the product over the parameters the guards read."""
    return math.prod(len(rows) for _, rows in _distinct_layers(condition, _parameters_read(condition)))


def _distinct_layers(condition: CaseSearch, read: frozenset[str]) -> CaseLayers:
    """Each decorator's rows cut down to the parameters read, equal ones once: a layer no guard reads is one case."""
    layers: list[tuple[tuple[str, ...], tuple[tuple[ast.expr, ...], ...]]] = []
    for argnames, rows in condition.layers:
        kept = tuple(n for n in argnames if n in read)
        distinct: dict[str, tuple[ast.expr, ...]] = {}
        for row in rows:
            cut = tuple(v for n, v in zip(argnames, row, strict=True) if n in read)
            distinct.setdefault(repr([ast.dump(v) for v in cut]), cut)
        layers.append((kept, tuple(distinct.values())))
    return tuple(layers)


def _parameters_read(condition: CaseSearch) -> frozenset[str]:
    argnames = {n for names_, _ in condition.layers for n in names_}
    exprs = [c.expr for g in condition.guards for c in g.conditions if isinstance(c, ExprCondition)]
    exprs += [e for g in condition.guards for _, e in g.local_names if e is not None]
    return frozenset(n.id for e in exprs for n in ast.walk(e) if isinstance(n, ast.Name) and n.id in argnames)


def _with_case(guard: Guard, values: Mapping[str, ast.expr]) -> Guard:
    """The guard with a case's values in for the parameters it binds once (its function's own arguments)."""
    counts: dict[str, int] = {}
    for n, _ in guard.local_names:
        counts[n] = counts.get(n, 0) + 1
    local = tuple((n, values[n] if n in values and counts[n] == 1 else e) for n, e in guard.local_names)
    return guard.with_local_names(local)


def imported_with(module: str, names: ModuleNames, facts: RunnerFacts) -> bool:
    """Whether the module the guard is read in imports `module` itself, by a top-level statement or through the
    checkout's own modules such a statement imports: a test of it runs only where that import succeeded."""
    module = module.partition(":")[0]
    if not names.certain_imports:
        return False
    if facts.project is not None:
        return module in facts.project.implied(names.certain_imports)
    return any(m == module or m.startswith(module + ".") for m in names.certain_imports)


def _implied_why(module: str) -> str:
    return f"{module.partition(':')[0]} is imported when the test's module is: where the test runs, it imports"


def _installed(facts: RunnerFacts) -> object:
    return facts.installed


def _environment(facts: RunnerFacts) -> object:
    return facts.environment


def all_importable(modules: Sequence[str], facts: RunnerFacts) -> object:
    """Whether every module imports: True, False when one certainly does not, else the first unknown."""
    answers = [importable(facts, m) for m in modules]
    if any(a is False for a in answers):
        return False
    return next((a for a in answers if isinstance(a, Unknown)), True)


def _provider_note(facts: RunnerFacts, module: str, wanted: Version) -> str:
    """What the job says of a module it installs under another distribution's name (`cutlass` from
    nvidia-cutlass-dsl>=4.6.2): that distribution's version is not read as `module.__version__`; "" when none."""
    from matrix.schedule.environment.distributions import providers

    environment = facts.environment
    for dist in providers(module) if environment is not None else ():
        found = environment.get(dist) if environment is not None else None
        if found is None:
            continue
        where = f"{module} comes from {dist}{found.specifier} ({found.command[:80]})"
        if not found.specifier:
            return f"{where}, which names no version"
        if range_decides(found.specifier, "Lt", wanted) is None:
            return f"{where}, a range that allows versions on both sides of it"
        return f"{where}, whose version is not read as {module}.__version__"
    return ""


def _answer_why(module: str, facts: RunnerFacts) -> str:
    from matrix.schedule.environment.distributions import module_answer

    module = module.partition(":")[0]
    if module.split(".", maxsplit=1)[0] in facts.installed:
        return f"{module} assumed installed"
    return module_answer(facts.environment, module).why


# A module spec, as `find_spec` returns for a module that is there (never None).
_SPEC = Record(kind="ModuleSpec", fields=())
_FIND_SPEC = frozenset({"importlib.util.find_spec", "importlib.find_loader", "pkgutil.find_loader"})
_METADATA_VERSION = frozenset({"importlib.metadata.version", "importlib_metadata.version"})
_VERSION_PARSE = frozenset({"packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version"})


def _unset(node: ast.Call | ast.Subscript, facts: RunnerFacts) -> object:
    return unset_variable(node, facts)


def evaluate_guard(
    guard: Guard,
    facts: RunnerFacts,
    names: ModuleNames,
    table: Mapping[str, Predicate] = PREDICATES,
    *,
    probes: Probes | None = None,
) -> Evaluation:
    """Whether a guard skips on a runner: every condition on its path must hold (Kleene AND)."""
    # A name listed twice (a parameter the body also assigns, `if backend == "auto": backend = "cutlass"`) has either
    # value where the guard reads it: unknown, never the last one listed.
    local: dict[str, ast.expr | None] = {}
    for name, bound in guard.local_names:
        local[name] = None if name in local else bound
    steps: list[str] = []
    used: list[str] = []
    decided: list[str] = []
    unknown = False
    for condition in guard.conditions:
        result = evaluate_condition(condition, facts, names, local, table, probes=probes)
        steps.extend(s for s in result.steps if s not in steps)
        used.extend(f for f in result.facts if f not in used)
        decided.extend(f for f in result.deciding if f not in decided)
        if result.skips is Tri.FALSE:
            return Evaluation(skips=Tri.FALSE, steps=tuple(steps), facts=tuple(used), decided=tuple(result.deciding))
        unknown = unknown or result.skips is Tri.UNKNOWN
    return Evaluation(skips=Tri.UNKNOWN if unknown else Tri.TRUE, steps=tuple(steps), facts=tuple(used), decided=tuple(decided))


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b


class GuardEvaluator:
    """`evaluate_guard` over many runners, evaluating once per distinct answer to the facts a guard reads.

    Evaluation is deterministic in the facts it reads: a runner that answers every read of an earlier
    evaluation the same way (same type, equal value) walks the same path and gets the same Evaluation."""

    def __init__(self, names: ModuleNames, table: Mapping[str, Predicate] = PREDICATES):
        self.names = names
        self.table = table
        self.seen: dict[int, list[tuple[Probes, Evaluation]]] = {}

    def __call__(self, guard: Guard, facts: RunnerFacts) -> Evaluation:
        earlier = self.seen.setdefault(id(guard), [])
        for reads, seen in earlier:
            if all(_same(read(facts), value) for read, value in reads):
                return seen
        probes: Probes = []
        evaluation = evaluate_guard(guard, facts, self.names, self.table, probes=probes)
        earlier.append((probes, evaluation))
        return evaluation


def evaluate_text(
    text: str, facts: RunnerFacts, names: ModuleNames | None = None, table: Mapping[str, Predicate] = PREDICATES
) -> Evaluation:
    """Evaluate a condition written as source text (tests, pytest string conditions)."""
    expr = ast.parse(text, mode="eval").body
    return evaluate_condition(ExprCondition(expr=expr), facts, names or ModuleNames(), None, table)
