"""The pytest plugins a job may load and the command-line options each registers, with their arity: a data table
(`matrix/data/pytest_plugins.toml`, each row read from pytest's own parser with the plugin loaded) plus specmatrix's
own plugin, whose options come from the option table (`matrix.core.option_table.PLUGIN_OPTIONS`); pure."""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from matrix.core.option_table import plugin_flags
from matrix.core.textfiles import package_text

OWN_DISTRIBUTION = "specmatrix"


class Arity(StrEnum):
    """How many words an option takes, as argparse reads it (`nargs`)."""

    NONE = "0"  # store_true, store_const, count
    ONE = "1"  # the next word, or `--opt=value`
    OPTIONAL = "?"  # the next word when it does not look like an option
    SOME = "+"  # one or more words
    ANY = "*"  # zero or more words

    @property
    def takes_value(self) -> bool:
        return self is not Arity.NONE


@dataclass(frozen=True, kw_only=True)
class PluginOption:
    """One option a plugin registers: its flags (short and long spellings) and arity."""

    flags: tuple[str, ...]
    arity: Arity


@dataclass(frozen=True, kw_only=True)
class PytestPlugin:
    """A pytest plugin: the distribution that ships it, the module pytest loads, its options, where they were read."""

    distribution: str
    module: str
    entry_point: str
    version: str
    source: str
    url: str = ""
    options: tuple[PluginOption, ...] = ()


@functools.cache
def plugin_table() -> tuple[PytestPlugin, ...]:
    """The plugins of `matrix/data/pytest_plugins.toml`, then specmatrix's own."""
    doc = tomllib.loads(package_text("data/pytest_plugins.toml"))
    rows = tuple(
        PytestPlugin(
            distribution=row["distribution"],
            module=row["module"],
            entry_point=row["entry_point"],
            version=row["version"],
            source=row["source"],
            url=row.get("url", ""),
            options=tuple(PluginOption(flags=tuple(o["flags"]), arity=Arity(o["arity"])) for o in row.get("options", ())),
        )
        for row in doc["plugin"]
    )
    return (*rows, own_plugin())


def own_plugin() -> PytestPlugin:
    """specmatrix's pytest plugin (`matrix.plugin`), its options read from the option table."""
    options = tuple(PluginOption(flags=(flag,), arity=Arity.ONE if valued else Arity.NONE) for flag, valued in plugin_flags())
    return PytestPlugin(
        distribution=OWN_DISTRIBUTION,
        module="matrix.plugin",
        entry_point="specmatrix",
        version="(this checkout)",
        source="matrix/core/option_table.py, PLUGIN_OPTIONS",
        options=options,
    )


def plugins_of(distributions: Iterable[str]) -> tuple[PytestPlugin, ...]:
    """The table's plugins that these (normalized) distribution names ship."""
    wanted = set(distributions)
    return tuple(p for p in plugin_table() if p.distribution in wanted)


@functools.cache
def option_arities() -> Mapping[str, tuple[Arity, PytestPlugin]]:
    """Every flag of every plugin in the table -> (its arity, the plugin that registers it); the first plugin wins."""
    out: dict[str, tuple[Arity, PytestPlugin]] = {}
    for plugin in plugin_table():
        for option in plugin.options:
            for flag in option.flags:
                out.setdefault(flag, (option.arity, plugin))
    return out
