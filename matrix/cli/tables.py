"""Text tables of `cells` and `runners` for a terminal: a header, the summary first, a legend, rows of at most 100 columns.

The JSON forms (`--format json`) carry every detail; these tables point to `specmatrix explain` for the rest.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from matrix.core.model import Cell, Expectation, Outcome
from matrix.core.planning import Plan

WIDTH = 100
RUNNERS_LEGEND_ENTRIES = (
    ("arch", "CUDA compute capability (sm90 Hopper, sm100/sm103 Blackwell, sm120 RTX Blackwell)"),
    ("policy", "strict: every skip outside the matrix needs an allowlist entry; lenient: only unexpected skips fail"),
    ("run/skip", "cells the matrix expects to run / to skip on the profile"),
    ("serves", "sglang runner configs the profile serves (`specmatrix register` writes one module each); - none"),
)


def wrap(text: str, *, indent: str = "", hang: str = "  ") -> list[str]:
    """`text` in lines of at most WIDTH columns (a long unbreakable word is split, never left over-wide)."""
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + hang, break_on_hyphens=False)


def _impl(cell: Cell, exp: Expectation) -> str:
    return f"[{exp.impl}]" if exp.impl and exp.impl != cell.get("backend") else ""


def _cells(n: int) -> str:
    return f"{n} cell" if n == 1 else f"{n} cells"


def _fit(line: str) -> str:
    return line if len(line) <= WIDTH else line[: WIDTH - 1] + "…"


def cells_table(matrix_name: str, plan: Plan, cells: Sequence[Cell], *, auto: bool) -> list[str]:
    """The expected outcome of `cells` on the plan's runner: summary, skip rules, legend, then one row per cell."""
    runner = plan.runner
    arch = f"{runner.gpus} GPU(s), sm{runner.sm}" if runner.gpus else "no GPU"
    if auto:
        arch = f"auto-detected; {arch}"
    exps = {c.id: plan.expectations[c.id] for c in cells}
    counts = Counter(e.outcome for e in exps.values())
    first_rule = {i: e.blocking[0].rule for i, e in exps.items() if e.outcome is Outcome.SKIP and e.blocking}
    by_rule = Counter(r.id for r in first_rule.values())
    rules = {r.id: r for r in first_rule.values()}
    lines = [f"specmatrix cells: matrix {matrix_name} on runner {runner.name} ({arch})"]
    lines += wrap("versions: " + (", ".join(f"{k} {v}" for k, v in sorted(plan.versions.items())) or "none"))
    if plan.detection_note:
        lines.append(f"note: {plan.detection_note}")
    lines += ["", f"summary: {len(cells)} cells: {counts[Outcome.RUN]} run, {counts[Outcome.SKIP]} expected skips"]
    if by_rule:
        lines.append("expected skips by the first rule that blocks them:")
        for rule_id, n in sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])):
            lines += wrap(f"{n:>4}  {rule_id}: {rules[rule_id].reason}", indent="", hang="        ")
    lines += ["", *_cells_legend(runner.name)]
    id_width = max((len(c.id) for c in cells), default=4)
    impl_width = max((len(_impl(c, exps[c.id])) for c in cells), default=0)
    for outcome in (Outcome.RUN, Outcome.SKIP):
        chosen = [c for c in cells if exps[c.id].outcome is outcome]
        if not chosen:
            continue
        if outcome is Outcome.RUN:
            groups: Iterable[tuple[str, list[Cell]]] = [(f"RUN: {_cells(len(chosen))}", chosen)]
        else:
            order = sorted(by_rule, key=lambda r: (-by_rule[r], r))
            groups = [
                (f"SKIP by {r}: {_cells(by_rule[r])}", [c for c in chosen if c.id in first_rule and first_rule[c.id].id == r])
                for r in order
            ]
            unexplained = [c for c in chosen if c.id not in first_rule]
            if unexplained:
                groups = [*groups, (f"SKIP: {_cells(len(unexplained))}", unexplained)]
        for title, group in groups:
            lines += ["", title]
            for cell in group:
                exp = exps[cell.id]
                more = len(exp.blocking) - 1
                extra = f"+{more} more rule{'s' if more > 1 else ''}" if more > 0 else ""
                row = f"{outcome.value.upper():<4}  {cell.id:<{id_width}}  {_impl(cell, exp):<{impl_width}}  {extra}"
                lines.append(_fit(row.rstrip()))
    return lines


def legend(entries: Sequence[tuple[str, str]]) -> list[str]:
    """`legend:` then one wrapped entry per (key, meaning), the meanings aligned."""
    key_width = max(len(k) for k, _ in entries)
    lines = ["legend:"]
    for key, meaning in entries:
        lines += wrap(f"  {key:<{key_width}}  {meaning}", hang=" " * (key_width + 4))
    return lines


def _cells_legend(runner: str) -> list[str]:
    return legend(
        [
            ("RUN / SKIP", "the outcome the matrix expects on this runner; a RUN cell that skips fails the audit"),
            ("[impl]", "the kernel implementation, shown where it differs from the backend name"),
            ("+N more", "further rules that would also skip the cell"),
            ("details", f"specmatrix explain CELL --runner {runner} (every rule with its source); --format json: all cells"),
        ]
    )


RUNNERS_LEGEND = legend(RUNNERS_LEGEND_ENTRIES)


def runners_table(rows: Sequence[Mapping[str, Any]], cells: int) -> list[str]:
    """Runner profiles: summary first, a legend for policy and serves, then one row per profile."""
    strict = [r["name"] for r in rows if r["skip_policy"] == "strict"]
    lines = ["specmatrix runners: runner profiles and how many of the matrix's cells each must run", ""]
    lines += wrap(
        f"summary: {len(rows)} profiles, {cells} cells; "
        f"{sum(1 for r in rows if r['gpus'])} with GPUs; strict skip policy on {', '.join(strict) or 'none'}"
    )
    lines += ["", *RUNNERS_LEGEND, ""]
    header = f"{'runner':<14} {'gpus':>4} {'arch':<6} {'policy':<8} {'run':>4} {'skip':>4}  serves"
    lines.append(header)
    for r in rows:
        cap = r["capability"]
        arch = f"sm{cap[0]}{cap[1]}" if cap else "-"
        serves = ", ".join(r["runner_configs"]) or "-"
        row = f"{r['name']:<14} {r['gpus']:>4} {arch:<6} {r['skip_policy']:<8} {r['run']:>4} {r['skip']:>4}  {serves}"
        lines.append(_fit(row))
    return lines
