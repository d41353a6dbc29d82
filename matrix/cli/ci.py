"""CI commands: shard (plan GPU jobs), coverage (merge their reports), register (sglang test modules)."""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from matrix.cli.gating import CELLS, add_gate_options, apply_gate
from matrix.cli.options import add_output_options, add_table_option, add_workflow_options
from matrix.core import emit
from matrix.core.atomic import ensure_dir, refuse_input_targets, same_file, write_bytes_atomic, write_text_atomic
from matrix.core.baseline import stamped
from matrix.core.errors import EXIT_FINDINGS, EXIT_OK, ReportError, UsageError
from matrix.core.expect import effective_versions, expectations
from matrix.core.finding import Tool
from matrix.core.jsonio import dumps_indented, dumps_strict
from matrix.core.machine import AUTO, find_runner
from matrix.core.model import Outcome, RunnerProfile
from matrix.core.options import Options, load
from matrix.core.output import FINDING_FORMATS
from matrix.core.planning import Plan, plan_for
from matrix.core.report import read_report
from matrix.core.selectors import select
from matrix.core.textfiles import read_text
from matrix.core.writers import View, text_report
from matrix.coverage.merge import ReportSource, merge
from matrix.coverage.views import coverage_document, coverage_markdown
from matrix.register.modules import DEFAULT_STAGE, GeneratedModule, generate
from matrix.shard.cost import Measured, cached_configs, measured_from, workload_for
from matrix.shard.output import gha_matrix, plan_document, read_plan, shard_selects, write_plan_dir
from matrix.shard.plan import plan_budget, plan_shards

DURATIONS_HELP = "measured reports whose cell durations replace the cost table (default: none, the cost table)"


def register(sub: Any) -> None:
    p = sub.add_parser("shard", help="split the cells a runner must run into CI jobs (GitHub matrix or JSON plan)")
    add_table_option(p, "runner", note="the profile the jobs run on")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--shards", type=int, metavar="N", help="number of jobs (no default: give --shards or --budget)")
    size.add_argument(
        "--budget",
        type=float,
        metavar="MINUTES",
        help="fewest jobs whose estimated makespan fits (no default: give --shards or --budget)",
    )
    p.add_argument("--durations", nargs="+", action="extend", default=[], type=Path, metavar="REPORT", help=DURATIONS_HELP)
    p.add_argument(
        "--cached-configs",
        nargs="+",
        action="extend",
        default=[],
        type=Path,
        metavar="FILE",
        help=(
            "configurations a restored JIT cache holds (a cache manifest, or one key per line): they compile nothing "
            "(default: none)"
        ),
    )
    add_output_options(p, ("json", "github"), default="json", renamed={"gha": "github"})
    p.add_argument(
        "--plan-dir",
        metavar="DIR",
        help="also write DIR/plan.json and DIR/shard-K.txt, needed when a selector is too long (default: none)",
    )
    p.set_defaults(func=cmd_shard)

    p = sub.add_parser("coverage", help="merge run reports into one coverage view (Markdown, JSON, heatmap)")
    p.add_argument("reports", nargs="*", type=Path, metavar="REPORT", help="report JSON files, or folders holding them")
    p.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="folder for coverage.md, coverage.json, heatmap.png/.svg"
    )
    p.add_argument(
        "--expect-runners",
        default="",
        metavar="NAMES",
        help="comma-separated profiles that count even without a report (default: none)",
    )
    p.add_argument(
        "--expect-shards", type=int, metavar="N", help="a finding when fewer shard reports arrive (default: not checked)"
    )
    p.add_argument(
        "--plan",
        type=Path,
        metavar="PATH",
        help="the shard plan (plan.json or its folder): a shard without a report is a finding (default: none)",
    )
    p.add_argument("--no-heatmap", action="store_true", help="skip the PNG/SVG picture")
    add_output_options(p, FINDING_FORMATS)
    add_gate_options(p, root=False)
    p.set_defaults(func=cmd_coverage)

    p = sub.add_parser("register", help="write sglang registered test modules, one per runner config")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder to write test_specmatrix_*.py into")
    p.add_argument(
        "--runner",
        dest="register_runners",
        action="append",
        default=[],
        metavar="NAME",
        help="only this profile, repeatable (default: every profile that serves an sglang runner config)",
    )
    p.add_argument("--stage", default=DEFAULT_STAGE, metavar="NAME", help="sglang stage for register_cuda_ci")
    p.add_argument("--parts", type=int, default=1, metavar="N", help="modules per runner config, split by the shard planner")
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="SELECTOR",
        help="only cells this selector keeps, e.g. 'draft-*', repeatable (default: every cell expected to RUN)",
    )
    p.add_argument("--durations", nargs="+", action="extend", default=[], type=Path, metavar="REPORT", help=DURATIONS_HELP)
    add_workflow_options(
        p,
        read="repository root (or its .github/workflows) whose CI must run each module; a module no scheduled job runs "
        "on its runner is left out, with the reason (default: the nearest .github/workflows at or above --out)",
        skip="write every runner config's module, scheduled or not",
    )
    add_output_options(p, ("text", "json"))
    p.set_defaults(func=cmd_register)


def _which_runner(options: Options, plan: Plan) -> str:
    """The runner a command judged against, and how it was chosen (auto-detection is easy to miss)."""
    if options.runner == AUTO:
        return f"runner {plan.runner.name} (auto-detected: this machine has {plan.facts.describe()})"
    return f"runner {plan.runner.name}"


def _why_no_module(runner: RunnerProfile, run_ids: set[str]) -> str:
    """Why `register` writes nothing for `runner`: the same conditions `generate` applies, in words."""
    if not runner.gpus:
        return f"{runner.name} has no GPU"
    if not runner.runner_configs:
        return f"{runner.name} serves no sglang runner config (runner_configs is empty)"
    if not run_ids:
        return f"no cell is expected to RUN on {runner.name}"
    return f"no selected cell is expected to RUN on {runner.name} ({len(run_ids)} cells would run there)"


def _measured(paths: list[Path]) -> Measured | None:
    return measured_from([read_report(p) for p in paths]) if paths else None


def _cached(paths: list[Path]) -> frozenset[str]:
    held: frozenset[str] = frozenset()
    for path in paths:
        held |= cached_configs(read_text(path, UsageError, f"--cached-configs {path}"), str(path))
    return held


def cmd_shard(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    plan_ctx = plan_for(loaded, options.runner, os.environ)
    if not any(e.outcome is Outcome.RUN for e in plan_ctx.expectations.values()):
        raise UsageError(
            f"no cell is expected to RUN on {_which_runner(options, plan_ctx)}; there is nothing to shard "
            "(name a GPU profile with --runner; `specmatrix runners` lists them)"
        )
    measured = _measured(args.durations)
    cached = _cached(args.cached_configs)
    workload = workload_for(loaded.matrix, plan_ctx.runner, plan_ctx.expectations, measured, cached)
    if args.budget is not None:
        if not math.isfinite(args.budget) or args.budget <= 0:
            raise UsageError(f"--budget must be a positive, finite number of minutes, got {args.budget}")
        plan = plan_budget(workload, args.budget * 60)
    else:
        plan = plan_shards(workload, args.shards)
    selects = shard_selects(loaded.matrix, plan, args.plan_dir)
    if measured is None:
        durations = "cost table"
    else:
        known = sum(1 for i in workload.items if i.id in measured.cell_seconds)
        durations = f"measured for {known} of {len(workload.items)} cells ({measured.reports} report(s)); cost table for the rest"
    doc = plan_document(loaded.matrix, plan_ctx.runner, plan, selects, durations)
    if args.plan_dir:
        write_plan_dir(Path(args.plan_dir), doc)
    print(
        f"specmatrix shard: {plan.cells} cells on {plan_ctx.runner.name} in {len(plan.shards)} shard(s); "
        f"estimated makespan {plan.makespan / 60:.1f} min (lower bound {plan.lower_bound / 60:.1f}), "
        f"compile {plan.setup_total:.0f} s; durations: {durations}"
        + (f"; restored JIT cache holds {len(cached)} configuration(s)" if cached else ""),
        file=sys.stderr,
    )
    # allow_nan=False: `Infinity` is not JSON, and GitHub's fromJSON rejects the whole matrix.
    if args.format == "github":  # one-line {include: [...]} for a job matrix
        print(dumps_strict(gha_matrix(plan_ctx.runner, plan, selects), where="--format github", separators=(",", ":")))
    else:
        print(dumps_strict(doc, where="shard plan", indent=2))
    return EXIT_OK


COVERAGE_OUTPUTS = ("coverage.json",)  # what `coverage` writes that a folder walk would take for a report


def _report_paths(paths: list[Path], out: Path) -> list[Path]:
    """Reports named or found under named folders; this command's own outputs in --out are never read back."""
    own = [out / name for name in COVERAGE_OUTPUTS]
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.json") if p.is_file() and not any(same_file(p, o) for o in own)))
        else:
            found.append(path)
    refuse_input_targets((("--out", o) for o in own), found)
    return found


def _same_matrix(matrix_name: str, sources: list[ReportSource]) -> None:
    for source in sources:
        if source.report.matrix != matrix_name:
            raise ReportError(
                f"{source.label}: a report of matrix {source.report.matrix!r}, not {matrix_name!r}; merge reports of one "
                "matrix (or pass its --matrix)"
            )


def cmd_coverage(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    paths = _report_paths(args.reports, args.out)
    expect_runners = [find_runner(loaded.runners, n.strip()) for n in args.expect_runners.split(",") if n.strip()]
    planned = read_plan(args.plan) if args.plan else None
    if not paths and not (planned or expect_runners or args.expect_shards):
        raise UsageError("no report given (and no --plan, --expect-shards or --expect-runners to judge their absence)")
    sources = [ReportSource(label=str(p), report=read_report(p)) for p in paths]
    _same_matrix(loaded.matrix.name, sources)
    result = merge(
        loaded.matrix,
        loaded.runners,
        sources,
        expect_runners=expect_runners,
        planned=planned,
        expect_shards=args.expect_shards,
    )
    result = replace(result, findings=stamped(result.findings, ""))
    out: Path = args.out
    # Every output is rendered in memory first: a missing matplotlib or a bad value then writes nothing at all,
    # rather than a coverage.json beside a stale coverage.md.
    # coverage.json holds the merge's own verdict; a baseline given on the command line changes what it prints.
    merged_code = EXIT_FINDINGS if any(f.failing for f in result.findings) else EXIT_OK
    files: dict[str, bytes] = {"coverage.json": _coverage_json(coverage_document(result, exit_code=merged_code))}
    heatmap = None
    if not args.no_heatmap and result.entries:
        from matrix.coverage.heatmap import PlottingUnavailable, render_heatmap

        try:
            files.update(render_heatmap(result, ("png", "svg"), stem="heatmap"))
            heatmap = "heatmap.png"
        except PlottingUnavailable as exc:  # the tables need no plotting library: write them, without the picture
            print(f"specmatrix coverage: no heatmap: {exc} (--no-heatmap leaves it out quietly)", file=sys.stderr)
    files["coverage.md"] = coverage_markdown(result, heatmap=heatmap).encode("utf-8", errors="replace")
    files["summary.md"] = coverage_markdown(result).encode("utf-8", errors="replace")
    ensure_dir(out)
    for name, data in files.items():
        write_bytes_atomic(out / name, data)
    gated = apply_gate(args, result.findings, "", "coverage", merged_code, anchor=CELLS)  # cell findings name no file
    code = gated.exit_code
    if args.format == "json":
        printed = files["coverage.json"]
        if args.baseline is not None or args.write_baseline is not None:
            failing = sum(f.failing for f in gated.findings)
            printed = _coverage_json(coverage_document(result, exit_code=code, failing=failing))
        print(printed.decode().rstrip("\n"))
        return code
    if args.format == "md":
        print(files["summary.md"].decode(), end="")
        return code
    if args.format in ("github", "sarif", "junit"):
        found = gated.findings
        if args.format == "github":
            print(emit.github(found, root="", prefix=None))
        elif args.format == "sarif":
            print(emit.sarif(found, tool=Tool.COVERAGE, prefix=None, help_uri=args.help_uri))
        else:
            print(emit.junit(found, tool=Tool.COVERAGE, root="", prefix=None))
        return code
    kept = {id(f) for f in gated.findings}
    errors = [f for f in result.errors if id(f) in kept]
    summary = f"specmatrix coverage: {len(sources)} report(s), {len(errors)} finding(s); wrote {out}/coverage.md"
    print(text_report(COVERAGE_TEXT, errors, tail=[summary]))
    return code


def _coverage_json(document: dict[str, Any]) -> bytes:
    return (dumps_strict(document, where="coverage.json", indent=2) + "\n").encode()


COVERAGE_TEXT = View(tool=Tool.COVERAGE, lines=lambda f: [f"{f.kind}: {f.message}"])


def cmd_register(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    if args.parts < 1:
        raise UsageError("--parts must be >= 1")
    names = args.register_runners or list(loaded.runners)
    runners = [find_runner(loaded.runners, n) for n in names]
    only = frozenset(c.id for c in select(loaded.matrix.cells, args.select)) if args.select else None
    modules = generate(loaded.matrix, runners, stage=args.stage, measured=_measured(args.durations), parts=args.parts, only=only)
    served = {m.runner for m in modules}
    versions = effective_versions(loaded.matrix, {})
    reasons: dict[str, str] = {}
    for runner in runners:
        if runner.name not in served:
            exps = expectations(loaded.matrix, runner, versions)
            reasons[runner.name] = _why_no_module(runner, {i for i, e in exps.items() if e.outcome is Outcome.RUN})
    if not modules:
        raise UsageError("nothing to write: " + "; ".join(reasons.values()))
    modules = keep_scheduled(args, loaded.runners, modules)
    for name in args.register_runners:
        if name in reasons:
            print(f"specmatrix register: note: nothing written for {reasons[name]}", file=sys.stderr)
    out: Path = args.out
    ensure_dir(out)
    for module in modules:
        write_text_atomic(out / module.file_name, module.text)
        if args.format == "text":
            print(f"{out / module.file_name}: {len(module.cells)} cells, est_time {module.est_time} s ({module.runner})")
    if args.format == "json":
        written = [
            {"path": str(out / m.file_name), "runner": m.runner, "cells": len(m.cells), "est_time": m.est_time} for m in modules
        ]
        print(dumps_indented({"schema": "specmatrix.register/1", "modules": written, "not_written": reasons}))
    return EXIT_OK


def keep_scheduled(args: argparse.Namespace, runners: Any, modules: list[GeneratedModule]) -> list[GeneratedModule]:
    """The modules a scheduled job runs (schedule read as `guards` reads it); says which runner configs it left out."""
    if args.no_workflows:
        return modules
    from matrix.register.scheduled import scheduled_modules
    from matrix.schedule.load import find_workflows, load_schedule

    root = args.workflows
    if root is None:
        start = args.out
        while not start.exists() and start != start.parent:
            start = start.parent
        root = find_workflows(start)
        if root is None:
            print(
                f"specmatrix register: no .github/workflows at or above {args.out}: every runner config's module is "
                "written, scheduled or not (--workflows DIR to check them against a CI)",
                file=sys.stderr,
            )
            return modules
    result = scheduled_modules(modules, runners, load_schedule(root, runners))
    for left in result.left_out:
        print(f"specmatrix register: left out {left.module.runner_config} ({left.module.file_name}): {left.why}", file=sys.stderr)
    if not result.kept:
        raise UsageError(f"nothing to write: no module is run by a scheduled job of the CI under {root} (see above)")
    return list(result.kept)
