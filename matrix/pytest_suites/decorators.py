"""Decorators on a test that are neither marks nor read as skips: known to run the test, or unknown.

A decorator can keep a test from running (a factory that returns `pytest.mark.skipif(...)`, a wrapper that calls
`pytest.skip`). The collector reads pytest's marks, unittest's skips, the predicate packs' factories and the
single-`return` factories of the test's own file; what is left is judged here:

- a decorator known to run the test it wraps (`RUNNING_DECORATORS`: the standard library's, pytest's fixture,
  torch's grad modes, unittest.mock's patchers, hypothesis' strategies) is harmless;
- a function of the audited project (the test's file, or a file of the tree it is imported from, followed through
  re-exports) is read by what it does: nothing in it skips or exits, and what it returns is its own nested
  function, a parameter or a local (`def repeat(n): def wrap(fn): ...; return wrap`), then harmless;
- a decorator of another library that the table `matrix/data/decorators.toml` lists (torch's `parametrize`,
  `instantiate_parametrized_tests`, the config modules' `patch`), with its sources, runs the test too;
- anything else (a factory from another library no pack knows, a name not found, a project decorator whose body
  may skip) makes the test undetermined, with the decorator named: it cannot be read, so it is not "runs".
"""

from __future__ import annotations

import ast
import functools
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from matrix.core.textfiles import package_text

# Decorators known to call the test they wrap and to add no pytest marker (so `-m` and `-k` are decided without
# them).
NO_MARK_DECORATORS = frozenset(
    {
        "pytest.fixture",
        "staticmethod",
        "classmethod",
        "property",
        "functools.wraps",
        "functools.cache",
        "functools.lru_cache",
        "functools.cached_property",
        "contextlib.contextmanager",
        "typing.overload",
        "abc.abstractmethod",
    }
)
# Decorators that always call the test they wrap (sources: Python's functools, contextlib, abc, typing, dataclasses
# and unittest.mock documentation; pytest's `pytest.fixture`; torch's `torch.no_grad` / `torch.inference_mode` /
# `torch.enable_grad`; hypothesis' `given` / `settings` / `example` / `seed`; the responses library's
# `responses.activate`, which runs the test inside its HTTP mock).
RUNNING_DECORATORS = NO_MARK_DECORATORS | frozenset(
    {
        "functools.partial",
        "contextlib.asynccontextmanager",
        "dataclasses.dataclass",
        "unittest.mock.patch",
        "unittest.mock.patch.object",
        "unittest.mock.patch.dict",
        "unittest.mock.patch.multiple",
        "mock.patch",
        "mock.patch.object",
        "mock.patch.dict",
        "torch.no_grad",
        "torch.inference_mode",
        "torch.enable_grad",
        "hypothesis.given",
        "hypothesis.settings",
        "hypothesis.example",
        "hypothesis.seed",
        "responses.activate",
    }
)

# Names whose use in a decorator's body means it may keep the test from running.
_SKIPPING = frozenset({"skip", "skipif", "skipIf", "skipUnless", "skipTest", "SkipTest", "importorskip", "exit", "xfail", "fail"})
# A project function larger than this is not read as a decorator (it is unknown).
MAX_DECORATOR_NODES = 4000

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def runs_what_it_wraps(fn: _Function) -> bool:
    """Whether a project decorator (or factory) certainly leaves its test running: no skip or exit in it, and
    every `return` gives a nested function, a parameter or a local (or calls one), or a constant."""
    inner: set[str] = set()
    for count, node in enumerate(ast.walk(fn)):
        if count >= MAX_DECORATOR_NODES:
            return False
        if isinstance(node, _Function | ast.Lambda):
            args = node.args
            inner.update(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))
            inner.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
            if isinstance(node, _Function) and node is not fn:
                inner.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            inner.add(node.id)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in _SKIPPING:
            return False
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value.func if isinstance(node.value, ast.Call) else node.value
            if isinstance(value, ast.Constant):
                continue
            if not (isinstance(value, ast.Name) and value.id in inner):
                return False
    return True


@dataclass(frozen=True, kw_only=True)
class RunningDecorator:
    """A row of `matrix/data/decorators.toml`: a decorator that calls the test it wraps, unless one of its arguments
    calls `unless_calls`."""

    name: str
    unless_calls: str = ""
    source: str = ""


@functools.cache
def running_table() -> Mapping[str, RunningDecorator]:
    """The table of other libraries' decorators that run their test, by resolved dotted name."""
    doc = tomllib.loads(package_text("data/decorators.toml"))
    return {
        row["name"]: RunningDecorator(name=row["name"], unless_calls=row.get("unless_calls", ""), source=row["source"])
        for row in doc["runs"]
    }


def runs_by_table(full: str, decorator: ast.expr) -> bool:
    """Whether the table says the decorator (resolved to `full`) runs its test: listed, and no argument of it calls
    the name its row excepts."""
    row = running_table().get(full)
    if row is None:
        return False
    if row.unless_calls and isinstance(decorator, ast.Call):
        for node in ast.walk(decorator):
            if node is not decorator and isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called == row.unless_calls:
                    return False
    return True


def skip_decorator_condition(fn: _Function, resolve: Callable[[str], str]) -> ast.expr | None:
    """The condition under which a project decorator of torch's skip shape skips, else None. The shape (torch's
    `skipIfNoQNNPACK` in `torch/testing/_internal/common_quantization.py`, copied by projects): one parameter; for a
    class, `if COND:` sets `__unittest_skip__` and the class is returned; for a function, a wrapper whose body is
    `if COND: raise unittest.SkipTest(...)` and otherwise calls the wrapped function, returned. COND must be the
    same in both branches and read no name of the decorator or the wrapper (it is judged in the module's names);
    `resolve` gives the dotted name a name of the module imports (`SkipTest` -> `unittest.SkipTest`)."""
    if isinstance(fn, ast.AsyncFunctionDef) or len(fn.args.args) != 1 or fn.args.vararg or fn.args.kwarg or fn.decorator_list:
        return None
    param = fn.args.args[0].arg
    conditions: list[ast.expr] = []
    local: set[str] = {param}
    wrapper: ast.FunctionDef | None = None
    returned = ""
    for stmt in fn.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if not isinstance(stmt.value, ast.Constant):
                return None
            local.add(stmt.targets[0].id)  # `reason = "..."`
        elif isinstance(stmt, ast.If) and _is_class_test(stmt.test, param) and not stmt.orelse:
            found = _class_branch(stmt.body, param)
            if found is None:
                return None
            conditions.append(found)
        elif isinstance(stmt, ast.FunctionDef) and wrapper is None:
            wrapper = stmt
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) and not returned:
            returned = stmt.value.id
        else:
            return None
    if wrapper is None or returned != wrapper.name:
        return None
    found = _wrapper_condition(wrapper, param, resolve)
    if found is None:
        return None
    conditions.append(found)
    local |= {wrapper.name, *(a.arg for a in (*wrapper.args.args, *wrapper.args.kwonlyargs))}
    local |= {a.arg for a in (wrapper.args.vararg, wrapper.args.kwarg) if a is not None}
    if any(ast.dump(c) != ast.dump(conditions[0]) for c in conditions):
        return None
    if any(isinstance(n, ast.Name) and n.id in local for n in ast.walk(conditions[0])):
        return None
    return conditions[0]


def _is_class_test(test: ast.expr, param: str) -> bool:
    """`isinstance(fn, type)`."""
    return (
        isinstance(test, ast.Call)
        and isinstance(test.func, ast.Name)
        and test.func.id == "isinstance"
        and len(test.args) == 2
        and isinstance(test.args[0], ast.Name)
        and test.args[0].id == param
        and isinstance(test.args[1], ast.Name)
        and test.args[1].id == "type"
    )


def _class_branch(body: list[ast.stmt], param: str) -> ast.expr | None:
    """COND of `if COND: fn.__unittest_skip__ = True ...` followed by `return fn`."""
    if len(body) != 2 or not isinstance(body[0], ast.If) or body[0].orelse:
        return None
    ret = body[1]
    if not (isinstance(ret, ast.Return) and isinstance(ret.value, ast.Name) and ret.value.id == param):
        return None
    marks = body[0].body
    if not all(
        isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Attribute)
        and s.targets[0].attr in ("__unittest_skip__", "__unittest_skip_why__")
        for s in marks
    ):
        return None
    sets_skip = any(
        isinstance(s, ast.Assign)
        and isinstance(s.targets[0], ast.Attribute)
        and s.targets[0].attr == "__unittest_skip__"
        and isinstance(s.value, ast.Constant)
        and s.value.value is True
        for s in marks
    )
    return body[0].test if sets_skip else None


def _wrapper_condition(wrapper: ast.FunctionDef, param: str, resolve: Callable[[str], str]) -> ast.expr | None:
    """COND of a wrapper `if COND: raise unittest.SkipTest(...)` that otherwise calls `param`, once."""
    decorated = all(isinstance(d, ast.Call) and resolve(dotted_text(d.func)) == "functools.wraps" for d in wrapper.decorator_list)
    body = [s for s in wrapper.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not decorated or not body or not isinstance(body[0], ast.If):
        return None
    branch = body[0]
    raises = (
        len(branch.body) == 1
        and isinstance(branch.body[0], ast.Raise)
        and isinstance(branch.body[0].exc, ast.Call)
        and resolve(dotted_text(branch.body[0].exc.func)) in ("unittest.SkipTest", "unittest.case.SkipTest")
    )
    rest = [*branch.orelse, *body[1:]]
    calls = len(rest) == 1 and _calls(rest[0], param)
    return branch.test if raises and calls else None


def _calls(stmt: ast.stmt, param: str) -> bool:
    """`fn(*args, **kwargs)` or `return fn(*args, **kwargs)`."""
    value = stmt.value if isinstance(stmt, ast.Expr | ast.Return) else None
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == param


def dotted_text(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_text(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""
