"""Every command's option that is a row of the option table is declared from that row (flag, metavar, help)."""

from __future__ import annotations

import argparse

from matrix.cli.main import build_parser
from matrix.core.option_table import BY_NAME


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_each_commands_table_option_comes_from_its_row() -> None:
    seen = set()
    for command, parser in _commands().items():
        for action in parser._actions:
            spec = BY_NAME.get(action.dest)
            if spec is None or not spec.flag or action.help == argparse.SUPPRESS:  # an old spelling kept
                continue
            seen.add((command, spec.name))
            where = f"{command} {spec.flag}"
            assert action.option_strings == [spec.flag], where
            assert (action.metavar or "") == spec.metavar, where  # a switch (`--no-cache`) takes no value: none
            assert (action.help or "").startswith(spec.help), where
    # The per-command rows: --runner on cells, explain, shard and ledger; --allowlist on ledger.
    assert {
        ("cells", "runner"),
        ("explain", "runner"),
        ("shard", "runner"),
        ("ledger", "runner"),
        ("ledger", "allowlist"),
    } <= seen
