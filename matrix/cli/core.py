"""Core commands: cells, explain, runners, detect."""

from __future__ import annotations

import argparse
import os
from typing import Any

from matrix.cli.options import add_output_options, add_table_option
from matrix.cli.tables import cells_table, runners_table
from matrix.core.detect import detect
from matrix.core.errors import EXIT_OK, EXIT_USAGE, DetectionError, UsageError
from matrix.core.expect import effective_versions, expectations
from matrix.core.jsonio import dumps_indented
from matrix.core.machine import AUTO, auto_runner, differences, nearest_profiles
from matrix.core.model import Cell, Expectation, Outcome, RuleVerdict
from matrix.core.options import Options, load
from matrix.core.output import text_line, text_lines
from matrix.core.planning import plan_for
from matrix.core.selectors import select

CELLS_SCHEMA = "specmatrix.cells/1"
EXPLAIN_SCHEMA = "specmatrix.explain/1"


def register(sub: Any) -> None:
    p = sub.add_parser("cells", help="every cell with its expected outcome on a runner")
    add_table_option(p, "runner")
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="SELECTOR",
        help="cell selector, e.g. 'draft-trtllm_mha-topk{2,4}-*', repeatable (default: every cell)",
    )
    add_output_options(p, ("text", "json"), legacy_flags=("json",))
    p.set_defaults(func=cmd_cells)

    p = sub.add_parser("explain", help="the rule trail that decides one cell on a runner")
    p.add_argument("cell", help="cell id")
    add_table_option(p, "runner")
    add_output_options(p, ("text", "json"), legacy_flags=("json",))
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("runners", help="runner profiles and how many cells each must run")
    add_output_options(p, ("text", "json"), legacy_flags=("json",))
    p.set_defaults(func=cmd_runners)

    p = sub.add_parser("detect", help="what this machine is and which profile it satisfies")
    add_output_options(p, ("text", "json"), legacy_flags=("json",))
    p.set_defaults(func=cmd_detect)


def expectation_record(cell: Cell, exp: Expectation) -> dict[str, Any]:
    return {
        "id": cell.id,
        "group": cell.group,
        "values": cell.as_dict(),
        "outcome": exp.outcome.value,
        "impl": exp.impl,
        "reason": exp.reason,
        "rules": [{"id": v.rule.id, "satisfied": v.satisfied, "detail": v.detail} for v in exp.trail],
    }


def cmd_cells(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    plan = plan_for(loaded, options.runner, os.environ)
    cells = select(loaded.matrix.cells, args.select)
    if args.format == "json":
        doc = {
            "schema": CELLS_SCHEMA,
            "matrix": loaded.matrix.name,
            "runner": plan.runner.name,
            "versions": dict(plan.versions),
            "detection_overridden": plan.facts.overridden,
            "cells": [expectation_record(c, plan.expectations[c.id]) for c in cells],
        }
        print(dumps_indented(doc))
        return EXIT_OK
    for line in cells_table(loaded.matrix.name, plan, cells, auto=options.runner == AUTO):
        print(text_line(line))
    return EXIT_OK


def _rule_record(verdict: RuleVerdict) -> dict[str, Any]:
    rule = verdict.rule
    return {
        "id": rule.id,
        "kind": rule.kind.value,
        "satisfied": verdict.satisfied,
        "detail": verdict.detail,
        "reason": rule.reason,
        "source": rule.source,
    }


def _runner_line(gpus: int, sm: int | None) -> str:
    return "no GPU" if not gpus else f"{gpus} GPU(s), sm{sm}"


def cmd_explain(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    cells = select(loaded.matrix.cells, [args.cell])
    if len(cells) != 1:
        raise UsageError(f"explain needs one cell id; {args.cell!r} matches {len(cells)} cells")
    cell = cells[0]
    plan = plan_for(loaded, options.runner, os.environ)
    exp = plan.expectations[cell.id]
    if args.format == "json":  # schema specmatrix.explain/1
        doc = {
            "schema": EXPLAIN_SCHEMA,
            "matrix": loaded.matrix.name,
            "runner": plan.runner.name,
            "gpus": plan.runner.gpus,
            "sm": plan.runner.sm,
            "versions": dict(plan.versions),
            "detection_overridden": plan.facts.overridden,
            "note": plan.detection_note or None,
            "cell": expectation_record(cell, exp) | {"rules": [_rule_record(v) for v in exp.trail]},
        }
        print(dumps_indented(doc))
        return EXIT_OK
    lines = [f"{cell.id} on {plan.runner.name} ({_runner_line(plan.runner.gpus, plan.runner.sm)}): {exp.outcome.value.upper()}"]
    if plan.detection_note:
        lines.append(f"note: {plan.detection_note}")
    lines.append(f"  implementation: {exp.impl or '-'}")
    lines.append("  versions: " + ", ".join(f"{k} {v}" for k, v in sorted(plan.versions.items())))
    if not exp.trail:
        lines.append("  no rule applies to this cell")
    for verdict in exp.trail:
        mark = "ok  " if verdict.satisfied else "SKIP"
        lines.append(f"  {mark} {verdict.rule.id} ({verdict.rule.kind.value}): {verdict.rule.reason}")
        lines.append(f"       {verdict.detail}")
        lines.append(f"       source: {verdict.rule.source}")
    # Reasons and sources come from the matrix file: shown escaped, never as a workflow command.
    print(text_lines(lines))
    return EXIT_OK


def cmd_runners(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    versions = effective_versions(loaded.matrix, detect(os.environ, gpus=False).versions)
    rows: list[dict[str, Any]] = []
    for profile in loaded.runners.values():
        exps = expectations(loaded.matrix, profile, versions)
        run = sum(e.outcome is Outcome.RUN for e in exps.values())
        rows.append(
            {
                "name": profile.name,
                "gpus": profile.gpus,
                "capability": list(profile.capability) if profile.capability else None,
                "device_name": profile.device_name,
                "labels": list(profile.labels),
                "runner_configs": list(profile.runner_configs),
                "skip_policy": profile.skip_policy.value,
                "run": run,
                "skip": len(exps) - run,
            }
        )
    if args.format == "json":
        print(dumps_indented({"schema": "specmatrix.runners/1", "runners": rows}))
        return EXIT_OK
    for line in runners_table(rows, len(loaded.matrix.cells)):
        print(text_line(line))
    return EXIT_OK


def cmd_detect(args: argparse.Namespace, options: Options) -> int:
    loaded = load(options)
    facts = detect(os.environ)
    failure: DetectionError | None = None
    try:
        profile_name: str | None = auto_runner(loaded.runners, facts).name
    except DetectionError as exc:
        profile_name, failure = None, exc
    nearest = nearest_profiles(loaded.runners, facts) if profile_name is None else []
    doc = {
        "schema": "specmatrix.detect/1",
        "gpus": facts.gpus,
        "capabilities": [list(c) for c in facts.capabilities],
        "names": list(facts.names),
        "versions": dict(facts.versions),
        "detection_overridden": facts.overridden,
        "runner": profile_name,
        "unsatisfied": {p.name: differences(p, facts) for p in loaded.runners.values() if differences(p, facts)},
        "nearest": [{"runner": p.name, "gaps": gaps} for p, gaps in nearest],
    }
    code = EXIT_OK if profile_name is not None else EXIT_USAGE
    if args.format == "json":
        print(dumps_indented(doc))
        return code
    print(f"machine: {facts.describe()}")
    print(
        "versions: "
        + (", ".join(f"{k} {v}" for k, v in sorted(facts.versions.items())) or "none of torch/flashinfer/sglang/triton")
    )
    if profile_name is not None:
        print(f"runner profile: {profile_name}")
        return EXIT_OK
    print("runner profile: none fits; nearest:")
    for p, gaps in nearest:
        print(f"  {p.name}: {'; '.join(gaps)}")
    assert failure is not None
    raise failure
