"""Untrusted JSON in, strict JSON out: bounded size, depth and integer length; no NaN or Infinity either way.

Python's `json` accepts `NaN`, `Infinity` and `1e999` (read as inf), recurses once per nesting level (100,000
levels raise RecursionError) and converts integers of any length (5,000 digits raise ValueError under the
interpreter's int_max_str_digits guard). Every reader of a user-named JSON file or variable goes through
`loads_untrusted`, so each of those becomes one error line of the caller's kind.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

from matrix.core.errors import OutputError, SpecmatrixError

MAX_JSON_BYTES = 256 * 1024 * 1024  # a 20,000-cell report is about 10 MiB
MAX_INT_DIGITS = 40  # far beyond any count, duration or index a document holds
MAX_DEPTH = 16  # free-form fields (a report's `extra`) nest at most this deep


class _Rejected(ValueError):
    pass


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Rejected(f"an integer of {len(text)} digits")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Rejected(f"the number {text[:40]} is out of range")
    return value


def _parse_constant(name: str) -> float:
    raise _Rejected(f"{name} is not a JSON number")


def loads_untrusted(
    text: str, where: str, error: type[SpecmatrixError], *, what: str = "JSON", malformed: str = "corrupt or truncated"
) -> Any:
    """Decode `text`, or raise `error("<where>: ...")` in one line for anything malformed or out of bounds."""
    if len(text) > MAX_JSON_BYTES:
        raise error(f"{where}: {what} larger than {MAX_JSON_BYTES // (1024 * 1024)} MiB; refusing to read it")
    try:
        return json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except _Rejected as exc:
        raise error(f"{where}: {what} not accepted: {exc}") from None
    except json.JSONDecodeError as exc:
        raise error(f"{where}: {malformed} {what} ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise error(f"{where}: {what} nested too deeply") from None
    except ValueError as exc:  # e.g. a lone surrogate escape the decoder still rejects
        raise error(f"{where}: {what} not accepted: {exc}") from None


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    """Nesting depth of decoded JSON, walked without recursion; stops counting past `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return deepest


def dumps_strict(doc: Any, *, where: str, **kwargs: Any) -> str:
    """`json.dumps` that refuses NaN and Infinity (not JSON; GitHub's `fromJSON` rejects them)."""
    try:
        if set(kwargs) == {"indent"} and isinstance(kwargs["indent"], int):
            return dumps_indented(doc, indent=kwargs["indent"], allow_nan=False)
        return json.dumps(doc, allow_nan=False, **kwargs)
    except ValueError as exc:
        raise OutputError(f"{where}: cannot write a number that is not finite ({exc})") from None


def canonical(body: Any) -> str:
    """The one text of a JSON value that seals are taken over: sorted keys, no spaces, ASCII."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def seal(schema: str, key: str, body: Any) -> str:
    """A digest binding a cached body to its schema and key: an entry edited by hand, or moved to another key, no
    longer matches (the guard results cache and the schedule cache)."""
    return seal_text(schema, key, canonical(body))


def seal_text(schema: str, key: str, text: str) -> str:
    """`seal` of a body already written as its `canonical` text (a cache that stores that text checks it as is)."""
    return hashlib.sha256(f"{schema}\0{key}\0{text}".encode()).hexdigest()


# --- indented output ----------------------------------------------------------------------------------------------
# `json.dumps(doc, indent=N)` runs the standard library's pure-Python encoder (its C encoder ignores `indent`):
# several generator frames per value. `dumps_indented` writes the same text in one pass of plain loops: each
# container is one list of "key: value" strings joined with the separator and indentation of its level, strings are
# escaped by the function `json.dumps` itself uses (`encode_basestring_ascii`, the default `ensure_ascii=True`)
# once per distinct text (reports repeat their reasons and hints), ints by `int.__repr__`, floats as `floatstr` in
# `json/encoder.py` does, and every type test is the one `_make_iterencode` makes, in its order. The module-level
# names below are read on each call, so a test can plant a wrong one.
_ITEM_SEPARATOR = ","
_KEY_SEPARATOR = ": "
_escape = encode_basestring_ascii
_INFINITY = float("inf")


class _Escaped(dict[str, str]):
    """`escaped[text]`: the JSON string literal of `text`, computed once per distinct text."""

    def __missing__(self, text: str) -> str:
        out = self[text] = _escape(text)
        return out


def string_literals() -> Callable[[str], str]:
    """A function from a `str` to its JSON literal as `json.dumps` writes it (ASCII), each distinct text escaped
    once: for writers that lay out a document of their own (the guard report's findings)."""
    return _Escaped().__getitem__


def nested(text: str, level: int, *, indent: int = 2) -> str:
    """`dumps_indented` text moved `level` levels in: what it writes for the same value inside a container (every
    line break of its output is indentation, as strings write theirs escaped)."""
    return text.replace("\n", "\n" + " " * (indent * level))


def dumps_indented(doc: Any, *, indent: int = 2, allow_nan: bool = True) -> str:
    """Exactly `json.dumps(doc, indent=indent, allow_nan=allow_nan)` with every other argument at its default
    (the same text, and the same exceptions: TypeError for a value or key JSON has no form for, ValueError for a
    circular reference or, without `allow_nan`, a non-finite float), in about half the time."""
    pad = " " * indent
    item_sep = _ITEM_SEPARATOR
    key_sep = _KEY_SEPARATOR
    escape = _escape
    string = _Escaped().__getitem__  # only ever given an exact str: 1 == True == 1.0 would share an entry
    int_text = int.__repr__
    float_repr = float.__repr__
    on_path: set[int] = set()  # containers being written: meeting one again is a cycle

    def float_text(o: float) -> str:
        if o != o:  # noqa: PLR0124  (the test `floatstr` makes, for a float subclass too)
            text = "NaN"
        elif o == _INFINITY:
            text = "Infinity"
        elif o == -_INFINITY:
            text = "-Infinity"
        else:
            return float_repr(o)
        if not allow_nan:
            raise ValueError("Out of range float values are not JSON compliant: " + repr(o))
        return text

    def key_text(key: Any) -> str:
        """A key that is not an exact str: the conversions of `_iterencode_dict`, in its order (bool before int)."""
        if isinstance(key, str):
            return escape(key)
        if isinstance(key, float):
            return escape(float_text(key))
        if key is True:
            return '"true"'
        if key is False:
            return '"false"'
        if key is None:
            return '"null"'
        if isinstance(key, int):
            return escape(int_text(key))
        raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")

    def value(o: Any, nl: str) -> str:
        """Any value but an exact str or int (the loops below write those themselves); `nl` starts its line."""
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        t = type(o)
        if t is dict:
            return obj(o, nl)
        if t is list or t is tuple:
            return arr(o, nl)
        if t is float:
            return float_text(o)
        # Subclasses (a StrEnum, an IntEnum, an OrderedDict), in the order `_iterencode` tests them.
        if isinstance(o, str):
            return escape(o)
        if isinstance(o, int):
            return int_text(o)
        if isinstance(o, float):
            return float_text(o)
        if isinstance(o, list | tuple):
            return arr(o, nl)
        if isinstance(o, dict):
            return obj(o, nl)
        raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    def enter(o: Any) -> None:
        marker = id(o)
        if marker in on_path:
            raise ValueError("Circular reference detected")
        on_path.add(marker)

    def obj(d: Any, nl: str) -> str:
        if not d:
            return "{}"
        enter(d)
        inner = nl + pad
        parts = []
        for k, v in d.items():
            ks = string(k) if type(k) is str else key_text(k)
            t = type(v)
            if t is str:
                parts.append(f"{ks}{key_sep}{string(v)}")
            elif t is int:
                parts.append(f"{ks}{key_sep}{int_text(v)}")
            else:
                parts.append(f"{ks}{key_sep}{value(v, inner)}")
        on_path.discard(id(d))
        return f"{{{inner}{(item_sep + inner).join(parts)}{nl}}}"

    def arr(a: Any, nl: str) -> str:
        if not a:
            return "[]"
        enter(a)
        inner = nl + pad
        parts = []
        for v in a:
            t = type(v)
            if t is str:
                parts.append(string(v))
            elif t is int:
                parts.append(int_text(v))
            else:
                parts.append(value(v, inner))
        on_path.discard(id(a))
        return f"[{inner}{(item_sep + inner).join(parts)}{nl}]"

    t = type(doc)
    if t is str:
        return escape(doc)
    if t is int:
        return int_text(doc)
    return value(doc, "\n")
