"""Shard plans as documents: the plan file (JSON), the GitHub matrix, and per-shard selection files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core.atomic import ensure_dir, write_text_atomic
from matrix.core.errors import ReportError, UsageError
from matrix.core.jsonio import dumps_strict, loads_untrusted
from matrix.core.model import Matrix, RunnerProfile
from matrix.core.textfiles import read_text
from matrix.shard.compact import compact_selector
from matrix.shard.plan import ShardPlan

PLAN_SCHEMA = "specmatrix.shard-plan/1"
PLAN_FILE = "plan.json"
INLINE_SELECT_LIMIT = 2000  # longer selectors go through a file so no job's command line gets near the OS limit


def shard_file(index: int) -> str:
    return f"shard-{index}.txt"


def shard_selects(matrix: Matrix, plan: ShardPlan, plan_dir: str | None) -> dict[int, str]:
    """The `--matrix-select` value per shard: a compact selector, or `@DIR/shard-K.txt` when too long."""
    out: dict[int, str] = {}
    for shard in plan.shards:
        text = compact_selector(matrix, shard.cells)
        if len(text) > INLINE_SELECT_LIMIT:
            if plan_dir is None:
                raise UsageError(
                    f"shard {shard.index}'s selector is {len(text)} characters; pass --plan-dir DIR so the job reads its cells "
                    "from DIR/" + shard_file(shard.index)
                )
            text = f"@{plan_dir.rstrip('/')}/{shard_file(shard.index)}"
        out[shard.index] = text
    return out


def plan_document(
    matrix: Matrix, runner: RunnerProfile, plan: ShardPlan, selects: Mapping[int, str], durations: str
) -> dict[str, Any]:
    return {
        "schema": PLAN_SCHEMA,
        "matrix": matrix.name,
        "runner": runner.name,
        "labels": list(runner.labels),
        "durations": durations,
        "makespan_seconds": round(plan.makespan, 1),
        "lower_bound_seconds": round(plan.lower_bound, 1),
        "setup_seconds": round(plan.setup_total, 1),
        "cells": plan.cells,
        "shards": [
            {
                "index": s.index,
                "cells": list(s.cells),
                "configs": list(s.configs),
                "est_seconds": s.est_seconds,
                "select": selects[s.index],
            }
            for s in plan.shards
        ],
    }


def gha_matrix(runner: RunnerProfile, plan: ShardPlan, selects: Mapping[int, str]) -> dict[str, Any]:
    """`{"include": [...]}` for `strategy.matrix: ${{ fromJSON(...) }}`; one entry per shard."""
    return {
        "include": [
            {
                "shard": s.index,
                "shards": len(plan.shards),
                "runner": runner.name,
                "runs-on": list(runner.labels) or [runner.name],
                "workers": max(1, runner.gpus),
                "cells": len(s.cells),
                "est_minutes": round(s.est_seconds / 60, 1),
                "select": selects[s.index],
            }
            for s in plan.shards
        ]
    }


def write_plan_dir(directory: Path, document: Mapping[str, Any]) -> None:
    """plan.json plus one file per shard listing its cell ids, one per line (for `--matrix-select=@FILE`)."""
    plan_text = dumps_strict(document, where=str(directory / PLAN_FILE), indent=2) + "\n"  # before anything is written
    ensure_dir(directory)
    for shard in document["shards"]:
        write_text_atomic(directory / shard_file(shard["index"]), "".join(f"{c}\n" for c in shard["cells"]))
    write_text_atomic(directory / PLAN_FILE, plan_text)


@dataclass(frozen=True, kw_only=True)
class PlannedShards:
    """What a coverage merge needs from a plan file: the runner and each shard's cells."""

    runner: str
    shards: Mapping[int, tuple[str, ...]]


def read_plan(path: Path) -> PlannedShards:
    """Load plan.json (or a directory holding it); a corrupt file is a ReportError naming it."""
    if path.is_dir():
        path = path / PLAN_FILE
    doc = loads_untrusted(read_text(path, ReportError, f"{path} (plan)"), f"{path} (plan)", ReportError, what="plan JSON")
    if not isinstance(doc, dict) or doc.get("schema") != PLAN_SCHEMA:
        raise ReportError(f"{path}: not a shard plan (expected schema {PLAN_SCHEMA!r})")
    shards: dict[int, tuple[str, ...]] = {}
    entries, runner = doc.get("shards"), doc.get("runner")
    if not isinstance(entries, list) or not isinstance(runner, str):
        raise ReportError(f"{path}: shard plan has a malformed 'shards' or 'runner' field")
    for entry in entries:
        index = entry.get("index") if isinstance(entry, dict) else None
        cells = entry.get("cells") if isinstance(entry, dict) else None
        if type(index) is not int or not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
            raise ReportError(f"{path}: shard plan entry needs an integer 'index' and a list of cell ids 'cells'")
        if index in shards:
            raise ReportError(f"{path}: shard {index} is listed twice")
        shards[index] = tuple(cells)
    return PlannedShards(runner=runner, shards=shards)
