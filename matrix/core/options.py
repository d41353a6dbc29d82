"""Options resolved once: defaults -> pyproject [tool.specmatrix] -> environment -> command line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.loader import load_matrix, load_runners, read_toml_file
from matrix.core.model import Matrix, RunnerProfile

ENV_MATRIX = "SPECMATRIX_MATRIX"
ENV_RUNNERS = "SPECMATRIX_RUNNERS"
ENV_RUNNER = "SPECMATRIX_RUNNER"
DEFAULT_RUNNER = "auto"
_PYPROJECT_KEYS = {"matrix", "runners", "runner", "allowlist"}


@dataclass(frozen=True, kw_only=True)
class Options:
    matrix_path: Path | None = None
    runner_files: tuple[Path, ...] = ()
    runner: str = DEFAULT_RUNNER
    allowlist: Path | None = None


@dataclass(frozen=True, kw_only=True)
class CliOverrides:
    """What the command line said; None means 'not given'."""

    matrix_path: Path | None = None
    runner_files: tuple[Path, ...] = ()
    runner: str | None = None
    allowlist: Path | None = None


def find_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _pyproject_table(pyproject: Path | None) -> tuple[Mapping[str, Any], Path]:
    if pyproject is None:
        return {}, Path.cwd()
    table = read_toml_file(pyproject).get("tool", {}).get("specmatrix", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.specmatrix] must be a table")
    unknown = set(table) - _PYPROJECT_KEYS
    if unknown:
        raise ConfigError(
            f"{pyproject}: [tool.specmatrix]: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(_PYPROJECT_KEYS))})"
        )
    return table, pyproject.parent


def resolve_options(*, cli: CliOverrides, env: Mapping[str, str], cwd: Path) -> Options:
    """Apply the cascade once; later sources win, runner files accumulate."""
    table, base = _pyproject_table(find_pyproject(cwd))
    matrix_path: Path | None = None
    runner_files: list[Path] = []
    runner = DEFAULT_RUNNER
    allowlist: Path | None = None
    if "matrix" in table:
        matrix_path = base / str(table["matrix"])
    if "runners" in table:
        files = table["runners"] if isinstance(table["runners"], list) else [table["runners"]]
        runner_files.extend(base / str(f) for f in files)
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
    if cli.matrix_path is not None:
        matrix_path = cli.matrix_path
    runner_files.extend(cli.runner_files)
    if cli.runner is not None:
        runner = cli.runner
    if cli.allowlist is not None:
        allowlist = cli.allowlist
    return Options(matrix_path=matrix_path, runner_files=tuple(runner_files), runner=runner, allowlist=allowlist)


@dataclass(frozen=True, kw_only=True)
class Loaded:
    options: Options
    matrix: Matrix
    runners: Mapping[str, RunnerProfile]


def load(options: Options) -> Loaded:
    """Read the matrix and runner files the options name."""
    return Loaded(options=options, matrix=load_matrix(options.matrix_path), runners=load_runners(options.runner_files))
