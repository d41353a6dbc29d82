"""The plugin table against the plugins installed here, through pytest's own parser with each plugin registered."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from matrix.schedule.environment.plugins import Arity, PluginOption, PytestPlugin, own_plugin, plugin_table, plugins_of

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = ("xdist.plugin", "xdist.looponfail", "matrix.plugin")


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plugin_options", ROOT / "ci" / "plugin_options.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(module: str) -> PytestPlugin:
    return next(p for p in plugin_table() if p.module == module)


@pytest.mark.parametrize("module", INSTALLED)
def test_the_table_says_what_the_installed_plugin_registers(module: str) -> None:
    checker = _checker()
    found = checker.registered(module)
    assert found, f"{module} registers no option here"
    assert checker.differences(_row(module), found) == []


def test_a_wrong_arity_in_the_table_is_caught() -> None:
    checker = _checker()
    row = _row("xdist.plugin")
    planted = replace(row, options=(PluginOption(flags=("-n", "--numprocesses"), arity=Arity.NONE), *row.options[1:]))
    assert checker.differences(planted, checker.registered("xdist.plugin")) == [
        "xdist.plugin: -n --numprocesses takes 1, the table says 0"
    ]


def test_own_plugin_options_come_from_the_option_table() -> None:
    flags = {f: o.arity for o in own_plugin().options for f in o.flags}
    assert flags["--matrix-runner"] is Arity.ONE
    assert flags["--matrix-report"] is Arity.ONE
    assert flags["--matrix-run-expected-skips"] is Arity.NONE


def test_every_row_names_its_source_and_version() -> None:
    for plugin in plugin_table():
        assert plugin.source and plugin.version and plugin.distribution, plugin
    assert {p.distribution for p in plugins_of({"pytest-xdist", "pytest-mock"})} == {"pytest-xdist", "pytest-mock"}
