"""`specmatrix gaps [PATH]`: the matrix cells no runner of PATH's CI schedule would run."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from matrix.cli.gating import CELLS, add_gate_options, apply_gate
from matrix.cli.options import add_output_options, add_schedule_file_option
from matrix.core import emit
from matrix.core.baseline import stamped
from matrix.core.errors import EXIT_OK, UsageError
from matrix.core.expect import effective_versions, expectations
from matrix.core.finding import Finding, Tool
from matrix.core.gate import repo_prefix
from matrix.core.json_report import JsonReport, json_report
from matrix.core.model import Outcome
from matrix.core.options import Options, load
from matrix.core.output import FINDING_FORMATS, md_text
from matrix.core.planning import plan_for
from matrix.core.writers import Block, Column, Table, View, markdown_summary, text_report
from matrix.coverage.gaps import SCHEMA, untested_cells


def register(sub: Any) -> None:
    p = sub.add_parser(
        "gaps",
        help="list the matrix cells no runner of a CI schedule would run",
        description=(
            "Read the CI schedule of PATH (its nearest .github/workflows, as `specmatrix schedule` reads it), take every "
            "runner profile a job runs on, and list each matrix cell none of them is expected to RUN while another "
            "profile would (kind untested-cell); cells no profile runs at all are counted apart, not listed. "
            "Exit 0 (untested cells do not fail; --baseline: 1 on expired entries); 2 on bad input."
        ),
    )
    p.add_argument("path", type=Path, nargs="?", default=Path("."), help="a path in the repository (default: .)")
    p.add_argument(
        "--workflows",
        type=Path,
        metavar="DIR",
        help="repository root (or its .github/workflows) to read instead (default: the nearest at or above PATH)",
    )
    add_schedule_file_option(
        p, help="a declared schedule TOML whose runners count as the workflows' do; repeatable (default: none)"
    )
    add_output_options(p, FINDING_FORMATS)
    add_gate_options(p)
    p.set_defaults(func=cmd_gaps)


def cmd_gaps(args: argparse.Namespace, options: Options) -> int:
    from matrix.cli.schedule import read_ci_schedule, read_declared_schedule
    from matrix.schedule.load import find_workflows

    loaded = load(options)
    root = args.workflows
    if root is None:
        if not args.path.exists():
            raise UsageError(f"{args.path}: no such file or directory")
        root = find_workflows(args.path)
        if root is None:
            raise UsageError(f"{args.path}: no .github/workflows at or above it (name one with --workflows DIR)")
    # The one reading `specmatrix schedule` prints, so both name the same runners.
    schedules = [read_ci_schedule(root, loaded.runners)]
    schedules += [read_declared_schedule(root, loaded.runners, path) for path in args.schedule_file]
    names = {name for schedule in schedules for entry in schedule.entries for name in entry.profiles}
    runners = [name for name in loaded.runners if name in names]  # in profile order
    plans = {name: plan_for(loaded, name, os.environ) for name in runners}
    versions = next(iter(plans.values())).versions if plans else effective_versions(loaded.matrix, {})
    elsewhere: dict[str, list[str]] = {}
    for name, profile in loaded.runners.items():
        if name in plans or not profile.gpus:
            continue
        for cell_id, exp in expectations(loaded.matrix, profile, versions).items():
            if exp.outcome is Outcome.RUN:
                elsewhere.setdefault(cell_id, []).append(name)
    found_gaps = untested_cells(loaded.matrix.cells, {n: p.expectations for n, p in plans.items()}, elsewhere)
    unsupported = len(found_gaps.unsupported)
    findings = stamped(list(found_gaps.findings), "")
    # Cell findings name no file (their path is the matrix's): the baseline keys them as they are.
    gated = apply_gate(args, findings, "", "gaps", EXIT_OK, anchor=CELLS)
    findings = gated.findings
    found = repo_prefix(args.path, args.repo_root)
    if args.format == "github":
        text = emit.github(findings, root=str(args.path), prefix=found)
    elif args.format == "sarif":
        text = emit.sarif(findings, tool=Tool.COVERAGE, prefix=found, help_uri=args.help_uri)
    elif args.format == "junit":
        text = emit.junit(findings, tool=Tool.COVERAGE, root=str(args.path), prefix=found)
    elif args.format == "md":
        text = _markdown(findings, len(loaded.matrix.cells), unsupported, runners, root)
    elif args.format == "json":
        head = {
            "matrix": loaded.matrix.name,
            "schedule": str(root),
            "runners": runners,
            "cells": len(loaded.matrix.cells),
            "unsupported_everywhere": unsupported,
        }
        text = json_report(JsonReport(schema=SCHEMA, findings=findings, exit_code=gated.exit_code, head=head))
    else:
        tail = [
            f"{len(findings)} of {len(loaded.matrix.cells)} cells untested by the schedule under {root} "
            f"(runners: {', '.join(runners) or 'none'}); {_unsupported(unsupported)}"
        ]
        text = text_report(TEXT_VIEW, findings, tail=tail)
    print(text)  # with --output, the command runner writes what is printed to the file (matrix.cli.main)
    return gated.exit_code


def _unsupported(count: int) -> str:
    """The cells left out of the gaps, and where to see them."""
    if not count:
        return "every other cell runs on some runner profile"
    return f"{count} cells run on no runner profile at all (not gaps; `specmatrix cells --runner R` shows why)"


def _markdown(findings: tuple[Finding, ...], cells: int, unsupported: int, runners: list[str], root: Path) -> str:
    head = [
        f"**specmatrix gaps**: {len(findings)} of {cells} cells untested by the schedule under {md_text(str(root))} "
        f"(runners: {md_text(', '.join(runners) or 'none')}); {md_text(_unsupported(unsupported))}",
        "",
    ]
    table = Table(
        columns=(
            Column(header="Cell", value=lambda f: f.subject),
            Column(header="Why", value=lambda f: f.message.split("; ", 1)[-1]),
        )
    )
    blocks = [Block(summary=f"Untested cells ({len(findings)})", table=table, findings=findings)] if findings else []
    return markdown_summary(head, blocks)


TEXT_VIEW = View(tool=Tool.COVERAGE, lines=lambda f: [f"{f.subject}: {f.message.split('; ', 1)[1]}"])
