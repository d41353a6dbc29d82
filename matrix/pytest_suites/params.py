"""Parametrized cases read statically: `@pytest.mark.parametrize` whose values are literal, with pytest's ids.

A test is split into cases only when every parametrize of it is literal (values `ast.literal_eval` reads,
`pytest.param(...)` with literal values, literal `ids=`), not indirect, and the ids come out unique and
ASCII; the number of cases is capped. Ids follow pytest's rules (`_pytest/python.py`, `IdMaker`): an explicit
id, else str() of a str/int/float/bool/None/complex value, else the argument name and the value's index;
the values of one parametrize joined with "-", stacked decorators joined from the innermost outwards.
"""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from matrix.guards.model import CaseLayers, ExprCondition, Guard, ModuleNames, dotted
from matrix.guards.source import resolve

MAX_CASES = 64


@dataclass(frozen=True, kw_only=True)
class Case:
    """One parametrized case: its id, its argument values (as written) and the marks given with it."""

    id: str
    values: tuple[tuple[str, ast.expr], ...]
    marks: tuple[ast.expr, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Parametrized:
    """What the parametrize decorators of a test say: its argument names, and its cases when literal."""

    argnames: frozenset[str]
    cases: tuple[Case, ...] = ()
    # Some `pytest.param(..., marks=...)` is written, literal or not.
    marked: bool = False
    # Why a literal parametrize stays one item (over the cap, ids that repeat); None when not literal.
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class _Set:
    id: str
    values: tuple[ast.expr, ...]
    marks: tuple[ast.expr, ...]


class _NotLiteral(Exception):
    pass


def read_parametrize(
    decorators: list[ast.expr], names: ModuleNames, cap: int = MAX_CASES, *, may_mark: bool = True
) -> Parametrized | None:
    """The parametrize decorators of a test; None when it has none. `may_mark=False`: the file's text has no
    `marks` keyword, so the values are not searched for one."""
    calls = [d for d in decorators if isinstance(d, ast.Call) and _is_parametrize(d, names)]
    if not calls:
        return None
    marked = may_mark and any(
        isinstance(n, ast.Call) and any(k.arg == "marks" for k in n.keywords) for c in calls for n in ast.walk(c) if n is not c
    )
    argnames: set[str] = set()
    layers: list[tuple[tuple[str, ...], list[_Set]]] = []
    literal = True
    for call in reversed(calls):  # innermost (applied first) first: its ids come first
        try:
            found = _layer(call, names)
        except _NotLiteral:
            literal = False
            found = (_argnames(call), [])
        argnames.update(found[0])
        layers.append(found)
    if not literal:
        return Parametrized(argnames=frozenset(argnames), marked=marked)  # one item, as pytest's ids are unknown
    total = math.prod(len(sets) for _, sets in layers)
    if total > cap:
        return Parametrized(
            argnames=frozenset(argnames), marked=marked, note=f"{total} parametrized cases, over the cap of {cap}"
        )
    cases: list[Case] = []
    for combination in itertools.product(*(sets for _, sets in layers)):
        values = tuple(
            (n, v) for (names_, _), s in zip(layers, combination, strict=True) for n, v in zip(names_, s.values, strict=True)
        )
        marks = tuple(m for s in combination for m in s.marks)
        cases.append(Case(id="-".join(s.id for s in combination), values=values, marks=marks))
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids) or not all(i.isascii() for i in ids):
        return Parametrized(argnames=frozenset(argnames), marked=marked, note="parametrized ids repeat or are not ASCII")
    return Parametrized(argnames=frozenset(argnames), marked=marked, cases=tuple(cases))


def case_layers(decorators: list[ast.expr], names: ModuleNames) -> CaseLayers | None:
    """Each parametrize decorator's argument names and value expressions, literal or not (`torch.float16`), for
    a test audited as one item: what a case search (`matrix.guards.evaluate.search_cases`) goes through. None when
    a decorator is indirect, its values are not a list written out, or a `pytest.param` carries more than values."""
    calls = [d for d in decorators if isinstance(d, ast.Call) and _is_parametrize(d, names)]
    layers: list[tuple[tuple[str, ...], tuple[tuple[ast.expr, ...], ...]]] = []
    try:
        for call in calls:
            argnames, sets = _layer(call, names, literal=False)
            layers.append((argnames, tuple(s.values for s in sets)))
    except _NotLiteral:
        return None
    return tuple(layers) if layers else None


def reads_parameters(guard: Guard, argnames: frozenset[str]) -> bool:
    """The guard's conditions read a parameter that the test body does not rebind."""
    bound = [n for n, _ in guard.local_names]
    params = {n for n in argnames if bound.count(n) == 1}
    exprs = [c.expr for c in guard.conditions if isinstance(c, ExprCondition)]
    exprs += [e for n, e in guard.local_names if e is not None]
    return any(isinstance(n, ast.Name) and n.id in params for e in exprs for n in ast.walk(e))


def bind_case(guard: Guard, values: Mapping[str, ast.expr], memo: dict[tuple[int, str], Guard]) -> Guard:
    """The guard with a case's literal values in for the parameters it reads; cases with equal values share
    one guard object, so its evaluation on a runner is done once."""
    counts: dict[str, int] = {}
    for n, _ in guard.local_names:
        counts[n] = counts.get(n, 0) + 1
    chosen = {n: v for n, v in values.items() if counts.get(n) == 1}
    key = (id(guard), repr(sorted((n, ast.dump(v)) for n, v in chosen.items())))
    found = memo.get(key)
    if found is None:
        found = replace(guard, local_names=tuple((n, chosen.get(n, e)) for n, e in guard.local_names))
        memo[key] = found
    return found


def _is_parametrize(call: ast.Call, names: ModuleNames) -> bool:
    name = resolve(dotted(call.func) or "", names.import_map)
    return name.endswith("mark.parametrize") and (name.startswith("pytest.") or name == "mark.parametrize")


def _argnames(call: ast.Call) -> tuple[str, ...]:
    node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "argnames"), None)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return tuple(n.strip() for n in node.value.split(",") if n.strip())
    if isinstance(node, ast.List | ast.Tuple) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return tuple(str(e.value) for e in node.elts)  # type: ignore[attr-defined]
    return ()


def _layer(call: ast.Call, names: ModuleNames, *, literal: bool = True) -> tuple[tuple[str, ...], list[_Set]]:
    """One decorator's argument names and rows; `literal=False` keeps value expressions as written and reads no
    ids (a `pytest.param` with anything but its values is still refused)."""
    argnames = _argnames(call)
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    values = call.args[1] if len(call.args) > 1 else keywords.get("argvalues")
    indirect = keywords.get("indirect")
    if not argnames or values is None or (indirect is not None and not _is_false(indirect)):
        raise _NotLiteral
    if isinstance(values, ast.Name):
        bound = names.alias_map.get(values.id)  # a module-level literal list
        values = bound if bound is not None else values
    if not isinstance(values, ast.List | ast.Tuple):
        raise _NotLiteral
    explicit = _ids(keywords.get("ids"), len(values.elts)) if literal else None
    sets: list[_Set] = []
    for index, element in enumerate(values.elts):
        given: str | None = None
        marks: tuple[ast.expr, ...] = ()
        if isinstance(element, ast.Call) and (dotted(element.func) or "").rpartition(".")[2] == "param":
            if not literal and element.keywords:
                raise _NotLiteral  # marks or an id with the values: not a plain case
            given, marks = _param_extras(element)
            parts: list[ast.expr] = list(element.args)
        elif len(argnames) == 1:
            parts = [element]
        elif isinstance(element, ast.List | ast.Tuple):
            parts = list(element.elts)
        else:
            raise _NotLiteral
        if len(parts) != len(argnames) or any(isinstance(p, ast.Starred) for p in parts):
            raise _NotLiteral
        if not literal:
            sets.append(_Set(id="", values=tuple(parts), marks=marks))
            continue
        read = [_literal(p) for p in parts]
        own = given if given is not None else explicit[index] if explicit else None
        case_id = own if own is not None else "-".join(_idval(v, n, index) for v, n in zip(read, argnames, strict=True))
        sets.append(_Set(id=case_id, values=tuple(parts), marks=marks))
    return argnames, sets


def _param_extras(call: ast.Call) -> tuple[str | None, tuple[ast.expr, ...]]:
    given: str | None = None
    marks: tuple[ast.expr, ...] = ()
    for kw in call.keywords:
        if kw.arg == "id":
            value = _literal(kw.value)
            if value is not None and not isinstance(value, str):
                raise _NotLiteral
            given = value
        elif kw.arg == "marks":
            marks = tuple(kw.value.elts) if isinstance(kw.value, ast.List | ast.Tuple) else (kw.value,)
        else:
            raise _NotLiteral
    return given, marks


def _ids(node: ast.expr | None, count: int) -> list[str | None] | None:
    if node is None:
        return None
    value = _literal(node)
    if not isinstance(value, list | tuple) or len(value) != count or not all(v is None or isinstance(v, str) for v in value):
        raise _NotLiteral  # a callable or a computed list: pytest's ids cannot be known
    return list(value)


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise _NotLiteral from None


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _idval(value: object, argname: str, index: int) -> str:
    if isinstance(value, str):
        if not value or not value.isprintable():
            raise _NotLiteral  # pytest escapes or replaces these; not guessed
        return value
    if value is None or isinstance(value, bool | int | float | complex):
        return str(value)
    return f"{argname}{index}"
