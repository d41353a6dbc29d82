"""Compare the plugin table (`matrix/data/pytest_plugins.toml`, and specmatrix's own plugin) with the plugins
importable here: for each, pytest's own parser is built (`_pytest.config.get_config`), the plugin module is
registered (pytest calls its `pytest_addoption`), and the options it added are compared, flag by flag, with the
table's rows and arities.

Usage: python ci/plugin_options.py   (exit 1 naming each difference; plugins not importable here are listed as not
checked). To check the others, put their wheels on the path: `pip download --no-deps -d /tmp/w pytest-cov`, unpack,
then `PYTHONPATH=/tmp/unpacked python ci/plugin_options.py`.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from matrix.schedule.environment.plugins import Arity, PytestPlugin, plugin_table


def _options(parser: Any) -> dict[tuple[str, ...], Arity]:
    out: dict[tuple[str, ...], Arity] = {}
    for group in (parser._anonymous, *parser._groups):
        for option in group.options:
            nargs = option._action.nargs
            out[tuple(option.names())] = Arity("1" if nargs is None else str(nargs))
    return out


def registered(module: str) -> dict[tuple[str, ...], Arity] | None:
    """The options `module` registers on pytest's parser (flags -> arity), or None when it does not import here."""
    from _pytest.config import get_config

    try:
        plugin = importlib.import_module(module)
    except ImportError:
        return None
    before = _options(get_config(args=[], plugins=())._parser)
    config = get_config(args=[], plugins=())
    config.pluginmanager.register(plugin, f"checked-{module}")
    return {flags: arity for flags, arity in _options(config._parser).items() if flags not in before}


def differences(plugin: PytestPlugin, found: dict[tuple[str, ...], Arity]) -> list[str]:
    """How the table's row for `plugin` differs from what the real plugin registers."""
    table = {o.flags: o.arity for o in plugin.options}
    out = [
        f"{plugin.module}: {' '.join(f)} is registered ({a.value}) but not in the table"
        for f, a in found.items()
        if f not in table
    ]
    out += [f"{plugin.module}: {' '.join(f)} is in the table but not registered" for f in table if f not in found]
    out += [
        f"{plugin.module}: {' '.join(f)} takes {found[f].value}, the table says {a.value}"
        for f, a in table.items()
        if f in found and found[f] is not a
    ]
    return out


def main() -> int:
    problems: list[str] = []
    for plugin in plugin_table():
        found = registered(plugin.module)
        if found is None:
            print(f"not checked (does not import here): {plugin.distribution} ({plugin.module})")
            continue
        said = differences(plugin, found)
        problems += said
        print(f"checked: {plugin.distribution} ({plugin.module}), {len(found)} options" + (": DIFFERS" if said else ""))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
