"""Options resolved once: defaults -> pyproject [tool.specmatrix] -> environment -> command line."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.errors import ConfigError
from matrix.core.profile import RunnerProfile
from matrix.core.runner_files import load_runners
from matrix.core.tomlfields import read_toml_file

if TYPE_CHECKING:
    from matrix.core.model import Matrix

ENV_MATRIX = "SPECMATRIX_MATRIX"
ENV_RUNNERS = "SPECMATRIX_RUNNERS"
ENV_RUNNER = "SPECMATRIX_RUNNER"
ENV_REPLACE_RUNNERS = "SPECMATRIX_REPLACE_RUNNERS"
ENV_BUILTIN_RUNNERS = "SPECMATRIX_BUILTIN_RUNNERS"  # "0" / "false": only the profiles of the runner files
DEFAULT_RUNNER = "auto"


@dataclass(frozen=True, kw_only=True)
class OptionName:
    """One option under each of its names: the pyproject key, the environment variable, the command-line flag."""

    key: str
    env: str
    flag: str


# Every option of the cascade, once. Later sources win: defaults, [tool.specmatrix], environment, command line.
OPTION_NAMES: tuple[OptionName, ...] = (
    OptionName(key="matrix", env=ENV_MATRIX, flag="--matrix FILE"),
    OptionName(key="runners", env=ENV_RUNNERS, flag="--runners FILE"),
    OptionName(key="runner", env=ENV_RUNNER, flag="--runner NAME"),
    OptionName(key="allowlist", env="", flag="--allowlist FILE"),
    OptionName(key="replace_runners", env=ENV_REPLACE_RUNNERS, flag="--replace-runner NAME"),
    OptionName(key="builtin_runners", env=ENV_BUILTIN_RUNNERS, flag=""),
)
_PYPROJECT_KEYS = {o.key for o in OPTION_NAMES}
_FALSE = ("0", "false", "no", "off")
_TRUE = ("1", "true", "yes", "on")


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
    matrix_path: Path | None = None
    runner_files: tuple[Path, ...] = ()
    runner: str = DEFAULT_RUNNER
    allowlist: Path | None = None
    replace_runners: tuple[str, ...] = ()  # built-in (or earlier) profile names a runner file may redefine
    builtin_runners: bool = True  # False: the runner files' profiles only, none of the 13 built-in sglang ones


@dataclass(frozen=True, kw_only=True)
class CliOverrides:
    """What the command line said; None means 'not given'."""

    matrix_path: Path | None = None
    runner_files: tuple[Path, ...] = ()
    runner: str | None = None
    allowlist: Path | None = None
    replace_runners: tuple[str, ...] = ()


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _pyproject_table(pyproject: Path | None) -> tuple[Mapping[str, Any], Path]:
    if pyproject is None:
        return {}, Path.cwd()
    tool = read_toml_file(pyproject).get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{pyproject}: [tool] must be a table")
    table = tool.get("specmatrix", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.specmatrix] must be a table")
    unknown = set(table) - _PYPROJECT_KEYS
    if unknown:
        raise ConfigError(
            f"{pyproject}: [tool.specmatrix]: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(_PYPROJECT_KEYS))})"
        )
    for key in ("matrix", "runner", "allowlist"):
        if key in table and (not isinstance(table[key], str) or not table[key]):
            raise ConfigError(f"{pyproject}: [tool.specmatrix] {key}: expected a non-empty string, got {table[key]!r}")
    for key in ("runners", "replace_runners"):
        value = table.get(key)
        items = value if isinstance(value, list) else [value]
        if value is not None and not all(isinstance(v, str) and v for v in items):
            raise ConfigError(f"{pyproject}: [tool.specmatrix] {key}: expected a string or a list of strings, got {value!r}")
    if "builtin_runners" in table and not isinstance(table["builtin_runners"], bool):
        raise ConfigError(
            f"{pyproject}: [tool.specmatrix] builtin_runners: expected true or false, got {table['builtin_runners']!r}"
        )
    return table, pyproject.parent


def _as_list(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def resolve_options(*, cli: CliOverrides, env: Mapping[str, str], cwd: Path) -> Options:
    """Apply the cascade once; later sources win, runner files accumulate."""
    table, base = _pyproject_table(find_pyproject(cwd))
    matrix_path: Path | None = None
    runner_files: list[Path] = []
    runner = DEFAULT_RUNNER
    allowlist: Path | None = None
    replace: list[str] = _as_list(table["replace_runners"]) if "replace_runners" in table else []
    if "matrix" in table:
        matrix_path = base / str(table["matrix"])
    if "runners" in table:
        runner_files.extend(base / f for f in _as_list(table["runners"]))
    if "runner" in table:
        runner = str(table["runner"])
    if "allowlist" in table:
        allowlist = base / str(table["allowlist"])
    if env.get(ENV_MATRIX):
        matrix_path = Path(env[ENV_MATRIX])
    if env.get(ENV_RUNNERS):
        runner_files.extend(Path(p) for p in env[ENV_RUNNERS].split(":") if p)
    if env.get(ENV_RUNNER):
        runner = env[ENV_RUNNER]
    if env.get(ENV_REPLACE_RUNNERS):
        replace.extend(n for n in env[ENV_REPLACE_RUNNERS].split(",") if n)
    builtin = bool(table.get("builtin_runners", True))
    if env.get(ENV_BUILTIN_RUNNERS):
        flag = env[ENV_BUILTIN_RUNNERS].strip().lower()
        if flag not in (*_FALSE, *_TRUE):
            raise ConfigError(f"{ENV_BUILTIN_RUNNERS}: expected 1 or 0 (true or false), got {env[ENV_BUILTIN_RUNNERS]!r}")
        builtin = flag in _TRUE
    if cli.matrix_path is not None:
        matrix_path = cli.matrix_path
    runner_files.extend(cli.runner_files)
    if cli.runner is not None:
        runner = cli.runner
    if cli.allowlist is not None:
        allowlist = cli.allowlist
    replace.extend(cli.replace_runners)
    return Options(
        matrix_path=matrix_path,
        runner_files=tuple(runner_files),
        runner=runner,
        allowlist=allowlist,
        replace_runners=tuple(dict.fromkeys(replace)),
        builtin_runners=builtin,
    )


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
