"""`specmatrix guards PATH`: static audit of skip guards in a registered test suite (never imports it)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.cli.gating import add_gate_options, read_gate_baseline, write_gate_baseline
from matrix.cli.options import (
    add_cache_options,
    add_output_options,
    add_suite_map_option,
    add_summary_option,
    add_workflow_options,
)
from matrix.core import emit
from matrix.core.baseline import stamped
from matrix.core.errors import UsageError
from matrix.core.finding import Severity, Tool
from matrix.core.gate import repo_prefix
from matrix.core.options import Options, cache_folder, load_runner_profiles
from matrix.core.output import FINDING_FORMATS
from matrix.core.targets import append_output
from matrix.guards.model import GuardFindingKind, GuardReport
from matrix.registered_suite.audit import load_suite_map, read_suite_list
from matrix.registered_suite.gate import (
    Gate,
    gate,
    to_json,
    to_markdown,
    to_text,
)
from matrix.registered_suite.intent import MatrixIntent
from matrix.registered_suite.tree import audit_tree, default_jobs

if TYPE_CHECKING:  # the records load with the workflow readers, which a run without workflows never imports
    from matrix.schedule.model import Schedule

FORMATS = FINDING_FORMATS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "guards",
        help="find silent skips in a registered test suite without running it",
        description=(
            "Read every test file under PATH with ast (nothing is imported), map its register_*_ci suites to "
            "runner profiles and evaluate each skip guard on them. Exit 1 on new error findings (silent skips, "
            "tests that never run, unscheduled registrations, unparsable files) or expired baseline entries; 0 when "
            "clean; 2 on bad input. Extra runner-profile files come from the global --runners FILE option."
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
    add_suite_map_option(p, default="suite names or globs to profiles (default: the built-in suite map)")
    add_workflow_options(
        p,
        read="repository root (or its .github/workflows): which job runs which suite, on which runner, with --nightly"
        " or not (default: the nearest .github/workflows at or above PATH; none found: suite names only)",
        skip="do not read any workflows, even when PATH lies in a repository that has them (default: read them)",
    )
    p.add_argument(
        "--tested-by",
        type=Path,
        metavar="FILE",
        help=(
            'TOML [test] table, "node-id glob" = "backend" ("" for none): which matrix backend a test tests, '
            "over what the matrix file's [tested] tables derive (default: those alone)"
        ),
    )
    p.add_argument(
        "--assume-installed",
        default="",
        metavar="MODULES",
        help="comma-separated modules installed on every runner (e.g. flashinfer); others are unknown (default: none)",
    )
    p.add_argument(
        "--show",
        choices=[s.value for s in Severity],
        default=Severity.WARNING.value,
        help="lowest severity listed: error, warning (default) or info (also undetermined, disabled, unmapped, ...)",
    )
    add_output_options(p, FORMATS, legacy_flags=("json", "md"))
    add_summary_option(p)
    add_gate_options(p)
    p.add_argument("--jobs", type=int, default=None, metavar="N", help="worker processes for parsing (default: CPUs, up to 8)")
    add_cache_options(p)
    p.set_defaults(func=cmd_guards)


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))


def render(
    report: GuardReport,
    result: Gate,
    fmt: str,
    *,
    status: str | None = None,
    exit_code: int | None = None,
    help_uri: str | None = None,
    prefix: str | None = None,
) -> str:
    """The output in `fmt`; `status` and `exit_code` replace the audit's own when the command returns another."""
    if fmt == "json":
        return to_json(report, result, exit_code=exit_code)
    if fmt == "md":
        return to_markdown(report, result, exit_code=exit_code)
    if fmt == "github":
        return emit.github(result.shown, root=report.root, prefix=prefix)
    if fmt == "sarif":
        return emit.sarif(result.shown, tool=Tool.GUARDS, prefix=prefix, help_uri=help_uri)
    if fmt == "junit":
        return emit.junit(result.shown, tool=Tool.GUARDS, root=report.root, prefix=prefix)
    return to_text(report, result, status=status)


def read_schedule(args: argparse.Namespace, runners: Mapping[str, Any], cache_dir: Path | None = None) -> Schedule | None:
    """--workflows DIR, else the nearest .github/workflows above PATH (unless --no-workflows); says what it read."""
    if args.no_workflows:
        return None
    from matrix.schedule.load import find_workflows, load_schedule  # the workflow readers: only a run that reads them

    root = args.workflows
    if root is None:
        if not args.path.exists():
            return None  # audit_tree names the missing PATH
        root = find_workflows(args.path)
        if root is None:
            return None
    schedule = load_schedule(root, runners, cache_dir=cache_dir)
    if args.workflows is None and not schedule.entries:
        # Found by itself, and no workflow runs a command the readers know: the suites are started some other way.
        print(
            f"specmatrix guards: {len(schedule.sources)} CI files under {root} run no command the schedule readers know "
            "(run_suite.py); registrations are matched by suite name only (--workflows DIR to use them anyway)",
            file=sys.stderr,
        )
        return None
    shown = ", ".join(schedule.sources[:3]) + (f" and {len(schedule.sources) - 3} more" if len(schedule.sources) > 3 else "")
    print(
        f"specmatrix guards: schedule read from {len(schedule.sources)} CI files under {root} ({shown}): "
        f"{len(schedule.entries)} entries, {len(schedule.unread)} unread jobs, {len(schedule.unknown_labels)} unknown labels"
        " (--no-workflows to leave them out)",
        file=sys.stderr,
    )
    return schedule


PROJECT_MARKERS = (".git", ".github", "pyproject.toml", "setup.cfg", "pytest.ini", "tox.ini")


def project_root(path: Path) -> Path:
    """The nearest folder at or above `path` that looks like a checkout's root (a VCS folder, CI or pytest
    configuration), else `path`'s own folder: what `pytest-audit` is pointed at."""
    start = (path if path.is_dir() else path.parent).resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return start


def not_a_registered_suite(command: str, path: Path, instead: str = "") -> str:
    """The hint for a tree with no registration: the command is for registered suites; what a plain pytest project
    runs instead (`instead`, else `pytest-audit` on the checkout's root)."""
    instead = instead or f"run `specmatrix pytest-audit {project_root(path)}`"
    return (
        f"specmatrix {command}: no file under {path} is registered to run on a runner profile (no register_*_ci call "
        f"that CI runs), so there was nothing to check: `{command}` is for suites registered the sglang way; for a "
        f"plain pytest project {instead}"
    )


def cmd_guards(args: argparse.Namespace, options: Options) -> int:
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    # --output, --write-baseline and --summary were checked against every input before the command ran
    # (matrix/core/targets.py, through matrix/cli/main.py).
    runners = load_runner_profiles(options)
    folder = cache_folder(options, os.environ)
    found = repo_prefix(args.path, args.repo_root)
    prefix = found or ""
    baseline = read_gate_baseline(args.baseline, prefix, "guards")
    report = audit_tree(
        args.path,
        runners,
        suite_map=load_suite_map(args.suite_map),
        known_suites=read_suite_list(args.suites) if args.suites is not None else None,
        only_runners=_names(args.only_runners),
        installed=_names(args.assume_installed),
        schedule=read_schedule(args, runners, folder),
        jobs=args.jobs or default_jobs(),
        cache_dir=folder,
        intent=MatrixIntent.from_paths(options.matrix_path, args.tested_by),
    )
    report = replace(report, findings=stamped(report.findings, prefix))
    # Not when a file could not be read: it may hold the registrations (its finding says so).
    if report.registered_files == 0 and not any(f.kind == GuardFindingKind.UNPARSABLE for f in report.findings):
        print(not_a_registered_suite("guards", args.path), file=sys.stderr)
    wrote: str | None = None
    if args.write_baseline is not None:
        written = write_gate_baseline(args.write_baseline, report.findings, prefix)
        # Writing the baseline is the run's job: it succeeds whatever the findings, and says so.
        wrote = f"exit 0: wrote {written} baseline entries to {args.write_baseline}"
    result = gate(report, show=Severity(args.show), baseline=baseline, today=args.today, prefix=prefix)
    if args.summary is not None:
        append_output("--summary", args.summary, to_markdown(report, result, exit_code=0 if wrote is not None else None) + "\n")
    fmt = args.format
    text = render(
        report, result, fmt, status=wrote, exit_code=0 if wrote is not None else None, help_uri=args.help_uri, prefix=found
    )
    print(text)
    if wrote is not None and (fmt != "text" or args.output is not None):
        print(f"specmatrix guards: {wrote.removeprefix('exit 0: ')}", file=sys.stderr)
    return 0 if wrote is not None else result.exit_code
