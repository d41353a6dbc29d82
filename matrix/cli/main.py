"""The `specmatrix` command: one place where errors become exit codes."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import errno
import gc
import importlib
import io
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

from matrix.cli.parsing import HelpFormatter, VersionAction
from matrix.core.errors import EXIT_USAGE, SpecmatrixError, UsageError
from matrix.core.option_table import BY_NAME, OPTIONS, OptionKind
from matrix.core.options import CliOverrides, Options, resolve_options
from matrix.core.targets import OUTPUT_DESTS, refuse_outputs_on_inputs, write_output
from matrix.core.textfiles import READ_FILES

# Each command module has `register(subparsers)`; the parser's `func` runs it. A module is imported only when
# the parser needs it: a run of one command (`specmatrix guards ...`) imports the one module that owns it, so
# its start-up does not pay for every other command's imports.
COMMAND_MODULES: tuple[str, ...] = (
    "matrix.cli.core",
    "matrix.cli.ci",
    "matrix.cli.guards",
    "matrix.cli.schedule",
    "matrix.cli.audit",
    "matrix.cli.ledger",
    "matrix.cli.report",
    "matrix.cli.pytest_audit",
    "matrix.cli.gaps",
)
# The commands each module registers (tests/core/test_cli_commands.py checks this against the modules).
COMMANDS: dict[str, str] = {
    "cells": "matrix.cli.core",
    "explain": "matrix.cli.core",
    "runners": "matrix.cli.core",
    "detect": "matrix.cli.core",
    "shard": "matrix.cli.ci",
    "coverage": "matrix.cli.ci",
    "register": "matrix.cli.ci",
    "guards": "matrix.cli.guards",
    "schedule": "matrix.cli.schedule",
    "audit": "matrix.cli.audit",
    "timeline": "matrix.cli.audit",
    "ledger": "matrix.cli.ledger",
    "report": "matrix.cli.report",
    "pytest-audit": "matrix.cli.pytest_audit",
    "gaps": "matrix.cli.gaps",
}
PROG = "specmatrix"
EXIT_BROKEN_PIPE = 128 + 13  # 128 + SIGPIPE, what `yes | head -1` leaves for `yes`


class _Building(HelpFormatter):
    """The formatter argparse asks for while a parser is being built, to check each option's metavar and to name
    the subcommands' prog: neither depends on the terminal, so its width is not looked up (that imports `shutil`,
    with its compression modules, and queries the terminal once per option). Help is written by `HelpFormatter`."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=80)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Building)  # `build_parser` sets HelpFormatter once it is built
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        # One prefix: main prints "specmatrix: error: ..."; a subcommand's errors name the subcommand.
        command = self.prog.removeprefix(PROG).strip()
        raise UsageError(f"{command}: {message}" if command else message)


GLOBAL_OPTIONS = ("matrix", "runners", "replace_runners")  # rows of the option table every command accepts


def _add_global_options(parser: argparse.ArgumentParser, *, suffix: str) -> None:
    """--matrix, --runners and --replace-runner, accepted before and after the subcommand.

    After the subcommand they land in their own dests (`suffix`): argparse copies a subparser's namespace
    over the main one, so a shared dest would drop the values given before the subcommand.
    """
    group = parser.add_argument_group("global options (before or after the command)")
    for name in GLOBAL_OPTIONS:
        spec = BY_NAME[name]
        group.add_argument(
            spec.flag,
            dest=f"{spec.name}{suffix}",
            type=Path if spec.kind in (OptionKind.PATH, OptionKind.PATHS) else str,
            action="append" if spec.kind.accumulates else "store",
            metavar=spec.metavar,
            default=argparse.SUPPRESS,
            help=spec.help,
        )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with the name of a `command`, one with only the module that owns it registered
    (the same subparser, so that command parses and helps exactly alike)."""
    parser = _Parser(
        prog=PROG,
        description="CI test-matrix orchestrator for GPU attention backends.",
        epilog="Exit status: 0 ok, 1 findings, 2 usage or configuration error.",
    )
    parser.add_argument("--version", action=VersionAction)
    _add_global_options(parser, suffix="")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    owner = COMMANDS.get(command) if command is not None else None
    for name in (owner,) if owner is not None else COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    for subparser in sub.choices.values():
        _add_global_options(subparser, suffix="_after")
        subparser.formatter_class = HelpFormatter
    parser.formatter_class = HelpFormatter
    return parser


def options_from(args: argparse.Namespace) -> Options:
    """The command line's part of the cascade: each option of the table under its dest (`name`, and `name_after`
    for a global option given after the command, which wins)."""
    given: dict[str, Any] = {}
    for spec in OPTIONS:
        if not spec.flag:
            continue
        before, after = getattr(args, spec.name, None), getattr(args, f"{spec.name}_after", None)
        if spec.kind.accumulates:
            given[spec.field] = (*(before or ()), *(after or ()))
        else:
            given[spec.field] = after or before
    return resolve_options(cli=CliOverrides(**given), env=os.environ, cwd=Path.cwd())


def _fail(message: str, code: int = EXIT_USAGE) -> int:
    # One line whatever the message quotes (a path or argument with a newline, form feed or other line break in it).
    from matrix.core.output import text_value  # only when a command fails: a clean run never loads it

    message = text_value(message)
    with contextlib.suppress(OSError, ValueError):  # stderr itself is gone: the exit code still says it
        print(f"{PROG}: error: {message}", file=sys.stderr)
    return code


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


def _run(args: argparse.Namespace) -> int:
    """Run the command; with `--output FILE` what it prints goes to FILE through the atomic writer instead."""
    READ_FILES.clear()  # the files this run reads, which no output of it may replace
    options = options_from(args)
    output: Path | None = getattr(args, "output", None)
    for dest, flag in OUTPUT_DESTS.items():  # every file a command writes, checked once here before it runs
        target = getattr(args, dest, None)
        if isinstance(target, Path):
            refuse_outputs_on_inputs([(flag, target)], _named_paths(args, skip=dest))
    if output is None:
        code: int = args.func(args, options)
        return code
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = args.func(args, options)
    write_output("--output", output, buffer.getvalue())
    return code


def _named_paths(args: argparse.Namespace, skip: str = "output") -> list[Path]:
    """Every file the command line names besides the option `skip` (inputs, folders, other outputs)."""
    found: list[Path] = []
    for name, value in vars(args).items():
        if name == skip:
            continue
        for item in value if isinstance(value, list | tuple) else (value,):
            if isinstance(item, Path):
                found.append(item)
    return found


# A command allocates hundreds of thousands of acyclic objects (decoded JSON, records, the modules it imports) and
# returns: at the default threshold (700) the cyclic collector ran about 90 times in a warm `specmatrix guards` run
# of the benchmark tree, about 17 ms, and freed almost nothing (reference counting does). It runs every 100,000
# allocations during a command instead (mypy's build sets 200,000), so cyclic garbage is still collected.
COLLECT_EVERY = 100_000


@contextlib.contextmanager
def _collector_tuned() -> Iterator[None]:
    """The cyclic collector's first threshold at COLLECT_EVERY while a command runs, restored when it returns."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], COLLECT_EVERY), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def run() -> NoReturn:
    """`python -m matrix` and the `specmatrix` script: `main`, then the process ends without its teardown.

    Freeing what a command built (a warm guards run holds thousands of records and a report of megabytes) and the
    modules took about 15 ms of a 170 ms run; the records die with the process all the same. mypy ends its runs
    this way (`mypy.util.hard_exit`). A process with anything registered to run at exit (`atexit`: the ledger
    hook, multiprocessing, coverage) or with a thread still running ends the usual way, so none of that is
    skipped."""
    code = main()
    threading = sys.modules.get("threading")
    if atexit._ncallbacks() or (threading is not None and threading.active_count() > 1):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # main reported a broken stdout already
            stream.flush()
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure from bad input or a broken output is one line on stderr and exit 2."""
    with _collector_tuned():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    _tolerant_streams()
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        # The first word names the command (anything else, such as a global option first, gets every command).
        parser = build_parser(words[0] if words else None)
        try:
            args = parser.parse_args(words)
        except SystemExit as exc:  # --help and --version print and stop here; usage errors raise UsageError
            return exc.code if isinstance(exc.code, int) else EXIT_USAGE
        if args.command is None:
            parser.print_usage(sys.stderr)
            raise UsageError(f"a command is required; see '{PROG} --help'")
        code = _run(args)
        sys.stdout.flush()  # a full disk or closed pipe shows up here, inside the boundary
        return code
    except SpecmatrixError as exc:
        return _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return _fail("interrupted")
    except RecursionError:
        return _fail("input nested too deeply")
    except ValueError as exc:
        # CPython's int_max_str_digits guard (an integer of thousands of digits in some input), or a path with a NUL
        # byte that reached an OS call unchecked; any other ValueError is a bug and keeps its traceback.
        if "embedded null byte" in str(exc):
            return _fail("a path in the input holds a NUL byte")
        if "integer string conversion" not in str(exc):
            raise
        return _fail("input holds an integer with too many digits")
    except ImportError as exc:
        # A dependency a command imports when it needs it (yaml for workflows), missing from this environment.
        from matrix.cli import missing_dependency

        missing = missing_dependency(exc)
        if missing is None:
            raise
        return _fail(missing)
    except OSError as exc:
        # Readers and writers map their own errors; what reaches here is stdout (EPIPE, ENOSPC) or a stray path.
        _silence_stdout()
        if exc.errno == errno.EPIPE:
            # The reader went away (`specmatrix cells | head -3`): quiet, with the status a Unix tool killed by
            # SIGPIPE leaves (128 + 13), so only a shell with pipefail notices.
            return EXIT_BROKEN_PIPE
        where = exc.filename if exc.filename is not None else "standard output"
        return _fail(f"{where}: {exc.strerror or exc}")


if __name__ == "__main__":
    run()
