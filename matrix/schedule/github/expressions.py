"""GitHub Actions `${{ ... }}` expressions, evaluated statically where the contexts are known; pure.

The functions, operators and contexts read are declared in `matrix.schedule.github.subset` (contexts are resolved by
the walker's lookup, `values.KnownValues.lookup`); anything else (`secrets.*`, `vars.*`, `hashFiles`) is `Unknown`.
A value may have several possible values (`OneOf`); `||` / `&&` follow GitHub's truthiness.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from matrix.schedule.github.expression_syntax import ExpressionError, Node, parse
from matrix.schedule.github.subset import FUNCTIONS

EXPR = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
# Bounds on what one expression may build: the characters of a value (`format()` through `env` multiplies them)
# and the possible texts of a string with several values in it.
MAX_VALUE_CHARS = 256 * 1024
MAX_TEXTS = 32


@dataclass(frozen=True, kw_only=True)
class Unknown:
    """A value the static reading cannot know; `text` is the expression (shown in assumptions)."""

    text: str
    # Why a bound stopped the reading (a value too long, too many possible texts): said as an unread entry, never
    # read as a value.
    bound: str = ""


@dataclass(frozen=True, kw_only=True)
class OneOf:
    """One of several values, each possible at run time (a runner label echoed two ways)."""

    values: tuple[Any, ...]
    why: str


Resolver = Callable[[tuple[str, ...]], Any]  # a context path (`needs`, `check-changes`, `outputs`, `x`) -> value


def truthy(value: Any) -> bool | None:
    if isinstance(value, Unknown | OneOf):
        return None
    return value not in (None, False, 0, "", 0.0)


def _value(node: Node, lookup: Resolver) -> Any:
    """A parsed expression's value; both sides of `||`/`&&` are read, as GitHub's static reading needs."""
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "name":
        return lookup((node[1],))
    if kind == "postfix":
        return _postfix(node, lookup)
    if kind == "||":
        left, right = _value(node[1], lookup), _value(node[2], lookup)
        t = truthy(left)
        return left if t is True else right if t is False else _either(left, right, "||")
    if kind == "&&":
        left, right = _value(node[1], lookup), _value(node[2], lookup)
        t = truthy(left)
        return right if t is True else left if t is False else _either(left, right, "&&")
    if kind == "cmp":
        return _compare(node[1], _value(node[2], lookup), _value(node[3], lookup))
    if kind == "!":
        return _not(_value(node[1], lookup))
    if kind == "group":
        return _value(node[1], lookup)
    return _call(node[1], [_value(a, lookup) for a in node[2]])


def _postfix(node: Node, lookup: Resolver) -> Any:
    base = node[1]
    path: tuple[str, ...] | None
    if base[0] == "name":
        path = (base[1],)
        value = lookup(path)
    else:
        path, value = None, _value(base, lookup)
    for computed, step in node[2]:
        path, value = _step(path, value, _value(step, lookup) if computed else step, lookup)
    return value


def _step(path: tuple[str, ...] | None, value: Any, key: Any, lookup: Resolver) -> tuple[tuple[str, ...] | None, Any]:
    """One `.key` / `[key]` step: a context path grows while every key is known (and is looked up whole, as the
    context holds it); past an unknown key the value is indexed instead."""
    if path is not None and not isinstance(key, Unknown | OneOf):
        path = (*path, str(key))
        return path, lookup(path)
    return None, _index(value, key)


def _show(value: Any) -> str:
    return value.text if isinstance(value, Unknown) else repr(value)


def _either(a: Any, b: Any, op: str) -> Any:
    if isinstance(a, Unknown) or isinstance(b, Unknown):
        return Unknown(text=f"{_show(a)} {op} {_show(b)}")
    both = [*(_alternatives(a)), *(_alternatives(b))]
    try:
        values = tuple(dict.fromkeys(both))
    except TypeError:  # a table on one side (`matrix.x || inputs`): the same equality, without hashing
        kept: list[Any] = []
        for value in both:
            if value not in kept:
                kept.append(value)
        values = tuple(kept)
    return OneOf(values=values, why=f"either side of {op}")


def _alternatives(value: Any) -> tuple[Any, ...]:
    return value.values if isinstance(value, OneOf) else (value,)


def _compare(op: str, a: Any, b: Any) -> Any:
    if isinstance(a, Unknown | OneOf) or isinstance(b, Unknown | OneOf):
        return Unknown(text=f"{_show(a)} {op} {_show(b)}")
    if isinstance(a, str) and isinstance(b, str):
        a, b = a.lower(), b.lower()  # GitHub compares strings case-insensitively
    try:
        return {"==": a == b, "!=": a != b}[op] if op in ("==", "!=") else _order(op, a, b)
    except TypeError:
        return False


def _order(op: str, a: Any, b: Any) -> bool:
    return bool({"<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}[op])


def _index(value: Any, key: Any) -> Any:
    if isinstance(value, OneOf):
        return OneOf(values=tuple(_index(v, key) for v in value.values), why=value.why)
    if isinstance(value, Unknown) or isinstance(key, Unknown | OneOf):
        return Unknown(text=f"{_show(value)}[{_show(key)}]")
    if type(value) is dict or isinstance(value, Mapping):  # a dict without the abc machinery
        found = value.get(key, value.get(str(key)))
        if found is None and isinstance(key, str) and type(value) is dict:
            # property names are case-insensitive (`fromJson(...)['Name']`, `matrix['GPU']`)
            found = next((v for k, v in value.items() if isinstance(k, str) and k.lower() == key.lower()), None)
        return found
    if isinstance(value, list) and isinstance(key, int) and -len(value) <= key < len(value):
        return value[key]
    return None


# Job status functions, read as "everything before succeeded": the schedule is what runs when CI is green.
_STATUS = {"always": True, "success": True, "failure": False, "cancelled": False}


def _call(name: str, args: list[Any]) -> Any:
    low = name.lower()
    if low not in FUNCTIONS:
        return Unknown(text=f"{name}(...)")  # outside the declared subset (`hashFiles`, ...): known only at run time
    if low in _STATUS and not args:
        return _STATUS[low]
    if any(isinstance(a, Unknown | OneOf) for a in args):
        return Unknown(text=f"{name}({', '.join(_show(a) for a in args)})")
    if low == "fromjson" and len(args) == 1 and isinstance(args[0], str):
        try:
            return json.loads(args[0])
        except ValueError:
            return Unknown(text=f"fromJson({args[0]!r})")
    if low == "fromjson" and len(args) == 1 and isinstance(args[0], Mapping | list):
        return args[0]  # a table the walker already holds as a value (runs_on_map)
    if low == "tojson" and len(args) == 1:
        # Kept as a value: the callee's fromJson gives it back, and a table may hold OneOf values.
        return args[0] if isinstance(args[0], Mapping | list) else json.dumps(args[0])
    if low == "format" and args and isinstance(args[0], str):
        return _format(args[0], [_text(a) for a in args[1:]])
    if low in ("startswith", "endswith") and len(args) == 2:
        a, b = _text(args[0]).lower(), _text(args[1]).lower()
        return a.startswith(b) if low == "startswith" else a.endswith(b)
    if low == "contains" and len(args) == 2:
        if isinstance(args[0], list):
            return args[1] in args[0]
        return _text(args[1]).lower() in _text(args[0]).lower()
    if low == "join" and args and isinstance(args[0], list):
        sep = _text(args[1]) if len(args) > 1 else ","
        items = [_text(a) for a in args[0]]
        if sum(map(len, items)) + len(sep) * len(items) > MAX_VALUE_CHARS:
            return _too_long("join(...)")
        return sep.join(items)
    return Unknown(text=f"{name}(...)")


_FORMAT_PART = re.compile(r"\{\{|\}\}|\{(\d+)\}")


def _format(template: str, args: list[str]) -> Any:
    """GitHub's `format()`: `{N}` is the Nth argument, `{{` and `}}` are braces; a result longer than the value
    bound is not built."""
    size = len(template)
    for match in _FORMAT_PART.finditer(template):
        index = match.group(1)
        if index is not None and int(index) < len(args):
            size += len(args[int(index)])
            if size > MAX_VALUE_CHARS:
                return _too_long("format(...)")

    def put(match: re.Match[str]) -> str:
        index = match.group(1)
        if index is None:
            return match.group(0)[0]
        return args[int(index)] if int(index) < len(args) else match.group(0)

    return _FORMAT_PART.sub(put, template)


def _too_long(what: str) -> Unknown:
    return Unknown(text=what, bound=f"{what} would be longer than {MAX_VALUE_CHARS} characters")


def _text(value: Any) -> str:
    if type(value) is str:
        return value  # the usual case, without the checks below (`Mapping` goes through the abc machinery)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping | list):
        return json.dumps(value, default=str)
    if isinstance(value, Unknown):
        return value.text
    return str(value)


def evaluate(body: str, lookup: Resolver) -> Any:
    """The value of one expression body (without `${{ }}`); an unreadable expression is `Unknown`."""
    uses = _uses.get(body, 0)
    program: Program | ExpressionError
    if uses < COMPILE_AFTER and (uses or len(_uses) < MAX_COUNTED):
        # Most texts are read a few times (a job's `if:` once per event): building closures would cost more
        # than it saves, so the tree interpreter reads them until the text has proved common.
        _uses[body] = uses + 1
        node = parse(body)
        program = node if isinstance(node, ExpressionError) else functools.partial(_value, node)
    else:
        program = _program(body)
    if isinstance(program, ExpressionError):
        return Unknown(text=body.strip())
    try:
        return program(lookup)
    except RecursionError:
        return Unknown(text=body.strip())


COMPILE_AFTER = 3  # evaluations of a text by the tree interpreter before it runs as closures
MAX_COUNTED = 8192
_uses: dict[str, int] = {}


def evaluate_shared(body: str, lookup: Resolver, parts: dict[int, Any]) -> Any:
    """`evaluate(body, lookup)` for a `lookup` that gives the same answer to the same path every time it is used
    with `parts` (one walk's `if:` resolver for one event): a sub-expression already read with `parts`, in this
    text or another, gives its value again. sglang's job conditions repeat the same clauses job after job.

    Only values that cannot change or lead to a lookup later (text, numbers, booleans, null, `Unknown`, `OneOf`
    of those) are kept; a table or list is read again each time, so every lookup it leads to is still made."""
    node = _shared_form(body)
    if node is None:
        return evaluate(body, lookup)
    try:
        return _shared(node, lookup, parts)
    except RecursionError:  # as `evaluate` says it (a caller already deep in its stack)
        return Unknown(text=body.strip())


@functools.lru_cache(maxsize=4096)
def _shared_form(body: str) -> Node | None:
    """The parsed text with a number put into each inner node, after its kind: `(kind, number, ...)`. Two nodes
    get the same number only when they are the same expression (their kinds, names, operators and constants'
    reprs, which tell `1` from `true`, `1.0` and `-0.0` from `0.0`, and their parts' numbers). None for a text
    `evaluate` reads on its own: unreadable, or deeper than `CLOSURE_DEPTH` (where the recursion limit falls stays
    where it was)."""
    node = parse(body)
    if isinstance(node, ExpressionError):
        return None
    try:
        return _numbered(node, 0)[0]
    except _Deep:
        return None


_NUMBERS: dict[tuple[Any, ...], int] = {}
_COUNTER = itertools.count()
MAX_NUMBERS = 65_536


def _number(signature: tuple[Any, ...]) -> int:
    found = _NUMBERS.get(signature)
    if found is None:
        if len(_NUMBERS) >= MAX_NUMBERS:
            _NUMBERS.clear()  # numbers are never given twice: a cleared table only shares less
        found = _NUMBERS[signature] = next(_COUNTER)
    return found


def _numbered(node: Node, depth: int) -> tuple[Node, Any]:
    """The numbered node and its signature part (for leaves: the leaf itself, with a constant's repr)."""
    if depth > CLOSURE_DEPTH:
        raise _Deep
    kind = node[0]
    if kind == "const":
        return node, ("const", repr(node[1]))
    if kind == "name":
        return node, node
    inner = depth + 1
    if kind == "postfix":
        base, base_sign = _numbered(node[1], inner)
        steps: list[tuple[bool, Any]] = []
        signs: list[Any] = []
        for computed, step in node[2]:
            if computed:
                done, sign = _numbered(step, inner)
                steps.append((True, done))
                signs.append(("[]", sign))
            else:
                steps.append((False, step))
                signs.append((".", step))
        number = _number(("postfix", base_sign, tuple(signs)))
        return ("postfix", number, base, tuple(steps)), number
    if kind in ("||", "&&"):
        (left, left_sign), (right, right_sign) = _numbered(node[1], inner), _numbered(node[2], inner)
        number = _number((kind, left_sign, right_sign))
        return (kind, number, left, right), number
    if kind == "cmp":
        (left, left_sign), (right, right_sign) = _numbered(node[2], inner), _numbered(node[3], inner)
        number = _number(("cmp", node[1], left_sign, right_sign))
        return ("cmp", number, node[1], left, right), number
    if kind in ("!", "group"):
        one, sign = _numbered(node[1], inner)
        number = _number((kind, sign))
        return (kind, number, one), number
    args = [_numbered(a, inner) for a in node[2]]
    number = _number(("call", node[1], tuple(sign for _, sign in args)))
    return ("call", number, node[1], tuple(a for a, _ in args)), number


def _shared(node: Node, lookup: Resolver, parts: dict[int, Any]) -> Any:
    """`_value` of the node `_shared_form` numbered, reading each inner node through `parts`."""
    kind = node[0]
    if kind == "const":
        return node[1]
    if kind == "name":
        return lookup((node[1],))
    number = node[1]
    if number in parts:
        return parts[number]
    value: Any
    if kind == "postfix":
        base = node[2]
        path: tuple[str, ...] | None
        if base[0] == "name":
            path = (base[1],)
            value = lookup(path)
        else:
            path, value = None, _shared(base, lookup, parts)
        for computed, step in node[3]:
            path, value = _step(path, value, _shared(step, lookup, parts) if computed else step, lookup)
    elif kind in ("||", "&&"):
        left, right = _shared(node[2], lookup, parts), _shared(node[3], lookup, parts)
        t = truthy(left)
        if kind == "||":
            value = left if t is True else right if t is False else _either(left, right, "||")
        else:
            value = right if t is True else left if t is False else _either(left, right, "&&")
    elif kind == "cmp":
        value = _compare(node[2], _shared(node[3], lookup, parts), _shared(node[4], lookup, parts))
    elif kind == "!":
        value = _not(_shared(node[2], lookup, parts))
    elif kind == "group":
        value = _shared(node[2], lookup, parts)
    else:
        value = _call(node[2], [_shared(a, lookup, parts) for a in node[3]])
    if _lasting(value):
        parts[number] = value
    return value


_SCALAR_TYPES = (str, int, float, bool, type(None))


def _lasting(value: Any) -> bool:
    """Whether a value may be given again in place of reading its expression: it holds no table or list."""
    kind = type(value)
    if kind in _SCALAR_TYPES or kind is Unknown:
        return True
    return kind is OneOf and all(type(v) in _SCALAR_TYPES or type(v) is Unknown for v in value.values)


# A parsed text as a tree of closures, each doing what `_value` does for its node, without `_value`'s dispatch on
# the node's kind at every step of every evaluation. A tree deeper than `CLOSURE_DEPTH` (a chain of 100 `||`)
# is read by `_value` itself, so where the recursion limit falls stays where it was.
Program = Callable[[Resolver], Any]
CLOSURE_DEPTH = 64


class _Deep(Exception):
    pass


@functools.lru_cache(maxsize=8192)
def _program(text: str) -> Program | ExpressionError:
    node = parse(text)
    if isinstance(node, ExpressionError):
        return node
    try:
        return _closure(node, 0)
    except _Deep:
        return functools.partial(_value, node)


def _closure(node: Node, depth: int) -> Program:
    if depth > CLOSURE_DEPTH:
        raise _Deep
    kind = node[0]
    if kind == "const":
        constant = node[1]
        return lambda lookup: constant
    if kind == "name":
        single = (node[1],)
        return lambda lookup: lookup(single)
    if kind == "postfix":
        return _postfix_closure(node, depth)
    if kind in ("||", "&&"):
        return _logic_closure(kind, _closure(node[1], depth + 1), _closure(node[2], depth + 1))
    if kind == "cmp":
        op, left, right = node[1], _closure(node[2], depth + 1), _closure(node[3], depth + 1)
        return lambda lookup: _compare(op, left(lookup), right(lookup))
    if kind == "!":
        inner = _closure(node[1], depth + 1)
        return lambda lookup: _not(inner(lookup))
    if kind == "group":
        return _closure(node[1], depth + 1)
    name, args = node[1], [_closure(a, depth + 1) for a in node[2]]
    return lambda lookup: _call(name, [a(lookup) for a in args])


def _logic_closure(op: str, left: Program, right: Program) -> Program:
    def logic(lookup: Resolver) -> Any:
        a, b = left(lookup), right(lookup)  # both sides are read, as `_value` does
        t = truthy(a)
        if op == "||":
            return a if t is True else b if t is False else _either(a, b, "||")
        return b if t is True else a if t is False else _either(a, b, "&&")

    return logic


def _not(value: Any) -> Any:
    t = truthy(value)
    return Unknown(text=f"!{_show(value)}") if t is None else not t


def _postfix_closure(node: Node, depth: int) -> Program:
    base = node[1]
    steps = [(computed, _closure(step, depth + 1) if computed else step) for computed, step in node[2]]
    if base[0] != "name":
        start = _closure(base, depth + 1)

        def indexed(lookup: Resolver) -> Any:
            value = start(lookup)
            for computed, step in steps:
                value = _index(value, step(lookup) if computed else step)
            return value

        return indexed
    head = (base[1],)
    fixed = 0  # the leading `.name` steps: each grows the path by a known key, whatever the values
    while fixed < len(steps) and not steps[fixed][0]:
        fixed += 1
    prefixes = tuple((*head, *(str(key) for _, key in steps[:i])) for i in range(fixed + 1))
    rest = steps[fixed:]

    def named(lookup: Resolver) -> Any:  # `inputs.a.b` looks up ("inputs",), ("inputs", "a"), ("inputs", "a", "b")
        value = lookup(head)
        for path in prefixes[1:]:
            value = lookup(path)  # what `_step` does for a known key, with the path built once per program
        path_now: tuple[str, ...] | None = prefixes[-1]
        for computed, step in rest:
            path_now, value = _step(path_now, value, step(lookup) if computed else step, lookup)
        return value

    return named


def as_text(value: Any) -> str:
    """A resolved value as GitHub puts it into a string."""
    return _text(value)


def expand(text: str, lookup: Resolver, *, degrade: bool = False) -> tuple[Any, tuple[Unknown, ...]]:
    """`text` with each `${{ }}` replaced: a whole-string expression keeps its value's type; in a longer string
    each value is put in as text. Unknown parts come back as placeholders plus the list of what was unknown;
    a OneOf inside a longer string is returned as a OneOf of strings. With `degrade`, a text with more than
    `MAX_TEXTS` possible values is still read, each expression of several values put in as an unknown (any value:
    what a reader then cannot read, it says so), instead of the whole text being refused."""
    if "${{" not in text:
        return text, ()  # no expression: what the loop below gives, without it
    whole, between, bodies = _template(text)
    if whole is not None:
        value = evaluate(whole, lookup)
        return value, ((value,) if isinstance(value, Unknown) else ())
    unknown: list[Unknown] = []
    pieces: list[tuple[str, ...]] = [("",)]
    for before, body in zip(between, bodies, strict=False):
        pieces.append((before,))
        value = evaluate(body, lookup)
        if isinstance(value, Unknown) and value.bound:
            return value, (value,)
        if isinstance(value, Unknown):
            unknown.append(value)
            pieces.append((placeholder(len(unknown) - 1),))
        elif isinstance(value, OneOf):
            pieces.append(tuple(_text(v) for v in value.values))
        else:
            pieces.append((_text(value),))
    pieces.append((between[-1],))
    count = 1
    for choices in pieces:
        count *= len(choices)
        if count > MAX_TEXTS and degrade:
            return _degraded(between, bodies, lookup)
        if count > MAX_TEXTS:
            bound = f"{' '.join(text.split())[:80]} has more than {MAX_TEXTS} possible values"
            return Unknown(text=text.strip()[:80], bound=bound), ()
    if sum(max(map(len, choices)) for choices in pieces) > MAX_VALUE_CHARS:
        return _too_long(f"{' '.join(text.split())[:40]}..."), ()
    options = [""]
    for choices in pieces:
        options = [o + c for o in options for c in choices]
    if len(options) == 1:
        return options[0], tuple(unknown)
    return OneOf(values=tuple(dict.fromkeys(options)), why="a value known several ways"), tuple(unknown)


def _degraded(between: tuple[str, ...], bodies: tuple[str, ...], lookup: Resolver) -> tuple[Any, tuple[Unknown, ...]]:
    """The text with every expression of several (or unknown) values a placeholder, the others put in."""
    unknown: list[Unknown] = []
    out: list[str] = []
    for before, body in zip(between, bodies, strict=False):
        out.append(before)
        value = evaluate(body, lookup)
        if isinstance(value, Unknown | OneOf):
            many = f" (one of {len(value.values)} values)" if isinstance(value, OneOf) else ""
            unknown.append(Unknown(text=" ".join(body.split())[:80] + many))
            out.append(placeholder(len(unknown) - 1))
        else:
            out.append(_text(value))
    out.append(between[-1])
    joined = "".join(out)
    if len(joined) > MAX_VALUE_CHARS:
        return _too_long(f"{' '.join(joined.split())[:40]}..."), ()
    return joined, tuple(unknown)


@functools.lru_cache(maxsize=4096)
def _template(text: str) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """A text's expressions found once (a step's script is expanded for every matrix job and every call): the
    body of a whole-string expression, else the texts between the expressions (one more than them) and their bodies."""
    whole = EXPR.fullmatch(text.strip())
    if whole is not None and "}}" not in whole.group(1):  # `${{ a }}-${{ b }}` is two expressions, not one
        return whole.group(1), (), ()
    between: list[str] = []
    bodies: list[str] = []
    last = 0
    for match in EXPR.finditer(text):
        between.append(text[last : match.start()])
        bodies.append(match.group(1))
        last = match.end()
    between.append(text[last:])
    return None, tuple(between), tuple(bodies)


def placeholder(index: int) -> str:
    return f"__UNRESOLVED_{index}__"


PLACEHOLDER = re.compile(r"__UNRESOLVED_(\d+)__")
