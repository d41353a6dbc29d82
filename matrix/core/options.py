"""Options resolved once: defaults -> pyproject [tool.specmatrix] -> environment -> command line."""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.errors import ConfigError
from matrix.core.option_table import BY_NAME, OPTIONS, OptionKind, OptionSpec
from matrix.core.profile import RunnerProfile
from matrix.core.runner_files import load_runners
from matrix.core.tomlfields import read_toml_file

if TYPE_CHECKING:
    from matrix.core.model import Matrix

DEFAULT_RUNNER = str(BY_NAME["runner"].default)
_PYPROJECT_KEYS = tuple(BY_NAME)
_FALSE = ("0", "false", "no", "off")
_TRUE = ("1", "true", "yes", "on")
_ENV_SEPARATOR = {OptionKind.PATHS: ":", OptionKind.NAMES: ","}


# old spelling -> what to write instead; each still works and prints one warning line.
DEPRECATED: dict[str, str] = {
    "--json": "--format json",
    "--md": "--format md",
    "--allow": "--allowlist FILE",
    "--matrix-allow": "--matrix-allowlist FILE",
    "--format gha": "--format github",
    "--json FILE": "--format json --output FILE",
    "--md FILE": "--summary FILE",
    "--baseline REPORT": "--reference REPORT",
}


def warn_deprecated(old: str, stream: Any = None) -> None:
    """The one line a deprecated spelling prints."""
    print(f"specmatrix: warning: {old} is deprecated; use {DEPRECATED[old]}", file=stream or sys.stderr)


@dataclass(frozen=True, kw_only=True)
class Options:
    """The resolved options; one field per row of `OPTIONS` (its `field`), defaults as the table gives them."""

    matrix_path: Path | None = None
    runner_files: tuple[Path, ...] = ()
    runner: str = DEFAULT_RUNNER
    allowlist: Path | None = None
    replace_runners: tuple[str, ...] = ()  # built-in (or earlier) profile names a runner file may redefine
    builtin_runners: bool = True  # False: the runner files' profiles only, none of the 13 built-in sglang ones
    cache_dir: Path | None = None  # the results cache folder; None: $XDG_CACHE_HOME/specmatrix or ~/.cache/specmatrix
    no_cache: bool = False  # True: no cache is read or written


@dataclass(frozen=True, kw_only=True)
class CliOverrides:
    """What the command line said; None means 'not given'."""

    matrix_path: Path | None = None
    runner_files: tuple[Path, ...] = ()
    runner: str | None = None
    allowlist: Path | None = None
    replace_runners: tuple[str, ...] = ()
    builtin_runners: bool | None = None  # no flag sets it today; the cascade reads it as any other
    cache_dir: Path | None = None
    no_cache: bool | None = None


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


_VALIDATION_ORDER = {OptionKind.PATH: 0, OptionKind.NAME: 0, OptionKind.PATHS: 1, OptionKind.NAMES: 1, OptionKind.SWITCH: 2}


def _unknown_key(pyproject: Path, key: str) -> ConfigError:
    allowed = ", ".join(sorted(_PYPROJECT_KEYS))
    near = difflib.get_close_matches(key, _PYPROJECT_KEYS, n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    return ConfigError(f"{pyproject}: [tool.specmatrix]: unknown key {key!r} ({hint}allowed: {allowed})")


def _check_value(pyproject: Path, spec: OptionSpec, value: Any) -> None:
    where = f"{pyproject}: [tool.specmatrix] {spec.name}"
    if spec.kind in (OptionKind.PATH, OptionKind.NAME):
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where}: expected a non-empty string, got {_shown(value)}")
        items = [value]
    elif spec.kind.accumulates:
        items = value if isinstance(value, list) else [value]
        if not all(isinstance(v, str) and v for v in items):
            raise ConfigError(f"{where}: expected a string or a list of strings, got {_shown(value)}")
    elif not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {_shown(value)}")
    else:
        return
    for item in items:
        if _CONTROL.search(item):
            raise ConfigError(f"{where}: {_shown(item)} holds a control character (a NUL byte, a newline)")
        if spec.kind in (OptionKind.PATH, OptionKind.PATHS):
            _check_inside(pyproject.parent, item, where)


# C0 controls and DEL: no file name or runner name holds one, and a NUL makes every path call raise.
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _check_inside(folder: Path, item: str, where: str) -> None:
    """A file a pyproject names lies in the project: beside the pyproject or under its folder, symlinks resolved.

    A checkout's own configuration must not make a run read another file of the machine (`../x.toml`,
    `/etc/...`, a link to one); a file elsewhere is named on the command line or in the environment instead."""
    if item.startswith("/") or ".." in item.replace("\\", "/").split("/"):
        raise ConfigError(f"{where}: {_shown(item)} lies outside the project ({folder}); name it relative to it, inside it")
    try:
        inside = (folder / item).resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        inside = False  # a symlink loop
    if not inside:
        raise ConfigError(f"{where}: {_shown(item)} is a link to a file outside the project ({folder}); refusing to read it")


def _pyproject_table(pyproject: Path | None) -> tuple[Mapping[str, Any], Path]:
    if pyproject is None:
        return {}, Path.cwd()
    tool = read_toml_file(pyproject).get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{pyproject}: [tool] must be a table")
    table = tool.get("specmatrix", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.specmatrix] must be a table")
    unknown = sorted(set(table) - set(_PYPROJECT_KEYS))
    if unknown:
        raise _unknown_key(pyproject, unknown[0])
    for spec in sorted(OPTIONS, key=lambda s: _VALIDATION_ORDER[s.kind]):
        if spec.name in table:
            _check_value(pyproject, spec, table[spec.name])
    return table, pyproject.parent


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _from_pyproject(spec: OptionSpec, value: Any, base: Path) -> object:
    """A validated pyproject value as the option holds it: file names relative to the pyproject's folder."""
    match spec.kind:
        case OptionKind.PATH:
            return base / str(value)
        case OptionKind.PATHS:
            return tuple(base / f for f in _as_list(value))
        case OptionKind.NAMES:
            return tuple(_as_list(value))
        case OptionKind.SWITCH:
            return bool(value)
    return str(value)


def _from_env(spec: OptionSpec, value: str) -> object:
    match spec.kind:
        case OptionKind.PATH:
            return Path(value)
        case OptionKind.PATHS:
            return tuple(Path(p) for p in value.split(_ENV_SEPARATOR[spec.kind]) if p)
        case OptionKind.NAMES:
            return tuple(n for n in value.split(_ENV_SEPARATOR[spec.kind]) if n)
        case OptionKind.SWITCH:
            flag = value.strip().lower()
            if flag not in (*_FALSE, *_TRUE):
                raise ConfigError(f"{spec.env}: expected 1 or 0 (true or false), got {value!r}")
            return flag in _TRUE
    return value


def _layer(value: Any, layer: Any, spec: OptionSpec) -> Any:
    """A later source over an earlier one: it replaces a single value, extends an accumulating one."""
    if spec.kind.accumulates:
        return (*value, *layer)
    return layer


def resolve_options(*, cli: CliOverrides, env: Mapping[str, str], cwd: Path) -> Options:
    """Apply the cascade once, the same way for every option of the table: defaults, [tool.specmatrix], the
    environment, the command line; later sources win, accumulating options (runner files) add up."""
    table, base = _pyproject_table(find_pyproject(cwd))
    values: dict[str, Any] = {}
    for spec in OPTIONS:
        value: Any = spec.default
        if spec.name in table:
            value = _layer(value, _from_pyproject(spec, table[spec.name], base), spec)
        if spec.env and env.get(spec.env):
            value = _layer(value, _from_env(spec, env[spec.env]), spec)
        given = getattr(cli, spec.field)
        if given is not None and given != ():
            value = _layer(value, tuple(given) if spec.kind.accumulates else given, spec)
        if spec.kind is OptionKind.NAMES:
            value = tuple(dict.fromkeys(value))
        values[spec.field] = value
    return Options(**values)


def cache_folder(options: Options, env: Mapping[str, str]) -> Path | None:
    """Where the results caches live: None with `no_cache`, else `cache_dir` (the cascade: pyproject, then
    $SPECMATRIX_CACHE_DIR, then --cache-dir), else $XDG_CACHE_HOME/specmatrix, else ~/.cache/specmatrix."""
    if options.no_cache:
        return None
    if options.cache_dir is not None:
        return options.cache_dir
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "specmatrix"


def load_runner_profiles(options: Options) -> Mapping[str, RunnerProfile]:
    """The built-in profiles plus the option's runner files, with the redefinitions it allows."""
    return load_runners(options.runner_files, options.replace_runners, builtin=options.builtin_runners)


@dataclass(frozen=True, kw_only=True)
class Loaded:
    options: Options
    matrix: Matrix
    runners: Mapping[str, RunnerProfile]


def load(options: Options) -> Loaded:
    """Read the matrix and runner files the options name."""
    from matrix.core.loader import load_matrix  # the matrix records: only the commands that read a matrix

    return Loaded(
        options=options,
        matrix=load_matrix(options.matrix_path),
        runners=load_runner_profiles(options),
    )
