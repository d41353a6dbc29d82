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
