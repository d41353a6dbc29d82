"""The setup-aware shard planner: configuration groups placed by stable preference, then polished; pure."""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass

from matrix.shard.workload import Assignment, WorkItem, Workload, lower_bound

SLACK = 0.03  # placement may overfill a shard this much before a group leaves its preferred shard
MAX_ROUNDS = 500


@dataclass(frozen=True, kw_only=True)
class _Unit:
    """A configuration group, or one chunk of a group too large for one shard."""

    key: str
    config: str
    items: tuple[WorkItem, ...]

    @property
    def body(self) -> float:
        return sum(i.seconds for i in self.items)


def _rank(key: str, shard: int) -> int:
    # Rendezvous hashing: each unit prefers shards in an order fixed by its own key, so adding or
    # removing another unit leaves this unit's preference, and usually its shard, unchanged.
    digest = hashlib.blake2b(f"{key}\x00{shard}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _by_size(items: list[WorkItem]) -> list[WorkItem]:
    return sorted(items, key=lambda i: (-i.seconds, i.id))


def _split(config: str, items: list[WorkItem], setup: float, capacity: float, shards: int) -> list[_Unit]:
    """One unit per group, unless the group alone exceeds a shard's share: then balanced chunks."""
    body = sum(i.seconds for i in items)
    room = capacity - setup
    if setup + body <= capacity or room <= 0:
        return [_Unit(key=config, config=config, items=tuple(sorted(items, key=lambda i: i.id)))]
    chunks = min(len(items), shards, math.ceil(body / room))
    bins: list[list[WorkItem]] = [[] for _ in range(chunks)]
    loads = [0.0] * chunks
    for item in _by_size(items):
        k = min(range(chunks), key=lambda j: (loads[j], j))
        bins[k].append(item)
        loads[k] += item.seconds
    return [
        _Unit(key=f"{config}#{k}", config=config, items=tuple(sorted(b, key=lambda i: i.id))) for k, b in enumerate(bins) if b
    ]


class _Shards:
    """Mutable placement state used only inside `plan_setup_aware`."""

    def __init__(self, workload: Workload, count: int) -> None:
        self.workload = workload
        self.items: list[dict[str, WorkItem]] = [{} for _ in range(count)]
        self.configs: list[defaultdict[str, int]] = [defaultdict(int) for _ in range(count)]
        self.load = [0.0] * count

    def added_cost(self, shard: int, config: str, body: float) -> float:
        return body + (0.0 if self.configs[shard][config] else self.workload.setup_of(config))

    def removed_cost(self, shard: int, config: str, items: tuple[WorkItem, ...]) -> float:
        left = self.configs[shard][config] - len(items)
        return sum(i.seconds for i in items) + (0.0 if left else self.workload.setup_of(config))

    def add(self, shard: int, items: tuple[WorkItem, ...]) -> None:
        for item in items:
            self.load[shard] += self.added_cost(shard, item.config, item.seconds)
            self.items[shard][item.id] = item
            self.configs[shard][item.config] += 1

    def remove(self, shard: int, items: tuple[WorkItem, ...]) -> None:
        for item in items:
            self.configs[shard][item.config] -= 1
            left = self.configs[shard][item.config]
            self.load[shard] -= item.seconds + (0.0 if left else self.workload.setup_of(item.config))
            del self.items[shard][item.id]

    def assignment(self) -> Assignment:
        return tuple(tuple(sorted(s)) for s in self.items)


def _place(state: _Shards, units: list[_Unit], capacity: float) -> None:
    limit = capacity * (1 + SLACK)
    count = len(state.load)
    for unit in sorted(units, key=lambda u: (-(u.body + state.workload.setup_of(u.config)), u.key)):
        preference = sorted(range(count), key=lambda s: _rank(unit.key, s))
        fitting = [s for s in preference if state.load[s] + state.added_cost(s, unit.config, unit.body) <= limit]
        if fitting:
            target = fitting[0]
        else:
            target = min(preference, key=lambda s: state.load[s] + state.added_cost(s, unit.config, unit.body))
        state.add(target, unit.items)


def _candidate_moves(state: _Shards, shard: int) -> list[tuple[str, tuple[WorkItem, ...]]]:
    """What may leave the busiest shard: each whole configuration block, and each single item."""
    blocks: defaultdict[str, list[WorkItem]] = defaultdict(list)
    for item in state.items[shard].values():
        blocks[item.config].append(item)
    moves: list[tuple[str, tuple[WorkItem, ...]]] = []
    for config in sorted(blocks):
        block = tuple(sorted(blocks[config], key=lambda i: i.id))
        moves.append((f"{config}\x00*", block))
        if len(block) > 1:
            moves.extend((f"{config}\x00{i.id}", (i,)) for i in block)
    return moves


def _polish(state: _Shards) -> None:
    """Move work off the busiest shard while that lowers the pair's maximum; deterministic."""
    count = len(state.load)
    for _ in range(MAX_ROUNDS):
        busiest = max(range(count), key=lambda s: (state.load[s], -s))
        peak = state.load[busiest]
        best: tuple[float, str, int, tuple[WorkItem, ...]] | None = None
        for key, items in _candidate_moves(state, busiest):
            config = items[0].config
            relief = state.removed_cost(busiest, config, items)
            body = sum(i.seconds for i in items)
            for dest in range(count):
                if dest == busiest:
                    continue
                after = max(peak - relief, state.load[dest] + state.added_cost(dest, config, body))
                if after < peak - 1e-9 and (best is None or (after, key, dest) < best[:3]):
                    best = (after, key, dest, items)
        if best is None:
            return
        state.remove(busiest, best[3])
        state.add(best[2], best[3])


def plan_setup_aware(workload: Workload, shards: int) -> Assignment:
    """Group cells by configuration, split only groups larger than a shard's share, place, polish."""
    if shards < 1:
        raise ValueError("shards must be >= 1")
    capacity = (lower_bound(workload, shards) - workload.shard_seconds) * max(1, workload.workers)
    groups: defaultdict[str, list[WorkItem]] = defaultdict(list)
    for item in workload.items:
        groups[item.config].append(item)
    units: list[_Unit] = []
    for config in sorted(groups):
        units.extend(_split(config, groups[config], workload.setup_of(config), capacity, shards))
    state = _Shards(workload, shards)
    _place(state, units, capacity)
    _polish(state)
    return state.assignment()
