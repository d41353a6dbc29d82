"""TOML input: bounded reading and the typed field checks every loader shares (one error line per bad value)."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.errors import ConfigError
from matrix.core.textfiles import read_text

if TYPE_CHECKING:  # annotations only: reading runner files needs none of the matrix records
    from matrix.core.model import Value

MAX_TOML_BYTES = 16 * 1024 * 1024  # the built-in matrix is 20 KiB


def read_toml(text: str, source: str) -> dict[str, Any]:
    """Parse TOML text; a syntax error names the file and line."""
    if len(text) > MAX_TOML_BYTES:
        raise ConfigError(f"{source}: larger than {MAX_TOML_BYTES // (1024 * 1024)} MiB; refusing to read it")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: malformed TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{source}: malformed TOML: nested too deeply") from None


def read_toml_file(path: Path) -> dict[str, Any]:
    return read_toml(read_text(path, ConfigError, limit=MAX_TOML_BYTES), str(path))


def expect_keys(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})")


def str_field(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: expected a non-empty string, got {value!r}")
    return value


def value_field(value: Any, where: str) -> Value:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{where}: expected an integer or a string, got {value!r}")
    return value


def strings_field(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected a list of strings, got {value!r}")
    return tuple(str_field(v, where) for v in value)


def values_field(value: Any, where: str) -> tuple[Value, ...]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ConfigError(f"{where}: empty list")
    return tuple(value_field(v, where) for v in items)


def table_field(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a table, got {value!r}")
    return value


def tables_field(value: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: expected an array of tables ([[...]])")
    return [table_field(v, where) for v in value]


def number_field(value: Any, where: str) -> float:
    # TOML has nan and inf; either would poison every estimate and the shard count derived from it.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: expected a finite non-negative number, got {value!r}")
    return float(value)
