"""One CI pytest command as pytest itself reads it: the configuration file it finds, `addopts`, `PYTEST_ADDOPTS`
from the job's environment and the command line, parsed by pytest's own option parser (the edge: reads the tree).

The order is pytest's (`Config.parse`, pytest 9): `addopts` of the configuration file, then `PYTEST_ADDOPTS`, then
the command line; a later `-k`/`-m` replaces an earlier one, `--ignore`/`--deselect` accumulate. The parser is
pytest's, built with its built-in plugins only (`_pytest.config.get_config`): no entry-point plugin, no conftest
and nothing of the audited suite is imported. On it are registered the options of the plugin table
(`matrix.schedule.environment.plugins`: common plugins and specmatrix's own, each with its arity, so `-n 4` does not
make `4` a path; one whose plugin the job is not known to install is an assumption) and those the conftest files
pytest loads first declare (`parser.addoption`, read from their text); any other unknown option is a doubt.
"""

from __future__ import annotations

import argparse
import glob
import os
import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.treefiles import TreeFiles
from matrix.pytest_suites.config import PytestConfig, from_values, load_file, locate
from matrix.pytest_suites.rules import testpath_args
from matrix.schedule.environment.conftest_options import MAX_CONFTEST_CHARS, DeclaredOption, declared_options
from matrix.schedule.environment.plugins import Arity, option_arities, plugin_table
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
    # `why_not` stops pytest before any test runs: a file that does not parse, a path or node id that names nothing
    collection_error: bool = False
    names_nothing: bool = False  # the stop is a path or node id of the command line that names nothing
    # Every word pytest parses, in its order (addopts, PYTEST_ADDOPTS, the command line): a conftest's own options.
    words: tuple[str, ...] = ()
    # The options the conftest files pytest loads before it parses the command line declare (their values are the
    # command's); a conftest loaded later gives its options their defaults.
    options: tuple[DeclaredOption, ...] = ()
    # Why the command may stop before running any test (a path it names that may not exist): no verdict of it is
    # certain, a skip included (collect_errors.py).
    may_stop: str = ""


# Options registered on top of pytest's built-in ones: (flags, arity) pairs (a conftest's declared options).
Extra = frozenset[tuple[tuple[str, ...], Arity]]
_PARSERS: dict[Extra, Any] = {}
MAX_PARSERS = 64


def _parser(extra: Extra = frozenset()) -> Any:
    """pytest's option parser with its built-in plugins' options, every option of the plugin table
    (`matrix/data/pytest_plugins.toml`, specmatrix's own included) and `extra`; built once a process per `extra`."""
    found = _PARSERS.get(extra)
    if found is None:
        from _pytest.config import get_config

        found = get_config(args=[], plugins=())._parser
        group = found.getgroup("specmatrix-known-plugins")
        options = [(o.flags, o.arity) for p in plugin_table() for o in p.options]
        for index, (flags, arity) in enumerate([*options, *sorted(extra)]):
            kwargs: dict[str, Any] = {"action": "store_true"} if arity is Arity.NONE else {}
            if arity in (Arity.OPTIONAL, Arity.SOME, Arity.ANY):
                kwargs["nargs"] = arity.value
            try:
                # `_addoption`, as pytest-xdist registers `-n`: `addoption` refuses lowercase short flags, which pytest
                # reserves for itself (that refusal once left `-n 4` unknown and `4` a path).
                group._addoption(*flags, dest=f"plugin_option_{index}", **kwargs)
            except (ValueError, argparse.ArgumentError):
                continue  # declared by pytest itself, or by an earlier plugin
        if len(_PARSERS) >= MAX_PARSERS:
            _PARSERS.clear()
        _PARSERS[extra] = found
    return found


# Command lines already parsed, by their words: a schedule repeats a command across the jobs of a matrix.
_PARSED: dict[tuple[tuple[str, ...], Extra], tuple[argparse.Namespace, list[str]]] = {}
MAX_PARSED = 4_096


def _parse(args: list[str], extra: Extra = frozenset()) -> tuple[argparse.Namespace, list[str]]:
    key = (tuple(args), extra)
    found = _PARSED.get(key)
    if found is None:
        if args and all(_positional(a) for a in args):
            # Only paths: argparse gives every word to the one positional (`file_or_dir`, nargs="*") and every
            # option its default, so the parse of no words with these paths is the parse of these words.
            empty, unknown = _parse([], extra)
            paths = _copy(empty)
            paths.file_or_dir = list(args)
            found = (paths, unknown)
        else:
            found = _parse_words(args, extra)
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


def _parse_words(args: list[str], extra: Extra = frozenset()) -> tuple[argparse.Namespace, list[str]]:
    from _pytest.config.exceptions import UsageError

    try:
        namespace, unknown = _parser(extra).parse_known_and_unknown_args(args)
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
    root: Path,
    selection: PytestSelection,
    env: Mapping[str, str],
    memo: dict[str, Any] | None = None,
    *,
    installed: frozenset[str] | None = None,
) -> Invocation:
    """The invocation a CI command makes in the checkout at `root` (its working folder, env and arguments);
    `memo` keeps the configuration files located from each folder across the commands of one audit. `installed`:
    the distributions the job is known to install (None: not known), which say whether a plugin is loaded."""
    memo = {} if memo is None else memo
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
    # pytest checks that --confcutdir names a folder where it runs; the parse here runs elsewhere, so the check is
    # made against the checkout instead (below) and the parser is given a folder that exists.
    parse_command, cut_command = _folder_words(command)
    parse_env, cut_env = _folder_words(env_words)
    try:
        early, early_unknown = _parse([*parse_env, *parse_command])
    except _Unparsed as exc:
        return _refused(f"pytest's parser refuses the command line ({exc})")
    try:
        config = _config(root, cwd, early, memo)
    except ConfigError as exc:
        return _refused(f"the configuration this command uses is not read: {exc}")
    declared = _conftest_options(root, cwd, early, config, memo)
    extra: Extra = frozenset((o.flags, o.arity) for o in declared if o.arity is not None)
    doubts += [f"{' '.join(o.flags) or 'an option'} declared by a conftest is not read: {o.unread}" for o in declared if o.unread]
    try:
        if extra:
            early, early_unknown = _parse([*parse_env, *parse_command], extra)
        parse_addopts, cut_addopts = _folder_words(list(config.addopts))
        # Without addopts the full command line is the one just parsed (a schedule may hold thousands of entries).
        namespace, unknown = (
            _parse([*parse_addopts, *parse_env, *parse_command], extra) if config.addopts else (early, early_unknown)
        )
    except _Unparsed as exc:
        return replace(_refused(f"pytest's parser refuses the command line ({exc})"), config=config)
    cut = next((c for c in (cut_command, cut_env, cut_addopts) if c is not None), None)
    if cut is not None:
        if not (root / _relative(cut, cwd)).is_dir():
            return replace(_refused(f"--confcutdir {cut}: not a folder of the checkout (pytest refuses it)"), config=config)
        namespace.confcutdir = cut
    if unknown:
        doubts.append(
            f"options pytest's parser does not know (neither pytest's, a known plugin's nor a conftest's): "
            f"{' '.join(unknown[:6])} (a value of one may be read as a path)"
        )
    assumptions += plugin_assumptions([*config.addopts, *env_words, *command], installed, {f for o in declared for f in o.flags})
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
    missing = missing_path(root, args) if free and not getattr(namespace, "pyargs", False) else None
    if missing is not None and unknown:
        # The word may be the value of an option the parser does not know (a plugin's), not a path at all.
        doubts.append(f"{missing}: not in the checkout: pytest stops (exit 4) unless it is the value of an unknown option")
    elif missing is not None:
        # pytest resolves every argument before collecting (`resolve_collection_argument`): one that names nothing
        # is a usage error, "file or directory not found" (exit 4), and no test of the others runs.
        why = f"{missing}: file or directory not found: pytest stops before collecting (exit 4) and runs no test"
        return Invocation(runs=False, config=config, args=args, why_not=why, collection_error=True, names_nothing=True)
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
        words=(*config.addopts, *env_words, *command),
        options=declared,
    )


def plugin_assumptions(words: list[str], installed: frozenset[str] | None, declared: set[str]) -> list[str]:
    """The options of the plugin table a command uses whose plugin the job is not known to install: read with the
    table's arity all the same (a plugin's option is never a test path), and said."""
    builtin = _builtin_flags()
    out: list[str] = []
    for word in words[:MAX_ARGS]:
        if not word.startswith("-") or word == "--":
            continue
        flag = word.partition("=")[0] if word.startswith("--") else word[:2]
        found = option_arities().get(flag)
        if found is None or flag in builtin or flag in declared:
            continue
        plugin = found[1]
        if installed is not None and plugin.distribution in installed:
            continue
        said = "the job does not name it in its installs" if installed is not None else "what the job installs is not read"
        note = f"{flag} read as an option of {plugin.distribution} ({plugin.source}): {said}"
        if note not in out:
            out.append(note)
    return out


def _builtin_flags() -> frozenset[str]:
    if not _BUILTIN:
        from _pytest.config import get_config

        parser = get_config(args=[], plugins=())._parser
        _BUILTIN.append(frozenset(n for g in (parser._anonymous, *parser._groups) for o in g.options for n in o.names()))
    return _BUILTIN[0]


_BUILTIN: list[frozenset[str]] = []
MAX_CONFTESTS = 64


def _conftest_options(
    root: Path, cwd: str, early: argparse.Namespace, config: PytestConfig, memo: dict[str, Any]
) -> tuple[DeclaredOption, ...]:
    """The options declared by the conftest files pytest loads before it parses the command line for good
    (`_set_initial_conftests`): those of each initial path's folder and the folders above it, and of its `test*`
    folders; with no path, of the testpaths (from the rootdir) or the working folder."""
    paths = [_relative(a.split("::")[0], cwd) for a in early.file_or_dir or [] if a]
    anchors = [p for p in paths if not p.startswith(("/", "..")) and (root / p).exists()]
    if not paths:
        anchors = [a for a in (testpath_args(root, config) if cwd == config.rootdir else (cwd,)) if not a.startswith(("/", ".."))]
    files: list[str] = []
    for anchor in anchors:
        folder = anchor if (root / anchor).is_dir() else posixpath.dirname(anchor) or "."
        parts = [] if folder == "." else folder.split("/")
        files += [posixpath.join(*parts[:n], "conftest.py") if n else "conftest.py" for n in range(len(parts) + 1)]
        try:
            below = sorted(p.name for p in (root / folder).iterdir() if p.name.startswith("test") and p.is_dir())
        except OSError:
            below = []
        files += [posixpath.normpath(posixpath.join(folder, b, "conftest.py")) for b in below]
    out: list[DeclaredOption] = []
    for path in list(dict.fromkeys(files))[:MAX_CONFTESTS]:
        key = f"conftest-options:{path}"
        if key not in memo:
            memo[key] = declared_options(_text(root, path))
        out.extend(memo[key])
    return tuple(out)


def _text(root: Path, relative: str) -> str:
    """A conftest's text, read through the tree's descriptor (a link leading outside is not read); "" when none."""
    try:
        with TreeFiles(root) as files:
            return files.read(relative, MAX_CONFTEST_CHARS).decode("utf-8", "replace")
    except OSError:
        return ""


_CONFCUTDIR = "--confcutdir"


def _folder_words(words: list[str]) -> tuple[list[str], str | None]:
    """The words with the value of every `--confcutdir` replaced by a folder that exists here (`.`), and the last
    value written (None: none)."""
    if not any(w.startswith(_CONFCUTDIR) for w in words):
        return words, None
    out: list[str] = []
    value: str | None = None
    index = 0
    while index < len(words):
        word = words[index]
        if word == _CONFCUTDIR and index + 1 < len(words):
            value = words[index + 1]
            out += [word, "."]
            index += 2
            continue
        if word.startswith(_CONFCUTDIR + "="):
            value = word.partition("=")[2]
            word = _CONFCUTDIR + "=."
        out.append(word)
        index += 1
    return out, value


def _refused(why: str) -> Invocation:
    """A command whose line or configuration is not read as pytest reads it: pytest may refuse it and run no test,
    so no verdict of it is certain, a skip included."""
    return Invocation(doubts=(why,), may_stop=why)


_GLOB = frozenset("*?[")


def missing_path(root: Path, args: tuple[str, ...]) -> str | None:
    """The first argument whose path (before any `::`) names nothing in the checkout; None when all exist or cannot
    be judged (outside the checkout, `~`). A glob the shell left as it is (it matched nothing, or was quoted) is a
    path pytest does not expand: missing when it matches nothing."""
    for arg in args:
        path = arg.split("::")[0]
        if not path or path.startswith(("/", "..", "~")):
            continue
        if _GLOB & set(path):
            if next(glob.iglob(path, root_dir=root), None) is None:
                return arg
            continue
        if not os.path.exists(root / path):
            return arg
    return None


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
