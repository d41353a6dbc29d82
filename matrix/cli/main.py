"""The `specmatrix` command: one place where errors become exit codes."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from matrix.cli import audit as cmd_audit
from matrix.cli import ci as cmd_ci
from matrix.cli import core as cmd_core
from matrix.cli import guards as cmd_guards
from matrix.cli import ledger as cmd_ledger
from matrix.cli.parsing import HelpFormatter, version_text
from matrix.core.errors import EXIT_USAGE, SpecmatrixError, UsageError
from matrix.core.options import CliOverrides, Options, resolve_options

# Each command module has `register(subparsers)`; the parser's `func` runs it.
COMMAND_MODULES: tuple[ModuleType, ...] = (cmd_core, cmd_ci, cmd_guards, cmd_audit, cmd_ledger)
PROG = "specmatrix"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # One prefix: main prints "specmatrix: error: ..."; a subcommand's errors name the subcommand.
        command = self.prog.removeprefix(PROG).strip()
        raise UsageError(f"{command}: {message}" if command else message)


def _add_global_options(parser: argparse.ArgumentParser, *, suffix: str) -> None:
    """--matrix and --runners, accepted before and after the subcommand.

    After the subcommand they land in their own dests (`suffix`): argparse copies a subparser's namespace
    over the main one, so a shared dest would drop the values given before the subcommand.
    """
    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument(
        "--matrix",
        dest=f"matrix{suffix}",
        type=Path,
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="matrix TOML file (default: [tool.specmatrix] matrix, $SPECMATRIX_MATRIX, else the built-in matrix)",
    )
    group.add_argument(
        "--runners",
        dest=f"runners{suffix}",
        type=Path,
        action="append",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="extra runner-profile TOML file, repeatable (default: [tool.specmatrix] runners, $SPECMATRIX_RUNNERS, else none)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="CI test-matrix orchestrator for GPU attention backends.",
        formatter_class=HelpFormatter,
        epilog="Exit status: 0 ok, 1 findings, 2 usage or configuration error.",
    )
    parser.add_argument("--version", action="version", version=version_text())
    _add_global_options(parser, suffix="")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in COMMAND_MODULES:
        module.register(sub)
    for command in sub.choices.values():
        command.formatter_class = HelpFormatter
        _add_global_options(command, suffix="_after")
    return parser


def _global(args: argparse.Namespace, name: str) -> Any:
    return getattr(args, f"{name}_after", None) or getattr(args, name, None)


def options_from(args: argparse.Namespace) -> Options:
    runner_files = [*getattr(args, "runners", []), *getattr(args, "runners_after", [])]
    return resolve_options(
        cli=CliOverrides(
            matrix_path=_global(args, "matrix"),
            runner_files=tuple(runner_files),
            runner=getattr(args, "runner", None),
            allowlist=getattr(args, "allowlist", None),
        ),
        env=os.environ,
        cwd=Path.cwd(),
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help and --version print and stop here; usage errors raise UsageError
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        if args.command is None:
            parser.print_usage(sys.stderr)
            raise UsageError(f"a command is required; see '{PROG} --help'")
        code: int = args.func(args, options_from(args))
        return code
    except SpecmatrixError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
