"""What a decorator of the audited project gives the function it wraps, read from the decorator's call.

flashinfer's `@supported_compute_capability([80, 90])` sets `_supported_ccs` (the set of `major * 10 + minor` it
lists) and `is_compute_capability_supported(cc)` (`cc in _supported_ccs`) on the function; its
`@backend_requirement({"cudnn": check_a, ...}, common_check=...)` sets `is_backend_supported(backend, cc=None)`
(False for a backend not in the table, True without `cc`, else the backend checker's own
`is_compute_capability_supported(cc)`, False when the checker has none) and `is_compute_capability_supported(cc)`
(whether any checker supports `cc`; without backends, the common check's). Source: flashinfer/utils.py,
`supported_compute_capability` and `backend_requirement` (flashinfer main fb28d72, 2026-08-22).

Only the outermost decorator is read (a wrapper around it may not carry the attributes), and only when it is
flashinfer's own: imported from `flashinfer.utils`, or by a relative import the project's files resolve to
`flashinfer/utils.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matrix.guards.model import ModuleNames, dotted
from matrix.guards.predicates import RunnerFacts, Unknown, plain

# The module that defines them and what each one sets on the function it wraps.
HOME = "flashinfer.utils"
CAPABILITY_LIST = "supported_compute_capability"
BACKEND_TABLE = "backend_requirement"
# Attributes the two decorators set, by the name a guard reads.
METHODS = frozenset({"is_compute_capability_supported", "is_backend_supported"})
ATTRIBUTES = frozenset({"_supported_ccs"})


@dataclass(frozen=True, kw_only=True)
class CapabilityList:
    """`@supported_compute_capability(ccs)`: the expression of the capabilities listed."""

    ccs: ast.expr


@dataclass(frozen=True, kw_only=True)
class BackendTable:
    """`@backend_requirement({...}, common_check=c)`: each backend name with its checker's expression."""

    backends: tuple[tuple[str, ast.expr], ...]
    common_check: ast.expr | None


# Where the project's files define a name the function's module imports ("flashinfer/utils.py:name"), or None.
WhereDefined = Callable[[str], str | None]


def decorated_as(fn: ast.FunctionDef, imports: dict[str, str], where: WhereDefined) -> CapabilityList | BackendTable | None:
    """What the function's outermost decorator makes of it, when that is one of the two read here; None otherwise
    (another decorator, a form of the call not read: a dict that is not written out, a computed backend name)."""
    if not fn.decorator_list or not isinstance(fn.decorator_list[0], ast.Call):
        return None
    call = fn.decorator_list[0]
    kind = _which(call.func, imports, where)
    if kind == CAPABILITY_LIST and len(call.args) == 1 and not call.keywords:
        return CapabilityList(ccs=call.args[0])
    if kind != BACKEND_TABLE:
        return None
    table = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "backend_checks"), None)
    if not isinstance(table, ast.Dict) or len(call.args) > 1:
        return None
    backends: list[tuple[str, ast.expr]] = []
    for key, value in zip(table.keys, table.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None  # `**other` or a computed name: the table is not known
        backends.append((key.value, value))
    common = next((k.value for k in call.keywords if k.arg == "common_check"), None)
    if any(k.arg not in ("backend_checks", "common_check", "heuristic_func") for k in call.keywords):
        return None
    return BackendTable(backends=tuple(backends), common_check=common)


def _which(func: ast.expr, imports: dict[str, str], where: WhereDefined) -> str | None:
    name = dotted(func)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    target = imports.get(head, head)
    resolved = f"{target}.{rest}" if rest else target
    for kind in (CAPABILITY_LIST, BACKEND_TABLE):
        if resolved == f"{HOME}.{kind}":
            return kind
        # `from ..utils import supported_compute_capability` inside the package: a relative import keeps the bare name
        if resolved == kind and head in imports and where(head) == f"flashinfer/utils.py:{kind}":
            return kind
    return None


class DecoratedReader:
    """Mixin for the evaluator: the attributes the two decorators give, on a function a guard names."""

    facts: RunnerFacts
    current: ModuleNames
    homes: dict[int, ModuleNames]

    def value(self, node: ast.expr) -> object:  # pragma: no cover - provided by the evaluator
        raise NotImplementedError

    def _enter(self, names: ModuleNames) -> tuple[Any, ...]:  # pragma: no cover - provided by the evaluator
        raise NotImplementedError

    def _leave(self, saved: tuple[Any, ...]) -> None:  # pragma: no cover - provided by the evaluator
        raise NotImplementedError

    def decorated_method(self, call: ast.Call) -> object | None:
        """`f.is_compute_capability_supported(cc)` / `f.is_backend_supported(b, cc)` where `f` is a function one of
        the two decorators wraps: the answer, Unknown, or None when `f` is no such function."""
        assert isinstance(call.func, ast.Attribute)
        found = self._decorated(call.func.value)
        if found is None:
            return None
        kind, names = found
        args = [self.value(a) for a in call.args]
        keywords = {k.arg: self.value(k.value) for k in call.keywords if k.arg is not None}
        if len(keywords) != len(call.keywords):
            return Unknown(why=f".{call.func.attr}(**kwargs)")
        if call.func.attr == "is_compute_capability_supported":
            if len(args) != 1 or keywords:
                return Unknown(why=".is_compute_capability_supported() form")
            return self._supports(kind, names, args[0])
        if not isinstance(kind, BackendTable) or not 1 <= len(args) + len(keywords) <= 2 or set(keywords) - {"cc"}:
            return Unknown(why=".is_backend_supported() of a function without a backend table, or its form")
        backend, cc = args[0], (args[1] if len(args) > 1 else keywords.get("cc"))
        if not kind.backends:
            return Unknown(why="is_backend_supported() raises for a function with no backends")
        if isinstance(backend, Unknown):
            return plain(backend)
        if not isinstance(backend, str):
            return Unknown(why="is_backend_supported() of a backend that is not a name")
        checker = dict(kind.backends).get(backend)
        if checker is None:
            return False
        if cc is None:
            return True
        return self._checker_supports(checker, names, cc)

    def decorated_attribute(self, node: ast.Attribute) -> object | None:
        """`f._supported_ccs` of a function `@supported_compute_capability` wraps; None when `f` is none."""
        found = self._decorated(node.value)
        if found is None or not isinstance(found[0], CapabilityList):
            return None
        ccs = self._in(found[1], found[0].ccs)
        if isinstance(ccs, Unknown):
            return plain(ccs)
        return frozenset(ccs) if isinstance(ccs, tuple | frozenset) else Unknown(why="_supported_ccs of a value not read")

    def _supports(self, kind: CapabilityList | BackendTable, names: ModuleNames, cc: object) -> object:
        if isinstance(kind, CapabilityList):
            ccs = self._in(names, kind.ccs)
            if isinstance(ccs, Unknown) or isinstance(cc, Unknown):
                return plain(ccs if isinstance(ccs, Unknown) else cc)
            if not isinstance(ccs, tuple | frozenset) or not isinstance(cc, int):
                return Unknown(why="is_compute_capability_supported() of values not read")
            return cc in ccs
        if not kind.backends:
            if kind.common_check is None:
                return Unknown(why="is_compute_capability_supported() raises without a common check")
            return self._checker_supports(kind.common_check, names, cc)
        answers = [self._checker_supports(checker, names, cc) for _, checker in kind.backends]
        if any(a is True for a in answers):
            return True
        unknown = next((a for a in answers if isinstance(a, Unknown)), None)
        return unknown if unknown is not None else False

    def _checker_supports(self, checker: ast.expr, names: ModuleNames, cc: object) -> object:
        """A backend checker's `is_compute_capability_supported(cc)`, False where it has none (hasattr)."""
        saved = self._enter(names)
        try:
            found = self._decorated(checker)
            fn = self.value(checker)
        finally:
            self._leave(saved)
        if found is not None:
            return self._supports(found[0], found[1], cc)
        if isinstance(fn, ast.FunctionDef) and not fn.decorator_list:
            return False  # a plain function: `hasattr(checker, "is_compute_capability_supported")` is false
        return Unknown(why="a backend checker this reading cannot follow")

    def _decorated(self, base: ast.expr) -> tuple[CapabilityList | BackendTable, ModuleNames] | None:
        fn = self.value(base)
        if not isinstance(fn, ast.FunctionDef):
            return None
        names = self.homes.get(id(fn), self.current)
        linker = names.linker

        def where(name: str) -> str | None:
            found = linker.link(name) if linker is not None else None
            return found.where if found is not None else None

        kind = decorated_as(fn, names.import_map, where)
        return None if kind is None else (kind, names)

    def _in(self, names: ModuleNames, expr: ast.expr) -> object:
        saved = self._enter(names)
        try:
            return self.value(expr)
        finally:
            self._leave(saved)
