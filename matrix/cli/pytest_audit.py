"""`specmatrix pytest-audit ROOT`: tests that never run in a pytest suite's CI (GitHub Actions, Buildkite)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.cli.gating import add_gate_options, read_gate_baseline, write_gate_baseline
from matrix.cli.options import (
    add_cache_options,
    add_deprecated_path,
    add_output_options,
    add_schedule_file_option,
    add_summary_option,
)
from matrix.core import emit
from matrix.core.atomic import refuse_input_targets
from matrix.core.baseline import stamped
from matrix.core.errors import UsageError
from matrix.core.finding import Severity, Tool, kinds_of
from matrix.core.gate import Gate, gate, repo_prefix
from matrix.core.options import Options, cache_folder, load_runner_profiles
from matrix.core.output import FINDING_FORMATS
from matrix.core.targets import OUTPUT_DESTS, append_output, write_output
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.render import to_json, to_markdown, to_text
from matrix.pytest_suites.run import AuditInput, has_workflows, run_audit

if TYPE_CHECKING:
    from matrix.core.writers import Block
    from matrix.pytest_suites.audit import ItemVerdicts
    from matrix.pytest_suites.joined import JoinResult, RunInput

FORMATS = FINDING_FORMATS


def register(sub: Any) -> None:
    p = sub.add_parser(
        "pytest-audit",
        help="find tests that skip on every runner a pytest suite's CI sends them to",
        description=(
            "Collect ROOT's pytest tests statically (nothing is imported), read what CI runs from ROOT's GitHub "
            "workflows (and the shell scripts their steps run), declared schedule files (TOML) for what those cannot "
            "say and Buildkite test-area files, and evaluate every skip guard on the runner profiles each "
            "test is scheduled on. Exit 1 when a scheduled test skips on every runner, a file never runs, a test file "
            "is scheduled nowhere or does not parse; 0 when clean; 2 on bad input. With --junit, each test's verdict "
            "on a runner is set beside what that runner's run did (confirmed, contradicted, resolved), and a test "
            "that skipped in every run given for it fails too."
        ),
    )
    p.add_argument("root", type=Path, help="the checkout (repository root)")
    add_schedule_file_option(
        p,
        help="declared schedule TOML ([[entry]] job, labels, script or pytest, gates, env; [markers]); "
        "repeatable (default: none)",
    )
    p.add_argument(
        "--buildkite",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a Buildkite test-area YAML (vLLM .buildkite/test_areas/*.yaml), repeatable (default: none)",
    )
    p.add_argument(
        "--assume-installed",
        action="append",
        default=[],
        metavar="MODULE",
        help="treat this module as importable on every runner (importorskip guards), repeatable (default: none)",
    )
    p.add_argument(
        "--junit",
        action="append",
        default=[],
        type=_junit_option,
        metavar="RUNNER=PATH",
        help="join a run: the JUnit XML pytest wrote (--junitxml) on RUNNER (a runner profile or runs-on label the "
        "schedule names), a file or a folder of *.xml; repeatable (default: none)",
    )
    add_output_options(p, FORMATS)
    add_summary_option(p)
    add_gate_options(p)
    add_deprecated_path(p, "--md", "summary")
    add_deprecated_path(p, "--json", "json_file")
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="processes that read files (default: the CPUs this process may use, at most 2)",
    )
    add_cache_options(p)
    p.set_defaults(func=cmd_pytest_audit)


def _jobs(value: int | None) -> int:
    if value is None:
        return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))
    if value < 1 or value > 64:
        raise UsageError(f"pytest-audit: --jobs must be between 1 and 64, got {value}")
    return value


def cmd_pytest_audit(args: argparse.Namespace, options: Options) -> int:
    if not args.root.is_dir():
        what = "is not a folder" if args.root.exists() else "does not exist"
        raise UsageError(f"pytest-audit: {args.root} {what}; give the checkout of the repository to audit")
    if not args.schedule_file and not args.buildkite and not has_workflows(args.root):
        raise UsageError(
            f"pytest-audit: {args.root} has no .github/workflows; give a --schedule-file or --buildkite file (what CI runs)"
        )
    profiles = load_runner_profiles(options)
    # The runs first: a file that does not parse is one line before the audit's seconds are spent.
    runs = _read_runs(args.junit)
    outputs = [(flag, getattr(args, dest, None)) for dest, flag in OUTPUT_DESTS.items()]
    refuse_input_targets(outputs, [Path(f.path) for r in runs for f in r.files])
    inputs = AuditInput(
        root=args.root,
        schedule_files=tuple(args.schedule_file),
        buildkite_files=tuple(args.buildkite),
        installed=frozenset(args.assume_installed),
        join=tuple(dict.fromkeys(r.runner for r in runs)),
    )
    found = repo_prefix(args.root, args.repo_root)
    prefix = found or ""
    baseline = read_gate_baseline(args.baseline, prefix, "pytest-audit")
    report = run_audit(inputs, profiles, jobs=_jobs(args.jobs), cache_dir=cache_folder(options, os.environ))
    joined = _join_runs(report.verdicts, runs, inputs.join) if runs else None
    if joined is not None:
        report = replace(report, findings=(*report.findings, *joined.findings))
    fingerprints = stamped((f.finding for f in report.findings), prefix)
    report = replace(report, findings=tuple(replace(f, finding=g) for f, g in zip(report.findings, fingerprints, strict=True)))
    wrote = None
    if args.write_baseline is not None:
        wrote = (
            f"wrote {write_gate_baseline(args.write_baseline, fingerprints, prefix)} baseline entries to {args.write_baseline}"
        )
    result = gate(fingerprints, show=Severity.INFO, baseline=baseline, today=args.today, prefix=prefix)
    shown, live = _live(report, result)
    exit_code = 0 if wrote is not None else result.exit_code
    runs_md: tuple[Sequence[str], Sequence[Block]] = ((), ())
    runs_json: dict[str, Any] | None = None
    runs_lines: Sequence[str] = ()
    if joined is not None:
        from matrix.pytest_suites.joined_output import ORDER, runs_doc, runs_markdown, runs_text  # only with --junit

        ran = [f.finding for f in shown.findings if f.finding.kind in ORDER]
        runs_md, runs_json, runs_lines = runs_markdown(joined, ran), runs_doc(joined), runs_text(joined, ran)
    if args.summary is not None:
        append_output("--summary", args.summary, to_markdown(shown, result, runs=runs_md))
    if getattr(args, "json_file", None) is not None:
        write_output("--json", args.json_file, to_json(shown, result, exit_code=exit_code, runs=runs_json))
    fmt = args.format
    if fmt == "github":
        text = emit.github(live, root=str(args.root), prefix=found) + ("\n" if live else "")
    elif fmt == "sarif":
        text = emit.sarif(live, tool=Tool.PYTEST_AUDIT, prefix=found, help_uri=args.help_uri) + "\n"
    elif fmt == "junit":
        # Without runs, the join's kinds were not checked: no passing testcase says they were.
        from matrix.pytest_suites.joined_output import ORDER

        checked = None if joined is not None else [k.name for k in kinds_of(Tool.PYTEST_AUDIT) if k.name not in ORDER]
        text = emit.junit(live, tool=Tool.PYTEST_AUDIT, root=str(args.root), prefix=found, checked=checked) + "\n"
    elif fmt == "json":
        text = to_json(shown, result, exit_code=exit_code, runs=runs_json)
    elif fmt == "md":
        text = to_markdown(shown, result, runs=runs_md)
    else:
        text = to_text(shown, result, runs=runs_lines)
    sys.stdout.write(text)
    if wrote is not None:
        print(f"specmatrix pytest-audit: {wrote}", file=sys.stderr)
    return exit_code


# The join's modules (JUnit reading, node-id matching) are imported only by a run that joins (`--junit`).


def _junit_option(value: str) -> tuple[str, Path]:
    from matrix.pytest_suites.joined import parse_junit_option

    return parse_junit_option(value)


def _read_runs(pairs: list[tuple[str, Path]]) -> tuple[RunInput, ...]:
    if not pairs:
        return ()
    from matrix.pytest_suites.joined import read_runs

    return read_runs(pairs)


def _join_runs(verdicts: Sequence[ItemVerdicts], runs: tuple[RunInput, ...], join: tuple[str, ...]) -> JoinResult:
    from matrix.pytest_suites.joined import join_runs

    return join_runs(verdicts, runs, join)


def _live(report: PytestAuditReport, result: Gate) -> tuple[PytestAuditReport, tuple[Any, ...]]:
    """The report without the findings a baseline acknowledges (in the report's order), and the gate's worst first."""
    kept = {id(f) for f in result.shown}
    return replace(report, findings=tuple(f for f in report.findings if id(f.finding) in kept)), result.shown
