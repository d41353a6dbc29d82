"""A shard plan for one runner: which cells each CI job runs, and what it is expected to cost; pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from matrix.core.errors import UsageError
from matrix.shard.planner import plan_setup_aware
from matrix.shard.reference_planners import Planner
from matrix.shard.workload import Assignment, Workload, evaluate, work_seconds

GITHUB_MATRIX_LIMIT = 256  # GitHub Actions runs at most 256 jobs per matrix


@dataclass(frozen=True, kw_only=True)
class Shard:
    index: int  # 1-based, as shown in job names
    cells: tuple[str, ...]
    configs: tuple[str, ...]
    est_seconds: float


@dataclass(frozen=True, kw_only=True)
class ShardPlan:
    shards: tuple[Shard, ...]
    makespan: float
    lower_bound: float
    setup_total: float

    @property
    def cells(self) -> int:
        return sum(len(s.cells) for s in self.shards)


def _plan(workload: Workload, assignment: Assignment) -> ShardPlan:
    # Empty shards would be jobs that select nothing; a plan never contains them.
    kept = tuple(s for s in assignment if s)
    ev = evaluate(workload, kept)
    by_id = workload.by_id
    shards = tuple(
        Shard(
            index=k + 1,
            cells=ids,
            configs=tuple(sorted({by_id[i].config for i in ids})),
            est_seconds=round(ev.shard_wall[k], 1),
        )
        for k, ids in enumerate(kept)
    )
    return ShardPlan(shards=shards, makespan=ev.makespan, lower_bound=ev.lower_bound, setup_total=ev.setup_total)


def plan_shards(workload: Workload, shards: int, planner: Planner = plan_setup_aware) -> ShardPlan:
    """Exactly `shards` jobs (fewer only when there are fewer cells than jobs)."""
    if not 1 <= shards <= GITHUB_MATRIX_LIMIT:
        raise UsageError(f"--shards must be between 1 and {GITHUB_MATRIX_LIMIT} (a GitHub matrix holds at most 256 jobs)")
    if not workload.items:
        raise UsageError("no cell is expected to RUN on this runner; there is nothing to shard")
    return _plan(workload, planner(workload, min(shards, len(workload.items))))


def plan_budget(workload: Workload, budget_seconds: float, planner: Planner = plan_setup_aware) -> ShardPlan:
    """The fewest shards whose estimated makespan fits the budget."""
    if not workload.items:
        raise UsageError("no cell is expected to RUN on this runner; there is nothing to shard")
    workers = max(1, workload.workers)
    room = (budget_seconds - workload.shard_seconds) * workers
    largest = max(i.seconds + workload.setup_of(i.config) for i in workload.items)
    if room < largest:
        raise UsageError(
            f"budget {budget_seconds / 60:.1f} min cannot fit one shard: fixed cost {workload.shard_seconds:.0f} s "
            f"plus the longest cell {largest / workers:.0f} s"
        )
    total = work_seconds(workload, workload.items)
    start = max(1, math.ceil(total / room))
    for shards in range(start, min(GITHUB_MATRIX_LIMIT, len(workload.items)) + 1):
        plan = _plan(workload, planner(workload, shards))
        if plan.makespan <= budget_seconds:
            return plan
    raise UsageError(
        f"budget {budget_seconds / 60:.1f} min needs more than {min(GITHUB_MATRIX_LIMIT, len(workload.items))} shards "
        f"(total work {total / workers / 60:.1f} min per worker); raise the budget"
    )
