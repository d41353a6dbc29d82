"""Frozen records as JSON and back, exactly, for the caches: a decoded record equals the one encoded, field for field
and type for type (a `StrEnum` member stays a member), or decoding fails with `BadRecord`.

A `Codec` knows a closed set of dataclasses and enums (by class name). It writes a record as a tagged object
(`{"r": NAME, "v": {FIELD: VALUE}}`), an enum member as `{"n": NAME, "v": VALUE}`, a tuple as a list, a frozenset as
`{"f": [...]}` (items in the order of their JSON text), a dict as `{"d": [[KEY, VALUE], ...]}`; `None`, booleans,
integers, finite floats and plain strings as themselves. Anything else (a list, a `Path`, a class it does not know)
cannot be written: `encode` raises `TypeError`, and the caller caches nothing. Reading checks every value against
its field's annotation (`str`, `int`, `X | None`, `tuple[X, ...]`, `tuple[X, Y]`, `frozenset[X]`, `Mapping[K, V]`, a
known record or enum, unions of these), with bounded depth, so a cache file edited by hand or by another version
never builds a record of the wrong shape: it is refused, and the caller computes the record again.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

MAX_DEPTH = 64  # records nest a dozen levels (a schedule entry's origin); anything deeper is not one of ours


class BadRecord(ValueError):
    """Encoded data that is not a record of the codec's classes, or does not match their annotations."""


_ANY = object()


class Codec:
    """Encode and decode the records of `classes` (dataclasses and enums; names must be unique)."""

    def __init__(self, classes: Iterable[type]):
        self.records: dict[str, type] = {}
        self.enums: dict[str, type[enum.Enum]] = {}
        for cls in classes:
            if isinstance(cls, type) and issubclass(cls, enum.Enum):
                self.enums[cls.__name__] = cls
            elif dataclasses.is_dataclass(cls):
                self.records[cls.__name__] = cls
            else:
                raise TypeError(f"{cls!r} is neither a dataclass nor an enum")
        if len(self.records) + len(self.enums) != len({*self.records, *self.enums}):
            raise TypeError("two classes of one codec share a name")
        self._hints: dict[type, tuple[tuple[str, Any], ...]] = {}
        self._checks: dict[Any, Callable[[Any], bool]] = {}
        self._decoders: dict[Any, Callable[[Any, int], Any]] = {}
        self._field_names: dict[type, frozenset[str]] = {}

    # --- writing ----------------------------------------------------------------------------------------------------

    def encode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise TypeError("nested too deeply to cache")
        if value is None or value is True or value is False:
            return value
        kind = type(value)
        if kind is str or kind is int:
            return value
        if kind is float:
            if not math.isfinite(value):
                raise TypeError("a float that is not finite")
            return value
        if kind is tuple:
            return [self.encode(v, depth + 1) for v in value]
        if isinstance(value, enum.Enum):
            if self.enums.get(kind.__name__) is not kind:
                raise TypeError(f"enum {kind.__name__} is not one this codec writes")
            return {"n": kind.__name__, "v": value.value}
        if kind is frozenset:
            items = [self.encode(v, depth + 1) for v in value]
            return {"f": sorted(items, key=_text)}
        if kind is dict:
            return {"d": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in value.items()]}
        if self.records.get(kind.__name__) is kind:
            return {"r": kind.__name__, "v": {name: self.encode(getattr(value, name), depth + 1) for name, _ in self.hints(kind)}}
        raise TypeError(f"a {kind.__name__} is not a value this codec writes")

    # --- reading ----------------------------------------------------------------------------------------------------

    def decode(self, raw: Any, hint: Any = _ANY) -> Any:
        """The value `raw` encodes, checked against `hint` (a type or annotation; default: anything of the codec)."""
        try:
            return self._decoder(hint)(raw, 0)
        except RecursionError:
            raise BadRecord("nested too deeply") from None

    def _decoder(self, hint: Any) -> Callable[[Any, int], Any]:
        """`_value` for one annotation, with its common cases worked out once (a plain string or integer, an optional
        value, a tuple of one kind, a record or enum of the annotated class); any other shape, and any value off
        those paths, is read by `_value` itself, so both give the same value or the same refusal."""
        found = self._decoders.get(hint)
        if found is None:
            found = self._decoders[hint] = self._make_decoder(hint)
        return found

    def _make_decoder(self, hint: Any) -> Callable[[Any, int], Any]:
        generic = functools.partial(self._value, hint=hint)

        def slow(raw: Any, depth: int) -> Any:
            return generic(raw, depth=depth)

        if hint is str or hint is int:
            return lambda raw, depth: raw if type(raw) is hint else slow(raw, depth)
        if hint is bool:
            return lambda raw, depth: raw if raw is True or raw is False else slow(raw, depth)
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if (origin is typing.Union or origin is types.UnionType) and len(args) == 2 and type(None) in args:
            inner = args[0] if args[1] is type(None) else args[1]
            return lambda raw, depth: None if raw is None else self._decoder(inner)(raw, depth)
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            item = args[0]

            def items(raw: Any, depth: int) -> Any:
                if type(raw) is not list or depth > MAX_DEPTH:
                    return slow(raw, depth)
                decode = self._decoder(item)
                deeper = depth + 1
                return tuple([decode(r, deeper) for r in raw])

            return items
        if isinstance(hint, type) and issubclass(hint, enum.Enum) and self.enums.get(hint.__name__) is hint:

            def member(raw: Any, depth: int) -> Any:
                if type(raw) is dict and len(raw) == 2 and raw.get("n") == hint.__name__ and "v" in raw:
                    try:
                        return hint(raw["v"])
                    except (ValueError, TypeError):
                        pass
                return slow(raw, depth)

            return member
        if isinstance(hint, type) and self.records.get(hint.__name__) is hint:
            name = hint.__name__

            fields: list[tuple[str, Callable[[Any, int], Any]]] = []  # made on first use: a record may hold its own kind

            def record(raw: Any, depth: int) -> Any:
                given = raw.get("v") if type(raw) is dict and len(raw) == 2 and raw.get("r") == name else None
                if type(given) is not dict or depth > MAX_DEPTH or given.keys() != self._names(hint):
                    return slow(raw, depth)
                if not fields and self.hints(hint):
                    fields.extend((field, self._decoder(field_hint)) for field, field_hint in self.hints(hint))
                values = {field: decode(given[field], depth + 1) for field, decode in fields}
                try:
                    return hint(**values)
                except (TypeError, ValueError) as exc:
                    raise BadRecord(f"{name}: {exc}") from None

            return record
        return slow

    def hints(self, cls: type) -> tuple[tuple[str, Any], ...]:
        """A record class's init fields and their resolved annotations."""
        found = self._hints.get(cls)
        if found is None:
            try:
                resolved = typing.get_type_hints(cls)
            except Exception as exc:  # an annotation naming what its module imports only for type checkers
                raise TypeError(f"{cls.__name__}: its annotations cannot be resolved ({exc})") from None
            found = self._hints[cls] = tuple((f.name, resolved[f.name]) for f in dataclasses.fields(cls) if f.init)
        return found

    def _names(self, cls: type) -> frozenset[str]:
        found = self._field_names.get(cls)
        if found is None:
            found = self._field_names[cls] = frozenset(name for name, _ in self.hints(cls))
        return found

    def _value(self, raw: Any, hint: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise BadRecord("nested too deeply")
        value = self._build(raw, hint, depth)
        if hint is not _ANY:
            fits = self._checks.get(hint)
            if fits is None:
                fits = self._checks[hint] = self._checker(hint)
            if not fits(value):
                raise BadRecord(f"a {type(value).__name__} where {hint} is expected")
        return value

    def _checker(self, hint: Any) -> Callable[[Any], bool]:
        """`_fits` for one annotation, its cases worked out once: a cache file holds tens of thousands of values."""
        if hint is Any or hint is object:
            return lambda _: True
        if hint is None or hint is type(None):
            return lambda v: v is None
        origin = typing.get_origin(hint)
        if origin is typing.Union or origin is types.UnionType:
            options = tuple(self._checker(h) for h in typing.get_args(hint))
            exact = {h for h in typing.get_args(hint) if h in (str, int, bool, type(None))}
            return lambda v: type(v) in exact or any(f(v) for f in options)
        if origin is None and isinstance(hint, type) and hint not in (int, float, dict, Mapping):
            return lambda v: isinstance(v, hint)
        return lambda v: self._fits(v, hint)

    def _build(self, raw: Any, hint: Any, depth: int) -> Any:
        kind = type(raw)
        if raw is None or kind is bool or kind is int or kind is str:
            return raw
        if kind is float:
            if not math.isfinite(raw):
                raise BadRecord("a float that is not finite")
            return raw
        if kind is list:
            items = _items(hint, len(raw))
            return tuple(self._value(r, h, depth + 1) for r, h in zip(raw, items, strict=True))
        if kind is not dict:
            raise BadRecord(f"unexpected {kind.__name__}")
        size = len(raw)
        if size == 1 and "f" in raw and type(raw["f"]) is list:
            inner = _args(hint, frozenset)
            return frozenset(self._value(r, inner[0] if inner else _ANY, depth + 1) for r in raw["f"])
        if size == 1 and "d" in raw and type(raw["d"]) is list:
            key_hint, value_hint = _args(hint, dict) or (_ANY, _ANY)
            out: dict[Any, Any] = {}
            for pair in raw["d"]:
                if type(pair) is not list or len(pair) != 2:
                    raise BadRecord("a dict item must be a [key, value] pair")
                out[self._value(pair[0], key_hint, depth + 1)] = self._value(pair[1], value_hint, depth + 1)
            return out
        if size == 2 and "n" in raw and "v" in raw:
            cls = self.enums.get(raw["n"]) if type(raw["n"]) is str else None
            if cls is None:
                raise BadRecord("an enum this codec does not read")
            try:
                return cls(raw["v"])
            except (ValueError, TypeError):
                raise BadRecord(f"{raw['v']!r} is not a {cls.__name__}") from None
        if size == 2 and "r" in raw and "v" in raw and type(raw["v"]) is dict:
            record = self.records.get(raw["r"]) if type(raw["r"]) is str else None
            if record is None:
                raise BadRecord("a record this codec does not read")
            fields = self.hints(record)
            given = raw["v"]
            if given.keys() != self._names(record):
                raise BadRecord(f"{record.__name__}: other fields than its own")
            values = {name: self._value(given[name], field_hint, depth + 1) for name, field_hint in fields}
            try:
                return record(**values)
            except (TypeError, ValueError) as exc:
                raise BadRecord(f"{record.__name__}: {exc}") from None
        raise BadRecord("an object of unknown shape")

    def _fits(self, value: Any, hint: Any) -> bool:
        """Whether a built value is of the annotated type (its items were checked against theirs when built)."""
        if hint is Any or hint is object:
            return True
        if hint is None or hint is type(None):
            return value is None
        origin = typing.get_origin(hint)
        if origin is typing.Union or origin is types.UnionType:
            return any(self._fits(value, h) for h in typing.get_args(hint))
        if origin is tuple:
            return type(value) is tuple
        if origin is frozenset:
            return type(value) is frozenset
        if origin in (dict, Mapping, typing.Mapping) or hint in (dict, Mapping):
            return type(value) is dict
        if hint is float:
            return type(value) in (int, float)
        if isinstance(hint, type):
            if hint is int:
                return type(value) is int
            return isinstance(value, hint)
        if origin is typing.Literal:
            return value in typing.get_args(hint)
        return False


def _text(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def _args(hint: Any, container: type) -> tuple[Any, ...]:
    """The item annotations of `hint` when it is (a union holding) `container[...]`; else empty."""
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        for option in typing.get_args(hint):
            found = _args(option, container)
            if found:
                return found
        return ()
    if origin is container or (container is dict and origin in (Mapping, typing.Mapping)):
        return typing.get_args(hint)
    return ()


def _items(hint: Any, count: int) -> list[Any]:
    """The annotation of each item of a tuple of `count` items under `hint` (`tuple[X, ...]` or `tuple[X, Y]`)."""
    if hint is _ANY:
        return [_ANY] * count
    args = _args(hint, tuple)
    if not args:
        return [_ANY] * count  # a bare `tuple`, or no tuple there at all (then `_fits` refuses it)
    if len(args) == 2 and args[1] is Ellipsis:
        return [args[0]] * count
    if len(args) != count:
        raise BadRecord(f"a tuple of {count} items where {len(args)} are expected")
    return list(args)
