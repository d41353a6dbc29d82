"""`specmatrix guards PATH`: static audit of skip guards in a registered test suite (never imports it)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from matrix.core.loader import load_runners
from matrix.core.options import Options
from matrix.guards.render import to_json, to_markdown, to_text
from matrix.guards.suites import load_suite_map, read_suite_list
from matrix.guards.tree import audit_tree


def register(sub: Any) -> None:
    p = sub.add_parser(
        "guards",
        help="find silent skips in a registered test suite without running it",
        description=(
            "Read every test file under PATH with ast (nothing is imported), map its register_*_ci suites to "
            "runner profiles and evaluate each skip guard on them. Exit 1 on silent skips, tests that never run, "
            "unscheduled registrations and unparsable files; 0 when clean; 2 on bad input. Extra runner-profile "
            "files come from the global --runners FILE option."
        ),
    )
    p.add_argument("path", type=Path, help="test folder or file, e.g. test/registered")
    p.add_argument(
        "--only-runners",
        default="",
        metavar="NAMES",
        help="comma-separated runner profile names: report only findings that concern these runners (default: all)",
    )
    p.add_argument(
        "--suites",
        type=Path,
        metavar="FILE",
        help=(
            "suite names CI workflows run (text: one a line; .json: list or {'suites': [...]}; .toml: suites = [...]) "
            "(default: none, suite names are not checked against a list)"
        ),
    )
    p.add_argument(
        "--suite-map",
        type=Path,
        metavar="FILE",
        help="TOML [suite] table mapping suite names or globs to profiles (default: the built-in suite map)",
    )
    p.add_argument(
        "--assume-installed",
        default="",
        metavar="MODULES",
        help="comma-separated modules installed on every runner (e.g. flashinfer); others are unknown (default: none)",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON (schema specmatrix.guards/1)")
    out.add_argument("--md", action="store_true", help="print Markdown (for a job summary)")
    p.set_defaults(func=cmd_guards)


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))


def cmd_guards(args: argparse.Namespace, options: Options) -> int:
    runners = load_runners(options.runner_files)
    report = audit_tree(
        args.path,
        runners,
        suite_map=load_suite_map(args.suite_map),
        known_suites=read_suite_list(args.suites) if args.suites is not None else None,
        only_runners=_names(args.only_runners),
        installed=_names(args.assume_installed),
    )
    if args.json:
        print(to_json(report))
    elif args.md:
        print(to_markdown(report))
    else:
        print(to_text(report))
    return report.exit_code
