"""Which matrix backend a registered test tests: data of the matrix file, derived by default, overridable; pure.

The matrix file's `[tested.<backend>]` tables say how a test of that backend is recognised: `names` are the
tokens of its file, class or function name (`trtllm_mha`, `trtllmmha`), `modules` the backend modules it imports
(`trtllm_mha_backend`), `server_args` the `--attention-backend` values it starts a server with, and `exclude`
the node-id globs of look-alikes (flashinfer's MLA backend is not its MHA one). A backend without a table is
recognised by its own name and `<backend>_backend`. An override file (`specmatrix guards --tested-by FILE`,
`[test]` "node-id glob" = "backend", or "" for none) decides a test outright.

The innermost name decides first (function, then class, then file); the file's imports and server args only
when no name does; two backends at the same step decide nothing (a test of several backends has no single one).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matrix.core.errors import ConfigError

TABLE = "tested"
_KEYS = {"names", "modules", "server_args", "exclude", "source"}
# `--attention-backend trtllm_mha`, `"--attention-backend", "fa3"`, `attention_backend="triton"`,
# `--speculative-draft-attention-backend X`: the value after the flag, quoted or not.
_SERVER_ARG = re.compile(r"attention[-_]backend['\"]?\s*[,=:]?\s*['\"]?([A-Za-z0-9_]+)")
MAX_SIGNS = 64  # tokens, modules or globs per backend


@dataclass(frozen=True, kw_only=True)
class BackendSigns:
    """How a test of `backend` is recognised; `source` says where that was declared."""

    backend: str
    names: tuple[str, ...]
    modules: tuple[str, ...]
    server_args: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class SubjectTable:
    """Every backend's signs, and the overrides that decide a test outright (in order, first match wins)."""

    signs: tuple[BackendSigns, ...]
    overrides: tuple[tuple[str, str], ...] = ()
    override_source: str = ""


@dataclass(frozen=True, kw_only=True)
class Subject:
    """The backend a test tests (None: none, or none that one step singles out), and how that was read."""

    backend: str | None
    how: str


def derived(backend: str) -> BackendSigns:
    """The signs of a backend the matrix file says nothing about: its own name and `<backend>_backend`."""
    return BackendSigns(
        backend=backend,
        names=(backend,),
        modules=(f"{backend}_backend",),
        server_args=(backend,),
        source=f"the backend's own name ({backend}, {backend}_backend)",
    )


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{where}: expected a list of non-empty strings")
    if len(value) > MAX_SIGNS:
        raise ConfigError(f"{where}: more than {MAX_SIGNS} entries")
    return tuple(v.strip() for v in value)


def parse_tested(raw: Any, backends: Sequence[str], source: str) -> SubjectTable:
    """The `[tested.<backend>]` tables of a matrix file; every backend of the matrix gets signs (derived ones
    when it has no table)."""
    table = raw if raw is not None else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [{TABLE}] must be a table of [{TABLE}.<backend>] tables")
    signs: list[BackendSigns] = []
    for name, value in table.items():
        where = f"{source}: [{TABLE}.{name}]"
        if name not in backends:
            raise ConfigError(f"{where}: unknown backend {name!r} (allowed: {list(backends)})")
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: must be a table")
        unknown = sorted(set(value) - _KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(_KEYS))})")
        names = _strings(value.get("names", [name]), f"{where}: names")
        where_text = value.get("source", "")
        if not isinstance(where_text, str):
            raise ConfigError(f"{where}: source must be a string")
        signs.append(
            BackendSigns(
                backend=name,
                names=tuple(n.lower() for n in names),
                modules=_strings(value.get("modules", [f"{name}_backend"]), f"{where}: modules"),
                server_args=_strings(value.get("server_args", [name]), f"{where}: server_args"),
                exclude=_strings(value.get("exclude", []), f"{where}: exclude"),
                source=f"[{TABLE}.{name}] of {source}",
            )
        )
    declared = {s.backend for s in signs}
    signs.extend(derived(b) for b in backends if b not in declared)
    return SubjectTable(signs=tuple(signs))


def parse_overrides(data: Mapping[str, Any], backends: Sequence[str], source: str) -> tuple[tuple[str, str], ...]:
    """An override file: `[test]` "node-id glob" = "backend" (or "" for a test of no matrix backend)."""
    unknown = sorted(set(data) - {"test"})
    if unknown:
        raise ConfigError(f"{source}: unknown key {unknown[0]!r} (allowed: test)")
    table = data.get("test", {})
    if not isinstance(table, dict):
        raise ConfigError(f'{source}: [test] must be a table of "node-id glob" = "backend"')
    out: list[tuple[str, str]] = []
    for glob, backend in table.items():
        if not isinstance(backend, str) or (backend and backend not in backends):
            raise ConfigError(f'{source}: test {glob!r}: expected one of {list(backends)} or "", got {backend!r}')
        out.append((glob, backend))
    return tuple(out)


def _flat(text: str) -> str:
    return text.lower().replace("_", "").replace("-", "")


def _named(signs: BackendSigns, name: str) -> bool:
    low = name.lower()
    return any(token in low or _flat(token) in _flat(name) for token in signs.names)


def _decided(found: Iterable[BackendSigns], what: str) -> Subject | None:
    """One backend at a step decides; several decide that no single backend is tested."""
    hits = list(dict.fromkeys(found))
    if len(hits) == 1:
        return Subject(backend=hits[0].backend, how=f"{what} names {hits[0].backend}, by {hits[0].source}")
    if hits:
        return Subject(backend=None, how=f"{what} names several backends ({', '.join(s.backend for s in hits)})")
    return None


def file_server_args(text: str) -> frozenset[str]:
    """The `--attention-backend` values a file's text names (server args, any quoting)."""
    return frozenset(_SERVER_ARG.findall(text))


def subject_of(
    tested: SubjectTable,
    nodeid: str,
    *,
    imports: Iterable[str] = (),
    server_args: frozenset[str] = frozenset(),
) -> Subject:
    """The backend `nodeid` (`path::Class::test`) tests: an override, its names innermost first, then the
    file's backend imports and server args."""
    path = nodeid.split("::", 1)[0]
    for glob, backend in tested.overrides:
        if fnmatch.fnmatchcase(nodeid, glob) or fnmatch.fnmatchcase(path, glob):
            how = f"override {glob!r} ({tested.override_source})"
            return Subject(backend=backend or None, how=how)
    live = [s for s in tested.signs if not any(fnmatch.fnmatchcase(nodeid, g) or fnmatch.fnmatchcase(path, g) for g in s.exclude)]
    parts = nodeid.split("::")
    stem = parts[0].rsplit("/", 1)[-1].removesuffix(".py")
    levels = [(f"test name {p}", p) for p in reversed(parts[1:])] + [(f"file name {stem}.py", stem)]
    for what, name in levels:
        decided = _decided((s for s in live if _named(s, name)), what)
        if decided is not None:
            return decided
    modules = {part for target in imports for part in target.split(".")}
    by_import = _decided((s for s in live if modules & set(s.modules)), "the file's imports")
    if by_import is not None:
        return by_import
    by_args = _decided((s for s in live if server_args & set(s.server_args)), "the file's server args")
    if by_args is not None:
        return by_args
    return Subject(backend=None, how="no name, import or server arg of the test names a matrix backend")
