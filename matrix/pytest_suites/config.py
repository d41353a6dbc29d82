"""pytest's collection settings of a checkout and the test files they lead to, read without running pytest.

Settings come from the first of pytest.ini `[pytest]`, pyproject.toml `[tool.pytest.ini_options]`, tox.ini
`[pytest]`, setup.cfg `[tool:pytest]` (pytest's own order, `_pytest/config/findpaths.py`). Discovery follows
pytest's defaults: `python_files = test_*.py *_test.py`, `norecursedirs` (default `*.egg .* _darcs build
CVS dist node_modules venv {arch}`), `testpaths` when no path is given; a file named explicitly is collected
whatever its name.
"""

from __future__ import annotations

import configparser
import fnmatch
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.textfiles import read_text
from matrix.core.tomlfields import read_toml

DEFAULT_NORECURSE = ("*.egg", ".*", "_darcs", "build", "CVS", "dist", "node_modules", "venv", "{arch}")
MAX_FILES = 50_000
MAX_DEPTH = 32
MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class PytestConfig:
    """The collection settings that decide which files, classes and functions are tests."""

    source: str = "(pytest defaults)"
    testpaths: tuple[str, ...] = ()
    norecursedirs: tuple[str, ...] = DEFAULT_NORECURSE
    python_files: tuple[str, ...] = ("test_*.py", "*_test.py")
    python_classes: tuple[str, ...] = ("Test",)
    python_functions: tuple[str, ...] = ("test",)

    def is_test_file(self, name: str) -> bool:
        return any(fnmatch.fnmatch(name, pattern) for pattern in self.python_files)

    def is_test_name(self, name: str, prefixes: tuple[str, ...]) -> bool:
        # pytest: a pattern with a glob character is matched with fnmatch, anything else is a prefix.
        return any(fnmatch.fnmatch(name, p) if any(c in p for c in "*?[") else name.startswith(p) for p in prefixes)

    def recurse(self, name: str) -> bool:
        return not any(fnmatch.fnmatch(name, pattern) for pattern in self.norecursedirs)


def _words(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError:
            return tuple(value.split())
    raise ConfigError(f"expected a list or a string, got {value!r}")


def _from_table(table: Mapping[str, Any], source: str) -> PytestConfig:
    fields: dict[str, tuple[str, ...]] = {}
    for key in ("testpaths", "norecursedirs", "python_files", "python_classes", "python_functions"):
        if key in table:
            try:
                fields[key] = _words(table[key])
            except ConfigError as exc:
                raise ConfigError(f"{source}: {key}: {exc}") from None
    return PytestConfig(source=source, **fields)


def read_pytest_config(root: Path) -> PytestConfig:
    """The settings of the first configuration file pytest would use at `root`."""
    for name, section in (
        ("pytest.ini", "pytest"),
        ("pyproject.toml", None),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ):
        path = root / name
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            continue
        text = read_text(path, ConfigError, limit=MAX_FILE_BYTES)
        if section is None:
            data = read_toml(text, str(path))  # bounded, and nesting too deep is one line
            options = data.get("tool", {}).get("pytest", {}).get("ini_options")
            if isinstance(options, dict):
                return _from_table(options, name)
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text, source=name)
        except configparser.Error as exc:
            raise ConfigError(f"{path}: malformed ini: {exc}") from None
        if parser.has_section(section):
            return _from_table(dict(parser.items(section)), name)
    return PytestConfig()


def discover(root: Path, config: PytestConfig) -> tuple[str, ...]:
    """Repository-relative test files under testpaths (or the root), following norecursedirs; bounded."""
    base = root.resolve()
    starts = [root / p for p in config.testpaths] or [root]
    found: list[str] = []
    for start in starts:
        if not start.resolve().is_relative_to(base):
            continue  # a testpaths entry outside the checkout (`../x`) is not part of the suite
        if start.is_file():
            found.append(start.relative_to(root).as_posix())
            continue
        _walk(root, start, config, 0, found)
    return tuple(sorted(set(found)))


def _walk(root: Path, folder: Path, config: PytestConfig, depth: int, found: list[str]) -> None:
    if depth > MAX_DEPTH or len(found) >= MAX_FILES:
        return
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_symlink():
            continue
        if entry.is_dir(follow_symlinks=False):
            if config.recurse(entry.name) and entry.name != "__pycache__":
                _walk(root, Path(entry.path), config, depth + 1, found)
        elif entry.is_file() and config.is_test_file(entry.name):
            found.append(Path(entry.path).relative_to(root).as_posix())
