"""The command-line names every command shares, declared once: `--format`, `--output`, and each command's rows of
the option table (`--runner`, `--allowlist`: `add_table_option`).

`--format json` prints JSON on stdout and `--output FILE` writes what would be printed to FILE (atomically), in
every command that prints a result. Older spellings keep working and say once, on stderr, what replaces them
(`DEPRECATED`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matrix.core.option_table import BY_NAME, OptionKind
from matrix.core.options import warn_deprecated


def _set_format(parser: argparse.ArgumentParser, ns: argparse.Namespace, dest: str, value: str, option: str) -> None:
    """Two spellings asking for different formats (`--json --md`) are a usage error, as the old exclusive group was."""
    previous = getattr(ns, "_format_option", None)
    # `--format a --format b` keeps argparse's last-one-wins; only two different spellings conflict.
    if previous is not None and previous != option and getattr(ns, dest) != value:
        parser.error(f"argument {option}: not allowed with argument {previous}")
    ns._format_option = option
    setattr(ns, dest, value)


class _DeprecatedFlag(argparse.Action):
    """A flag kept for compatibility: sets `dest` to `const` and warns."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, option: str | None = None) -> None:
        warn_deprecated(self.option_strings[0])
        _set_format(parser, ns, self.dest, self.const, self.option_strings[0])


class _DeprecatedValue(argparse.Action):
    """An option with a value kept for compatibility under its old name: stores the value and warns."""

    def __init__(self, option_strings: Sequence[str], dest: str, key: str = "", **kwargs: Any) -> None:
        self.key = key or option_strings[0]
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, option: str | None = None) -> None:
        warn_deprecated(self.key)
        setattr(ns, self.dest, values)


class _Format(argparse.Action):
    """`--format NAME`; an old name in `renamed` is accepted with a warning and stored under its new name."""

    def __init__(self, option_strings: Sequence[str], dest: str, renamed: dict[str, str] | None = None, **kwargs: Any):
        self.renamed = renamed or {}
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, option: str | None = None) -> None:
        if values in self.renamed:
            warn_deprecated(f"--format {values}")
            values = self.renamed[values]
        _set_format(parser, ns, self.dest, values, "--format")


def add_output_options(
    p: argparse.ArgumentParser,
    formats: Sequence[str],
    *,
    default: str = "text",
    legacy_flags: Sequence[str] = (),
    renamed: dict[str, str] | None = None,
) -> None:
    """`--format` (one of `formats`) and `--output FILE`; `legacy_flags` ("json", "md") keep `--json` / `--md`."""
    renamed = renamed or {}
    shown = ", ".join(formats)
    p.add_argument(
        "--format",
        action=_Format,
        renamed=renamed,
        choices=[*formats, *renamed],
        default=default,
        metavar="FORMAT",
        help=f"what to print: {shown} (default: {default})",
    )
    for name in legacy_flags:
        p.add_argument(f"--{name}", dest="format", action=_DeprecatedFlag, const=name, help=argparse.SUPPRESS)
    p.add_argument(
        "--output",
        type=Path,
        metavar="FILE",
        help="write what would be printed to FILE (atomically) instead of stdout (default: stdout)",
    )


def add_table_option(p: argparse.ArgumentParser, name: str, *, note: str = "") -> None:
    """One row of the option table (`matrix.core.option_table`) on one command: flag, dest, metavar, type and help
    all from the row; `note` says what the option means for this command, after the row's help."""
    spec = BY_NAME[name]
    shown = f"{spec.help}; {note}" if note else spec.help
    if spec.kind is OptionKind.SWITCH:
        # Given: True; not given: None, so the cascade keeps what pyproject or the environment said.
        p.add_argument(spec.flag, dest=spec.name, action="store_const", const=True, default=None, help=shown)
        return
    p.add_argument(
        spec.flag,
        dest=spec.name,
        type=Path if spec.kind in (OptionKind.PATH, OptionKind.PATHS) else str,
        action="append" if spec.kind.accumulates else "store",
        metavar=spec.metavar,
        help=shown,
    )


def add_cache_options(p: argparse.ArgumentParser) -> None:
    """`--cache-dir DIR` and `--no-cache` (the cascade's `cache_dir` and `no_cache`), as every cached audit spells them."""
    add_table_option(p, "cache_dir")
    add_table_option(p, "no_cache")


def add_allowlist_option(p: argparse.ArgumentParser, *, old: str = "") -> None:
    """`--allowlist FILE` (the cascade's `allowlist`); `old` keeps an earlier spelling working."""
    add_table_option(p, "allowlist")
    if old:
        p.add_argument(old, dest="allowlist", type=Path, action=_DeprecatedValue, help=argparse.SUPPRESS)


def add_deprecated_path(p: argparse.ArgumentParser, old: str, dest: str, *, key: str = "") -> None:
    """A file option kept under its old name and meaning (`ledger --json FILE`), with a warning."""
    action = _DeprecatedValue
    p.add_argument(old, dest=dest, type=Path, action=action, key=key or f"{old} FILE", metavar="FILE", help=argparse.SUPPRESS)


def add_workflow_options(p: argparse.ArgumentParser, *, read: str, skip: str) -> None:
    """`--workflows DIR` or `--no-workflows` (one of them): `read` says what the workflows decide for this command,
    `skip` what leaving them out does."""
    wf = p.add_mutually_exclusive_group()
    wf.add_argument("--workflows", type=Path, metavar="DIR", help=read)
    wf.add_argument("--no-workflows", action="store_true", help=skip)


def add_suite_map_option(p: argparse.ArgumentParser, *, default: str) -> None:
    """`--suite-map FILE`: the TOML [suite] table mapping sglang suites to runner profiles."""
    p.add_argument("--suite-map", type=Path, metavar="FILE", help=f"TOML [suite] table mapping {default}")


def add_schedule_file_option(p: argparse.ArgumentParser, *, help: str) -> None:
    """`--schedule-file FILE`, repeatable: a declared schedule TOML (what the workflows cannot say)."""
    p.add_argument("--schedule-file", type=Path, action="append", default=[], metavar="FILE", help=help)


def add_summary_option(p: argparse.ArgumentParser) -> None:
    """`--summary FILE`: append a Markdown job summary (GitHub's `$GITHUB_STEP_SUMMARY` keeps earlier steps')."""
    p.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help='append a Markdown job summary to FILE, e.g. "$GITHUB_STEP_SUMMARY" (default: none)',
    )
