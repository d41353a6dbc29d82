"""One CI pytest command as pytest itself reads it: the configuration file it finds, `addopts`, `PYTEST_ADDOPTS`
from the job's environment and the command line, parsed by pytest's own option parser (the edge: reads the tree).

The order is pytest's (`Config.parse`, pytest 9): `addopts` of the configuration file, then `PYTEST_ADDOPTS`, then
the command line; a later `-k`/`-m` replaces an earlier one, `--ignore`/`--deselect` accumulate. The parser is
pytest's, built with its built-in plugins only (`_pytest.config.get_config`): no entry-point plugin, no conftest
and nothing of the audited suite is imported. Options of common third-party plugins are declared with their
arity (below), so `-n 4` does not make `4` a path; any other unknown option is an assumption of the reading.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.pytest_suites.config import PytestConfig, from_values, load_file, locate
from matrix.pytest_suites.rules import testpath_args
from matrix.schedule.model import PytestSelection

# Options that end a pytest process before any test runs (`_pytest/main.py` wrap_session and `_pytest/helpconfig.py`):
# collection only, fixtures or markers listed, setup planned, help, version, cache shown.
NOT_RUNS = {
    "collectonly": "--collect-only",
    "setupplan": "--setup-plan",
    "setuponly": "--setup-only",
    "showfixtures": "--fixtures",
    "show_fixtures_per_test": "--fixtures-per-test",
    "version": "--version",
    "help": "--help",
    "markers": "--markers",
    "cacheshow": "--cache-show",
}
# Third-party plugin options and whether they take a value (pytest-xdist, pytest-timeout, pytest-rerunfailures,
# pytest-cov, pytest-randomly, pytest-repeat, pytest-split, pytest-shard, pytest-forked, pytest-html,
# pytest-json-report, pytest-asyncio, pytest-benchmark, pytest-sugar; read from each plugin's pytest_addoption).
PLUGIN_OPTIONS: Mapping[str, int | str] = {
    "-n": 1, "--numprocesses": 1, "--dist": 1, "--maxprocesses": 1, "--max-worker-restart": 1, "--tx": 1,
    "--rsyncdir": 1, "--rsyncignore": 1, "--looponfail": 0, "-f": 0, "--maxschedchunk": 1,
    "--timeout": 1, "--timeout-method": 1, "--timeout_method": 1, "--session-timeout": 1,
    "--reruns": 1, "--reruns-delay": 1, "--only-rerun": 1, "--rerun-except": 1, "--fail-on-flaky": 0,
    "--cov": "?", "--cov-report": 1, "--cov-config": 1, "--cov-fail-under": 1, "--cov-append": 0,
    "--cov-branch": 0, "--cov-context": 1, "--no-cov": 0, "--no-cov-on-fail": 0,
    "--randomly-seed": 1, "--randomly-dont-reset-seed": 0, "--randomly-dont-reorganize": 0,
    "--count": 1, "--repeat-scope": 1, "--splits": 1, "--group": 1, "--splitting-algorithm": 1,
    "--durations-path": 1, "--store-durations": 0, "--shard-id": 1, "--num-shards": 1, "--forked": 0,
    "--html": 1, "--self-contained-html": 0, "--css": 1, "--json-report": 0, "--json-report-file": 1,
    "--asyncio-mode": 1, "--benchmark-skip": 0, "--benchmark-only": 0, "--benchmark-disable": 0,
    "--benchmark-json": 1, "--flake-finder": 0, "--flake-runs": 1, "--instafail": 0, "--disable-warnings": 0,
}  # fmt: skip
MAX_ARGS = 4_000


@dataclass(frozen=True, kw_only=True)
class Invocation:
    """What one pytest command collects and selects, every path repository-relative."""

    runs: bool = True
    config: PytestConfig = field(default_factory=PytestConfig)
    args: tuple[str, ...] = (".",)  # initial paths, `path::Class::test` node ids kept
    ignore: tuple[str, ...] = ()
    ignore_glob: tuple[str, ...] = ()  # patterns over repository-relative paths, anchored at the root
    deselect: tuple[str, ...] = ()  # prefixes of node ids relative to the rootdir, as written
    keyword: str | None = None
    markexpr: str | None = None
    confcutdir: str = "."  # conftest files above it are not loaded (pytest: the inifile's folder, else the rootdir)
    # Why a test this command seems to select may not run (or be read as pytest reads it).
    doubts: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    why_not: str | None = None
    continue_on_errors: bool = False  # --continue-on-collection-errors
    collection_error: bool = False  # `why_not` is a file that does not parse (collect_errors.py)


_PARSER: list[Any] = []


def _parser() -> Any:
    """pytest's option parser with its built-in plugins' options and the plugin table's; built once a process."""
    if not _PARSER:
        from _pytest.config import get_config

        parser = get_config(args=[], plugins=())._parser
        group = parser.getgroup("specmatrix-known-plugins")
        for option, arity in PLUGIN_OPTIONS.items():
            kwargs: dict[str, Any] = {"action": "store_true"} if arity == 0 else {"nargs": "?"} if arity == "?" else {}
            try:
                group.addoption(option, dest=f"plugin_{option.strip('-').replace('-', '_')}", **kwargs)
            except (ValueError, argparse.ArgumentError):
                continue  # declared by pytest itself
        _PARSER.append(parser)
    return _PARSER[0]


# Command lines already parsed, by their words: a schedule repeats a command across the jobs of a matrix.
_PARSED: dict[tuple[str, ...], tuple[argparse.Namespace, list[str]]] = {}
MAX_PARSED = 4_096


def _parse(args: list[str]) -> tuple[argparse.Namespace, list[str]]:
    key = tuple(args)
    found = _PARSED.get(key)
    if found is None:
        if args and all(_positional(a) for a in args):
            # Only paths: argparse gives every word to the one positional (`file_or_dir`, nargs="*") and every
            # option its default, so the parse of no words with these paths is the parse of these words.
            empty, unknown = _parse([])
            paths = _copy(empty)
            paths.file_or_dir = list(args)
            found = (paths, unknown)
        else:
            found = _parse_words(args)
        if len(_PARSED) >= MAX_PARSED:
            _PARSED.clear()
        _PARSED[key] = found
    namespace, unknown = found
    return _copy(namespace), list(unknown)


def _copy(namespace: argparse.Namespace) -> argparse.Namespace:
    # A copy per caller (the cached one is never handed out); Namespace(**fields) sets each of ~150 fields in turn.
    out = argparse.Namespace()
    out.__dict__.update(vars(namespace))
    return out


def _positional(word: str) -> bool:
    # A word argparse can only read as a positional: not an option (`-`), not a file of arguments (`@`, pytest's
    # `fromfile_prefix_chars`).
    return bool(word) and word[0] not in "-@"


def _parse_words(args: list[str]) -> tuple[argparse.Namespace, list[str]]:
    from _pytest.config.exceptions import UsageError

    try:
        namespace, unknown = _parser().parse_known_and_unknown_args(args)
    except (UsageError, SystemExit, argparse.ArgumentError) as exc:
        raise _Unparsed(str(exc)[:200]) from None
    return namespace, unknown


class _Unparsed(ValueError):
    pass


def _relative(path: str, working_dir: str) -> str:
    return posixpath.normpath(posixpath.join(working_dir, path)) if not path.startswith("/") else path


def raw_arguments(selection: PytestSelection) -> list[str]:
    """The command's arguments as written; rebuilt from the selection's fields when the reader kept none."""
    if selection.argv is not None:
        return list(selection.argv)[:MAX_ARGS]
    out: list[str] = []
    for path in selection.paths:
        out.append(posixpath.relpath(path, selection.working_dir) if selection.working_dir != "." else path)
    out += [f"--ignore={posixpath.relpath(i, selection.working_dir)}" for i in selection.ignore]
    out += [f"--deselect={d}" for d in selection.deselect]
    out += ["-k", selection.keyword] if selection.keyword is not None else []
    out += ["-m", selection.markexpr] if selection.markexpr is not None else []
    return out


def read_invocation(
    root: Path, selection: PytestSelection, env: Mapping[str, str], memo: dict[str, Any] | None = None
) -> Invocation:
    """The invocation a CI command makes in the checkout at `root` (its working folder, env and arguments);
    `memo` keeps the configuration files located from each folder across the commands of one audit."""
    cwd = posixpath.normpath(selection.working_dir or ".")
    command = raw_arguments(selection)
    assumptions: list[str] = []
    doubts: list[str] = []
    env_words: list[str] = []
    if env.get("PYTEST_ADDOPTS"):
        try:
            env_words = shlex.split(env["PYTEST_ADDOPTS"])[:MAX_ARGS]
        except ValueError:
            doubts.append("PYTEST_ADDOPTS does not split as a shell would")
    try:
        early, early_unknown = _parse([*env_words, *command])
    except _Unparsed as exc:
        return Invocation(doubts=(f"pytest's parser refuses the command line ({exc})",))
    try:
        config = _config(root, cwd, early, {} if memo is None else memo)
    except ConfigError as exc:
        return Invocation(doubts=(f"the configuration this command uses is not read: {exc}",))
    try:
        # Without addopts the full command line is the one just parsed (a schedule may hold thousands of entries).
        namespace, unknown = _parse([*config.addopts, *env_words, *command]) if config.addopts else (early, early_unknown)
    except _Unparsed as exc:
        return Invocation(config=config, doubts=(f"pytest's parser refuses the command line ({exc})",))
    if unknown:
        doubts.append(
            f"options pytest's built-in parser does not know: {' '.join(unknown[:6])} (a value of one may be read as a path)"
        )
    for dest, flag in NOT_RUNS.items():
        if getattr(namespace, dest, False):
            return Invocation(runs=False, config=config, why_not=f"{flag}: pytest runs no test")
    if getattr(namespace, "pyargs", False):
        doubts.append("--pyargs: arguments are module names, not read")
    if getattr(namespace, "noconftest", False):
        doubts.append("--noconftest: conftest files are not loaded, so their skips and ignores do not apply")
    free = [a for a in namespace.file_or_dir or [] if a]
    if free:
        args = tuple(_relative(a, cwd) for a in free)
    elif cwd == config.rootdir:
        args = testpath_args(root, config)
    else:
        args = (cwd,)
    for arg in args:
        if arg.startswith(("/", "..")):
            doubts.append(f"{arg}: a path outside the checkout")
    return Invocation(
        config=config,
        args=args,
        ignore=tuple(_relative(i, cwd) for i in namespace.ignore or []),
        ignore_glob=tuple(_relative(g, cwd) for g in namespace.ignore_glob or []),
        deselect=tuple(namespace.deselect or []),
        keyword=namespace.keyword or None,
        markexpr=namespace.markexpr or None,
        confcutdir=_relative(namespace.confcutdir, cwd) if namespace.confcutdir else _confcutdir(config),
        doubts=tuple(doubts),
        assumptions=tuple(assumptions),
        continue_on_errors=bool(getattr(namespace, "continue_on_collection_errors", False)),
    )


def _config(root: Path, cwd: str, early: argparse.Namespace, memo: dict[str, Any]) -> PytestConfig:
    """pytest's `determine_setup`, bounded to the checkout: `-c FILE`, else the file found from the common
    ancestor of the paths named (else the working folder) upwards; `--rootdir` and `-o name=value` applied."""
    inifile = early.inifilename
    if inifile:
        relative = _relative(inifile, cwd)
        values = dict(load_file(root, relative))
        found: str | None = relative
    else:
        paths = [_relative(a.split("::")[0], cwd) for a in early.file_or_dir or [] if a]
        existing = [p for p in paths if not p.startswith(("/", "..")) and (root / p).exists()]
        start = _ancestor([p if (root / p).is_dir() else posixpath.dirname(p) or "." for p in existing]) if existing else cwd
        if start not in memo:
            memo[start] = locate(root, start)
        found, values_found = memo[start]
        values = dict(values_found)
    rootdir = (posixpath.dirname(found) or ".") if found is not None else cwd
    if early.rootdir:
        rootdir = _relative(os.path.expandvars(early.rootdir), cwd)
    for override in early.override_ini or []:
        key, eq, value = override.partition("=")
        if not eq:
            raise ConfigError(f"-o {override!r}: pytest expects name=value")
        values[key] = value
    return replace(from_values(values, found, rootdir), rootdir=rootdir)


def _confcutdir(config: PytestConfig) -> str:
    # pytest (`Config._preparse`): with no --confcutdir, the configuration file's folder, else the rootdir.
    return (posixpath.dirname(config.inifile) or ".") if config.inifile else config.rootdir


def _ancestor(paths: list[str]) -> str:
    common = posixpath.commonpath(paths) if paths else "."
    return common or "."
