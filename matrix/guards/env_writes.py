"""Environment variables the test process sets itself, which a guard may then read: pure.

A guard such as `skipif(os.environ.get("TILE_IMPL") != "tile")` is an opt-in that no CI job may set, yet the suite
can set it: a `conftest.py` (imported before the test modules are collected), the test module itself (both
audits), or the `env` option of the pytest-env plugin (`env = TILE_IMPL=tile` in the ini file, optionally `D:` or `R:` before the
name; pytest-env's README). Such a name is never "unset": the audit treats it as a variable that may be set at run
time, so a guard on it is undetermined rather than a certain skip. What is read is text: `os.environ[NAME] = ...`,
`os.environ.setdefault(NAME, ...)`, `os.putenv(NAME, ...)`, `monkeypatch.setenv(NAME, ...)`, the literal keys
of `os.environ.update(...)`, and the removals `os.environ.pop(NAME)`, `del os.environ[NAME]`, `os.unsetenv(NAME)`,
`monkeypatch.delenv(NAME)`; a name computed at run time is not seen. A name written is never the job's value either:
what the process wrote replaces it.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["ini_env_names", "written_names"]

_NAME = r"([A-Za-z_][A-Za-z0-9_]*)"
_WRITES = re.compile(
    rf"environ\s*\[\s*['\"]{_NAME}['\"]\s*\]\s*=(?!=)"
    rf"|environ\.setdefault\(\s*['\"]{_NAME}['\"]"
    rf"|(?:putenv|setenv)\(\s*['\"]{_NAME}['\"]"
    # and removals: after one the name is unset or what a later write gives, not what the job gave
    rf"|environ\.pop\(\s*['\"]{_NAME}['\"]"
    rf"|del\s+(?:os\.)?environ\s*\[\s*['\"]{_NAME}['\"]"
    rf"|(?:unsetenv|delenv)\(\s*['\"]{_NAME}['\"]"
)
_UPDATE = re.compile(r"environ\.update\(([^()]{0,4000})\)")
_KEYS = re.compile(rf"['\"]{_NAME}['\"]\s*:|(?<![\w.]){_NAME}\s*=(?!=)")
_INI_LINE = re.compile(rf"^\s*(?:[DR]:)*{_NAME}\s*=")


def written_names(text: str) -> frozenset[str]:
    """The environment variables `text` (Python source) sets by one of the spellings above."""
    if not any(word in text for word in ("environ", "putenv", "setenv", "delenv")):
        return frozenset()
    found = {name for match in _WRITES.finditer(text) for name in match.groups() if name}
    for update in _UPDATE.finditer(text):
        found.update(name for match in _KEYS.finditer(update.group(1)) for name in match.groups() if name)
    return frozenset(found)


def ini_env_names(value: Any) -> tuple[str, ...]:
    """The names pytest-env's `env` option sets (a line list, or a list in pyproject.toml)."""
    lines = value if isinstance(value, list | tuple) else str(value).splitlines() if value is not None else []
    out = [m.group(1) for line in lines if (m := _INI_LINE.match(str(line))) is not None]
    return tuple(dict.fromkeys(out))
