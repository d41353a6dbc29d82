"""`specmatrix ledger`: join runtime ledgers with a suite's registrations; install or remove the start-up hook."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from matrix.audit.findings import parse_allowlist
from matrix.cli.gating import add_baseline_options, apply_gate
from matrix.cli.guards import not_a_registered_suite, project_root
from matrix.cli.options import (
    add_allowlist_option,
    add_deprecated_path,
    add_output_options,
    add_suite_map_option,
    add_summary_option,
    add_table_option,
)
from matrix.core import emit
from matrix.core.atomic import refuse_input_targets
from matrix.core.baseline import Baseline, read_baseline, stamped
from matrix.core.errors import UsageError
from matrix.core.finding import Tool
from matrix.core.gate import repo_prefix
from matrix.core.loader import read_toml_file
from matrix.core.machine import AUTO
from matrix.core.options import Options, load_runner_profiles
from matrix.core.output import FINDING_FORMATS
from matrix.core.targets import append_output, write_output
from matrix.ledger.join import JoinSettings, join
from matrix.ledger.pth import install_hook, uninstall_hook
from matrix.ledger.records import BadLine, Process, read_ledger
from matrix.ledger.registered import read_suite
from matrix.ledger.render import to_github, to_json, to_markdown, to_text
from matrix.registered_suite.audit import load_suite_map
from matrix.registered_suite.tree import check_root, tree_inputs

FORMATS = FINDING_FORMATS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ledger",
        help="runtime skip ledger: what registered files really did on a runner",
        description=(
            "Join ledgers written by the start-up hook (SPECMATRIX_LEDGER=PATH) with the registrations under --root: "
            "every file registered for a suite the runner serves must have run, and run tests that did not skip. "
            "Exit 1 on runtime silent skips, never-executed files, files that ran nothing and processes that never "
            "exited; 0 when clean; 2 on bad input. --install-hook / --uninstall-hook manage the hook of the active "
            "environment instead."
        ),
    )
    p.add_argument("ledgers", nargs="*", type=Path, metavar="LEDGER", help="ledger files (several merge: shards, runners)")
    p.add_argument(
        "--root",
        type=Path,
        metavar="DIR",
        help="the registered suite, e.g. test/registered (default: none; required unless --install-hook/--uninstall-hook)",
    )
    add_table_option(p, "runner", note="the profile the ledgers come from; auto: each process's recorded machine")
    add_baseline_options(p, "guard baseline (specmatrix.baseline/2, or the older guards-baseline/1; default: none)", today=False)
    add_allowlist_option(p, old="--allow")
    add_suite_map_option(p, default="suites to profiles (default: the built-in sglang suite conventions)")
    p.add_argument("--partial", action="store_true", help="the ledgers cover one shard: a file without record is no finding")
    add_output_options(p, FORMATS)
    add_summary_option(p)
    add_deprecated_path(p, "--md", "summary")
    add_deprecated_path(p, "--json", "json_file")
    hook = p.add_mutually_exclusive_group()
    hook.add_argument("--install-hook", action="store_true", help="write the start-up .pth into this environment")
    hook.add_argument("--uninstall-hook", action="store_true", help="remove the start-up .pth from this environment")
    p.set_defaults(func=cmd_ledger)


def _baseline(path: Path | None, root: Path) -> Baseline:
    """The guard baseline keyed from `root`, the suite the ledgers are joined with (its entries start at the
    repository root; an older file's at the folder then audited)."""
    if path is None:
        return Baseline(entries=())
    return read_baseline(path).under(repo_prefix(root) or "")


def cmd_ledger(args: argparse.Namespace, options: Options) -> int:
    if args.install_hook or args.uninstall_hook:
        if args.ledgers or args.root:
            raise UsageError("ledger: --install-hook/--uninstall-hook take no LEDGER or --root")
        change = install_hook() if args.install_hook else uninstall_hook()
        verb = (
            ("installed" if change.changed else "already installed")
            if args.install_hook
            else ("removed" if change.changed else "not installed")
        )
        print(f"specmatrix ledger hook {verb}: {change.path}")
        return 0
    if not args.ledgers:
        raise UsageError("ledger: give at least one LEDGER file (or --install-hook)")
    if args.root is None:
        raise UsageError("ledger: --root DIR is required (the folder whose registrations the ledgers are checked against)")
    check_root(args.root, "ledger: --root ")
    inputs = [*args.ledgers, *(p for p in (args.baseline, options.allowlist, args.suite_map) if p is not None)]
    outputs = (("--output", args.output), ("--summary", args.summary), ("--json", getattr(args, "json_file", None)))
    refuse_input_targets(outputs, [*inputs, *tree_inputs(args.root, (t for _, t in outputs))])
    runners = load_runner_profiles(options)
    suite_map = load_suite_map(args.suite_map)
    settings = JoinSettings(
        runners=runners,
        forced_runner=None if options.runner == AUTO else options.runner,
        allow=parse_allowlist(read_toml_file(options.allowlist), str(options.allowlist)) if options.allowlist else (),
        baseline=_baseline(args.baseline, args.root),
        partial=args.partial,
    )
    processes: list[Process] = []
    bad: list[BadLine] = []
    for path in args.ledgers:
        read = read_ledger(path)
        processes.extend(read.processes)
        bad.extend(read.bad_lines)
    suite = read_suite(args.root, runners, suite_map)
    if not suite.files:
        instead = (
            "the pytest plugin's run report says what each test did (`pytest --matrix-report out/run.json`, then "
            f"`specmatrix audit out/run.json`), and `specmatrix pytest-audit {project_root(args.root)}` checks it before a run"
        )
        print(not_a_registered_suite("ledger", args.root, instead), file=sys.stderr)
    report = join(suite, processes, bad, settings, ledgers=[str(p) for p in args.ledgers])
    prefix = repo_prefix(args.root)
    report = replace(report, findings=stamped(report.findings, prefix or ""))
    # The join accepted the runtime skips the baseline lists (and said so); the one gate judges the rest:
    # --write-baseline writes the error findings and exits 0, --baseline drops those it lists.
    gated = apply_gate(args, report.findings, prefix or "", "ledger", report.exit_code)
    report = replace(report, findings=gated.findings)
    if args.summary is not None:
        append_output("--summary", args.summary, to_markdown(report))
    if getattr(args, "json_file", None) is not None:
        write_output("--json", args.json_file, to_json(report) + "\n")
    fmt = args.format
    if fmt == "github":
        text = to_github(report, prefix)
    elif fmt == "sarif":
        text = emit.sarif(report.findings, tool=Tool.LEDGER, prefix=prefix)
    elif fmt == "junit":
        text = emit.junit(report.findings, tool=Tool.LEDGER, root=report.root, prefix=prefix)
    else:
        text = {"text": to_text, "json": to_json, "md": to_markdown}[fmt](report)
    print(text.rstrip("\n"))
    return gated.exit_code
