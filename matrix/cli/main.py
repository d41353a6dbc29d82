"""The `specmatrix` command: one place where errors become exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from matrix.cli import audit as cmd_audit
from matrix.cli import ci as cmd_ci
from matrix.cli import core as cmd_core
from matrix.cli import guards as cmd_guards
from matrix.cli import ledger as cmd_ledger
from matrix.core.errors import EXIT_USAGE, SpecmatrixError, UsageError
from matrix.core.options import CliOverrides, Options, resolve_options

# Each command module has `register(subparsers)`; the parser's `func` runs it.
COMMAND_MODULES: tuple[ModuleType, ...] = (cmd_core, cmd_ci, cmd_guards, cmd_audit, cmd_ledger)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="specmatrix", description="CI test-matrix orchestrator for GPU attention backends.")
    parser.add_argument("--matrix", type=Path, help="matrix TOML file (default: the built-in matrix)")
    parser.add_argument("--runners", type=Path, action="append", default=[], help="extra runner-profile TOML file (repeatable)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def options_from(args: argparse.Namespace) -> Options:
    return resolve_options(
        cli=CliOverrides(
            matrix_path=args.matrix,
            runner_files=tuple(args.runners),
            runner=getattr(args, "runner", None),
            allowlist=getattr(args, "allowlist", None),
        ),
        env=os.environ,
        cwd=Path.cwd(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code: int = args.func(args, options_from(args))
        return code
    except SpecmatrixError as exc:
        print(f"specmatrix: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("specmatrix: interrupted", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
