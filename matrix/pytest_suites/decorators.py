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
from collections.abc import Mapping
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
