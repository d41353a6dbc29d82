"""The value a conftest's own command-line option has in one CI command, for the hooks that read it; pure.

pytest's docs pattern "Control skipping of tests according to command line option": a conftest declares
`--run-perf` in `pytest_addoption`, and its `pytest_collection_modifyitems` skips marked tests unless
`config.getoption("--run-perf")` is true. The declarations are read once, by
`matrix.schedule.environment.conftest_options` (flags, arity, `dest`, `default`, `const`, `type`). An option a
conftest pytest loads before it parses the command line declares (`Invocation.options`) has the value Python's
`argparse` gives it over the command's words (the configuration's `addopts`, `PYTEST_ADDOPTS`, the command line,
in pytest's order; pytest's own parser is built on argparse, `_pytest/config/argparsing.py`, with
`allow_abbrev=False`); one a conftest loaded later declares has its default (the command cannot give it: pytest
would refuse the word). A declaration not read literally, or a command argparse refuses, is unknown, never a value.

In a hook's conditions every read of an option (`config.getoption("--run-perf")`, `config.getoption("run_perf")`,
`config.getvalue(...)`, `config.option.run_perf`, through `item.config`, `request.config`, `pytestconfig`) is
rewritten as a call of the fact `config.getoption('NAME')`, which `option_table` answers for one command.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import io
from collections.abc import Mapping, Sequence

from matrix.guards.model import Bindings, dotted
from matrix.guards.predicates import Predicate, RunnerFacts, Unknown
from matrix.pytest_suites.packs import OPTION_FACT
from matrix.schedule.environment.conftest_options import DeclaredOption

_TYPES = {"int": int, "float": float, "str": str}


def fact_name(name: str) -> str:
    """The fact an option read is rewritten to: `config.getoption('--run-perf')`."""
    return f"{OPTION_FACT}{name!r})"


def option_values(
    initial: Sequence[DeclaredOption], later: Sequence[DeclaredOption], words: Sequence[str]
) -> tuple[tuple[str, object], ...]:
    """Each declared option's value in a command, under every name a hook may read it by (its flags and its dest):
    `initial` are the options of the conftests pytest loads before parsing `words`, `later` those of the conftests
    it loads while collecting (their defaults)."""
    if not initial and not later:
        return ()
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    usable: list[DeclaredOption] = []
    for option in initial:
        kwargs: dict[str, object] = {"dest": option.dest, "action": option.action, "default": option.default}
        if option.action in ("store", "append") and option.kind:
            kwargs["type"] = _TYPES[option.kind]
        if option.action == "store_const":
            kwargs["const"] = option.const
        if not option.values_read or not option.dest:
            continue
        try:
            parser.add_argument(*option.flags, **kwargs)  # type: ignore[arg-type]
        except (argparse.ArgumentError, ValueError, TypeError):
            continue  # a flag declared twice (pytest refuses it too): left unknown
        usable.append(option)
    parsed: argparse.Namespace | None = None
    if usable:
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                parsed, _ = parser.parse_known_args(list(words))
        except (argparse.ArgumentError, SystemExit, ValueError, TypeError):
            parsed = None
    out: dict[str, object] = {}
    for option in later:
        value = _hashable(option.default) if option.values_read else _unknown(option)
        for name in dict.fromkeys((*option.flags, option.dest)):
            out.setdefault(name, value)
    for option in initial:
        read = parsed is not None and option in usable
        value = _hashable(getattr(parsed, option.dest, None)) if read else _unknown(option)
        for name in dict.fromkeys((*option.flags, option.dest)):
            out[name] = value  # an option pytest parses from the command line wins over a later declaration of it
    return tuple((name, value) for name, value in out.items() if name)


def _unknown(option: DeclaredOption) -> Unknown:
    return Unknown(why=f"option {option.flags[0] if option.flags else option.dest}: a value this reading does not state")


def _hashable(value: object) -> object:
    """A value as a key part (an `append` option gives a list)."""
    if isinstance(value, list):
        value = tuple(value)
    try:
        hash(value)
    except TypeError:
        return Unknown(why="an option value this reading does not state")
    return value


def option_table(values: Sequence[tuple[str, object]]) -> Mapping[str, Predicate]:
    """The facts `config.getoption('NAME')` for one command, as predicates the evaluator calls."""
    return {fact_name(name): _constant(value) for name, value in values}


def _constant(value: object) -> Predicate:
    def predicate(facts: RunnerFacts) -> object:
        return value

    return predicate


class _OptionReads(ast.NodeTransformer):
    """Rewrites every read of a pytest option into a call of its fact (see the module's docstring)."""

    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("getoption", "getvalue"):
            return node
        owner = dotted(func.value) or ""
        if not _is_config(owner) or len(node.args) not in (1, 2) or any(k.arg == "skip" for k in node.keywords):
            return node
        name = node.args[0]
        if not isinstance(name, ast.Constant) or not isinstance(name.value, str):
            return node
        self.found = True
        return ast.copy_location(ast.Call(func=ast.Name(id=fact_name(name.value), ctx=ast.Load()), args=[], keywords=[]), node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        owner = dotted(node.value) or ""
        if owner.endswith(".option") and _is_config(owner[: -len(".option")]):
            self.found = True
            return ast.copy_location(ast.Call(func=ast.Name(id=fact_name(node.attr), ctx=ast.Load()), args=[], keywords=[]), node)
        return self.generic_visit(node)  # type: ignore[return-value]


def _is_config(owner: str) -> bool:
    last = owner.rpartition(".")[2]
    return last in ("config", "pytestconfig", "_config")


def with_option_reads(condition: ast.expr, bindings: Bindings) -> tuple[ast.expr, Bindings, bool]:
    """A hook's condition and local bindings with option reads rewritten, and whether there were any."""
    reads = _OptionReads()
    try:
        rewritten = reads.visit(condition)
        bound = tuple((n, reads.visit(copy.deepcopy(e)) if e is not None else None) for n, e in bindings)
    except RecursionError:
        return condition, bindings, False
    return rewritten, bound, reads.found
