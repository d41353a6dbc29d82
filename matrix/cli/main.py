"""The `specmatrix` command: one place where errors become exit codes."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from matrix.cli import audit as cmd_audit
from matrix.cli import ci as cmd_ci
from matrix.cli import core as cmd_core
from matrix.cli import guards as cmd_guards
from matrix.core.errors import EXIT_USAGE, SpecmatrixError, UsageError
from matrix.core.options import CliOverrides, Options, resolve_options

# Each command module has `register(subparsers)`; the parser's `func` runs it.
COMMAND_MODULES: tuple[ModuleType, ...] = (cmd_core, cmd_ci, cmd_guards, cmd_audit)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="specmatrix", description="CI test-matrix orchestrator for GPU attention backends.")
    parser.add_argument("--matrix", type=Path, help="matrix TOML file (default: the built-in matrix)")
    parser.add_argument("--runners", type=Path, action="append", default=[], help="extra runner-profile TOML file (repeatable)")
    parser.add_argument(
        "--replace-runner",
        dest="replace_runners",
        metavar="NAME",
        action="append",
        default=[],
        help="let a --runners file redefine this built-in profile (repeatable; otherwise reusing a name is an error)",
    )
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
            replace_runners=tuple(getattr(args, "replace_runners", ())),
        ),
        env=os.environ,
        cwd=Path.cwd(),
    )


def _fail(message: str) -> int:
    # One line whatever the message quotes (a path or argument with a newline in it).
    message = message.replace("\r", "\\r").replace("\n", "\\n")
    with contextlib.suppress(OSError, ValueError):  # stderr itself is gone: the exit code still says it
        print(f"specmatrix: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _silence_stdout() -> None:
    """After stdout failed (closed pipe, full disk): point it at /dev/null so the interpreter's exit flush is quiet."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _tolerant_streams() -> None:
    """Text from reports (a lone surrogate in a skip reason) must print, not raise: escape what cannot be encoded."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure from bad input or a broken output is one line on stderr and exit 2."""
    _tolerant_streams()
    try:
        args = build_parser().parse_args(argv)
        code: int = args.func(args, options_from(args))
        sys.stdout.flush()  # a full disk or closed pipe shows up here, inside the boundary
        return code
    except SpecmatrixError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        print("specmatrix: interrupted", file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:
        return _fail("input nested too deeply")
    except ValueError as exc:
        # CPython's int_max_str_digits guard (an integer of thousands of digits in some input); any other
        # ValueError is a bug and keeps its traceback.
        if "integer string conversion" not in str(exc):
            raise
        return _fail("input holds an integer with too many digits")
    except OSError as exc:
        # Readers and writers map their own errors; what reaches here is stdout (EPIPE, ENOSPC) or a stray path.
        _silence_stdout()
        if exc.errno == errno.EPIPE:
            return _fail("output closed before it was complete (broken pipe)")
        where = exc.filename if exc.filename is not None else "standard output"
        return _fail(f"{where}: {exc.strerror or exc}")


if __name__ == "__main__":
    sys.exit(main())
