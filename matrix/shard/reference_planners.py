"""Reference planners the setup-aware one is measured against (longest-first over items or files); pure."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from matrix.shard.workload import Assignment, Workload, work_seconds

Planner = Callable[[Workload, int], Assignment]


def _longest_first(units: Sequence[tuple[str, float, tuple[str, ...]]], shards: int) -> Assignment:
    """Greedy longest-first: each unit (largest first) onto the least-loaded shard."""
    bins: list[list[str]] = [[] for _ in range(shards)]
    loads = [0.0] * shards
    for _, seconds, members in sorted(units, key=lambda u: (-u[1], u[0])):
        k = min(range(shards), key=lambda j: (loads[j], j))
        bins[k].extend(members)
        loads[k] += seconds
    return tuple(tuple(sorted(b)) for b in bins)


def longest_first_items(workload: Workload, shards: int) -> Assignment:
    """Longest-first over single items, blind to setup cost (the naive cell-level split)."""
    return _longest_first([(i.id, i.seconds, (i.id,)) for i in workload.items], shards)


def longest_first_files(workload: Workload, shards: int) -> Assignment:
    """Longest-first over whole files by estimated time, as sglang's auto_partition does."""
    files: defaultdict[str, list[str]] = defaultdict(list)
    for item in workload.items:
        files[item.file or item.id].append(item.id)
    by_id = workload.by_id
    units = [(f, work_seconds(workload, [by_id[i] for i in ids]), tuple(ids)) for f, ids in files.items()]
    return _longest_first(units, shards)
