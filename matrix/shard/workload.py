"""What the planners schedule: work items with a per-shard setup cost per configuration; pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

Assignment = tuple[tuple[str, ...], ...]
"""Item ids per shard, shard 0 first."""


@dataclass(frozen=True, kw_only=True)
class WorkItem:
    """One schedulable unit (a matrix cell, or a registered test file)."""

    id: str
    config: str  # items sharing a configuration pay its setup once per shard
    seconds: float  # run time once the configuration is set up
    file: str = ""  # the test module it would live in (for the file-level baseline)


@dataclass(frozen=True, kw_only=True)
class Workload:
    items: tuple[WorkItem, ...]
    setup: Mapping[str, float] = field(default_factory=dict)  # config -> seconds, paid once per shard
    shard_seconds: float = 0.0  # fixed cost of every shard (checkout, install, start-up)
    workers: int = 1  # parallel workers inside one shard (one per GPU)

    def item(self, item_id: str) -> WorkItem:
        return self.by_id[item_id]

    @property
    def by_id(self) -> dict[str, WorkItem]:
        return {i.id: i for i in self.items}

    def setup_of(self, config: str) -> float:
        return self.setup.get(config, 0.0)


def work_seconds(workload: Workload, items: Iterable[WorkItem]) -> float:
    """Run time of a set of items on one shard, each distinct configuration set up once."""
    total = 0.0
    configs: set[str] = set()
    for item in items:
        total += item.seconds
        configs.add(item.config)
    return total + sum(workload.setup_of(c) for c in configs)


def wall_seconds(workload: Workload, work: float) -> float:
    """Estimated wall time of a shard doing `work` seconds spread over its workers."""
    return workload.shard_seconds + work / max(1, workload.workers)


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """How good an assignment is under the workload's cost model."""

    shard_wall: tuple[float, ...]
    makespan: float
    lower_bound: float
    setup_total: float  # setup (compile) seconds paid over all shards

    @property
    def ratio(self) -> float:
        return self.makespan / self.lower_bound if self.lower_bound else 1.0


def lower_bound(workload: Workload, shards: int) -> float:
    """No plan on `shards` shards can beat this: every configuration is set up at least once."""
    if not workload.items:
        return 0.0
    configs = {i.config for i in workload.items}
    total = sum(i.seconds for i in workload.items) + sum(workload.setup_of(c) for c in configs)
    largest = max(i.seconds + workload.setup_of(i.config) for i in workload.items)
    return wall_seconds(workload, max(total / shards, largest))


def evaluate(workload: Workload, assignment: Assignment) -> Evaluation:
    by_id = workload.by_id
    walls: list[float] = []
    setup_total = 0.0
    for shard in assignment:
        items = [by_id[i] for i in shard]
        walls.append(wall_seconds(workload, work_seconds(workload, items)) if items else 0.0)
        setup_total += sum(workload.setup_of(c) for c in {i.config for i in items})
    return Evaluation(
        shard_wall=tuple(walls),
        makespan=max(walls, default=0.0),
        lower_bound=lower_bound(workload, len(assignment)),
        setup_total=setup_total,
    )


def moved_items(before: Assignment, after: Assignment) -> set[str]:
    """Items present in both plans whose shard index changed (how much a plan churned)."""
    where_before = {item: k for k, shard in enumerate(before) for item in shard}
    return {item for k, shard in enumerate(after) for item in shard if item in where_before and where_before[item] != k}


def check_assignment(workload: Workload, assignment: Sequence[Sequence[str]]) -> None:
    """Every item exactly once; raises ValueError otherwise (a planner bug, never user input)."""
    seen = [i for shard in assignment for i in shard]
    if sorted(seen) != sorted(i.id for i in workload.items):
        raise ValueError("assignment does not place every item exactly once")
