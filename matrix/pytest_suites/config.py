"""pytest's configuration files of a checkout, located and parsed by pytest's own code, read without running pytest.

Which file: pytest's `locate_config` (`_pytest/config/findpaths.py`): from the common ancestor of the paths a
command names (else its working folder) up to the checkout's root, the first of `CONFIG_LOADERS_BY_NAME`
(pytest.toml, .pytest.toml, pytest.ini, .pytest.ini, pyproject.toml, tox.ini, setup.cfg) that holds pytest
configuration; a `pytest.ini` counts even when it is empty. Each file is parsed by pytest's own loader for its
name. Every candidate is resolved first: a symlink whose target lies outside the checkout, a FIFO or an oversized
file is refused, named by its path in the tree (pytest's own parse errors quote the offending line: never shown).

The values read are those of collection and selection (`testpaths`, `norecursedirs`, `python_files`,
`python_classes`, `python_functions`, `addopts`); the rules that use them live in `rules.py`.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.textfiles import OutsideTreeError, SpecialFileError, resolve_in_tree
from matrix.core.treefiles import TreeFiles
from matrix.guards.env_writes import ini_env_names

# pytest's defaults (`_pytest/main.py` and `_pytest/python.py`, pytest_addoption).
DEFAULT_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")
# pytest's CONFIG_LOADERS_BY_NAME order (pytest 9); read from pytest itself when it is importable.
CONFIG_NAMES = ("pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
MAX_FILES = 50_000
# pytest itself has no depth limit; the OS bounds a path (PATH_MAX, 4096 bytes on Linux: 2,048 folders of one
# letter). The walks are iterative, so any depth up to it costs no recursion.
MAX_DEPTH = 2048
MAX_FILE_BYTES = 4 * 1024 * 1024
_LINE = re.compile(r"line (\d+)|:(\d+):")


@dataclass(frozen=True, kw_only=True)
class PytestConfig:
    """The configuration file pytest would use, where it was found, and the values collection reads."""

    source: str = "(pytest defaults)"
    inifile: str | None = None  # repository-relative
    rootdir: str = "."  # repository-relative
    testpaths: tuple[str, ...] = ()
    norecursedirs: tuple[str, ...] = DEFAULT_NORECURSE
    python_files: tuple[str, ...] = ("test_*.py", "*_test.py")
    python_classes: tuple[str, ...] = ("Test",)
    python_functions: tuple[str, ...] = ("test",)
    addopts: tuple[str, ...] = ()
    env_set: tuple[str, ...] = ()  # the names pytest-env's `env` option sets (`env_writes.ini_env_names`)
    # The `pythonpath` option's folders, repository-relative (pytest reads them relative to the rootdir).
    pythonpath: tuple[str, ...] = ()

    def collection_key(self) -> tuple[tuple[str, ...], ...]:
        """The values that decide which functions and classes of a file are tests."""
        return (self.python_files, self.python_classes, self.python_functions)


ConfigDict = Mapping[str, Any]
Loader = Callable[[Path], Any]


@functools.lru_cache(maxsize=1)
def _loaders() -> tuple[tuple[str, Loader], ...]:
    from _pytest.config import findpaths  # pytest's own loaders; imported only by pytest-audit

    by_name = getattr(findpaths, "CONFIG_LOADERS_BY_NAME", None)
    if by_name is None:  # pytest 8: one loader that dispatches on the file's name
        return tuple((name, findpaths.load_config_dict_from_file) for name in CONFIG_NAMES[2:])
    return tuple(by_name.items())


def _checked(root: Path, relative: str) -> Path | None:
    """The resolved path of a candidate configuration file, None when there is none; refused (one line,
    named by its path in the tree) when it leads outside the checkout, is not a regular file or is oversized.

    The file is opened through `TreeFiles` (walked from the root, links resolved by hand) to be judged; pytest's
    loader then reads it by its resolved path, and `_load` checks that path still names the file judged."""
    if not os.path.lexists(root / relative):
        return None
    try:
        with TreeFiles(root) as files:
            fd, st = files.open(relative)
            os.close(fd)
        target = resolve_in_tree(root, relative)
    except OutsideTreeError:
        raise ConfigError(f"{relative}: a symlink to a file outside the audited tree; refusing to read it") from None
    except SpecialFileError as exc:
        if exc.kind == "a directory":
            return None  # pytest's `is_file()` passes a folder by
        raise ConfigError(f"{relative}: is {exc.kind}, not a regular file; refusing to read it") from None
    except FileNotFoundError:
        return None  # a dangling link: pytest's `is_file()` is false
    except OSError:
        raise ConfigError(f"{relative}: cannot be read") from None
    if st.st_size > MAX_FILE_BYTES:
        raise ConfigError(f"{relative}: larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; refusing to read it")
    if len(_JUDGED) >= 4096:
        _JUDGED.clear()
    _JUDGED[str(target)] = (st.st_dev, st.st_ino)
    return target


# The file each checked path named when it was judged: pytest's loader must read that same file.
_JUDGED: dict[str, tuple[int, int]] = {}


def _load(loader: Loader, path: Path, relative: str) -> ConfigDict | None:
    """pytest's loader on a checked file; whatever it raises is one line that quotes no content of the file."""
    try:
        found = loader(path)
    except SpecialFileError:
        raise ConfigError(f"{relative}: not a regular file; refusing to read it") from None
    except BaseException as exc:  # pytest's `fail()` raises an OutcomeException, a BaseException
        if isinstance(exc, KeyboardInterrupt | SystemExit | MemoryError):
            raise
        if isinstance(exc, RecursionError):  # tomllib recurses once per nested array or inline table
            raise ConfigError(f"{relative}: malformed configuration: nested too deeply") from None
        match = _LINE.search(str(exc))
        where = f" (line {match.group(1) or match.group(2)})" if match else ""
        raise ConfigError(f"{relative}: pytest cannot read it as configuration{where}: {type(exc).__name__}") from None
    try:
        now = os.stat(path)
        same = _JUDGED.get(str(path)) in (None, (now.st_dev, now.st_ino))
    except OSError:
        same = False
    if not same:
        raise ConfigError(f"{relative}: changed while it was read (replaced or swapped for a link); refusing to use it")
    if found is None:
        return None
    return {key: getattr(value, "value", value) for key, value in found.items()}


def locate(root: Path, start: str) -> tuple[str | None, ConfigDict]:
    """pytest's `locate_config` from the repository-relative folder `start` up to the root: (file, values)."""
    pyproject: str | None = None
    base = posixpath.normpath(start)
    for _ in range(MAX_DEPTH + 1):
        for name, loader in _loaders():
            relative = name if base == "." else f"{base}/{name}"
            path = _checked(root, relative)
            if path is None:
                continue
            if name == "pyproject.toml" and pyproject is None:
                pyproject = relative
            values = _load(loader, path, relative)
            if values is not None:
                return relative, values
        if base in (".", ""):
            break
        base = posixpath.dirname(base) or "."
    return (pyproject, {}) if pyproject is not None else (None, {})


def load_file(root: Path, relative: str) -> ConfigDict:
    """The values of a file named with `-c` (pytest's loader for its name or suffix); empty when it has none."""
    from _pytest.config import findpaths

    path = _checked(root, relative)
    if path is None:
        raise ConfigError(f"{relative}: the configuration file named with -c is not in the tree")
    loader = findpaths._get_config_loader(Path(relative))
    if loader is None:
        raise ConfigError(f"{relative}: pytest has no loader for this configuration file")
    return _load(loader, path, relative) or {}


def _words(value: Any, what: str) -> tuple[str, ...]:
    # pytest's "args" ini type: a string is split as a shell would, a list is taken as it is.
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value)
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError:
            raise ConfigError(f"{what}: not a list of words pytest can split") from None
    raise ConfigError(f"{what}: expected a list or a string, got a {type(value).__name__}")


def from_values(values: ConfigDict, inifile: str | None, rootdir: str) -> PytestConfig:
    """A `PytestConfig` from a parsed file's values (`-o` overrides already applied)."""
    fields: dict[str, tuple[str, ...]] = {}
    for key in ("testpaths", "norecursedirs", "python_files", "python_classes", "python_functions", "addopts"):
        if key in values:
            fields[key] = _words(values[key], f"{inifile}: {key}")
    env_set = ini_env_names(values.get("env"))
    paths = _words(values["pythonpath"], f"{inifile}: pythonpath") if "pythonpath" in values else ()
    pythonpath = tuple(posixpath.normpath(posixpath.join(rootdir, p)) for p in paths if not posixpath.isabs(p))
    return PytestConfig(
        source=inifile or "(pytest defaults)",
        inifile=inifile,
        rootdir=rootdir,
        env_set=env_set,
        pythonpath=pythonpath,
        **fields,
    )


def read_pytest_config(root: Path, start: str = ".") -> PytestConfig:
    """The settings of the configuration file pytest would find from `start` (repository-relative)."""
    inifile, values = locate(root, start)
    rootdir = posixpath.dirname(inifile) or "." if inifile is not None else start
    return from_values(values, inifile, rootdir)
