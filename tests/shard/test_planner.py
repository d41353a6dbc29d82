"""The shard planner: near the lower bound, compile paid once per configuration, low churn, budgets."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from matrix.core.errors import UsageError
from matrix.shard.plan import plan_budget, plan_shards
from matrix.shard.planner import plan_setup_aware
from matrix.shard.reference_planners import longest_first_files, longest_first_items
from matrix.shard.workload import Assignment, WorkItem, Workload, check_assignment, evaluate, moved_items, work_seconds


def in_input_order(workload: Workload, shards: int) -> Assignment:
    """Planted bug: round-robin in the order items arrive (neither balanced nor stable)."""
    bins: list[list[str]] = [[] for _ in range(shards)]
    for k, item in enumerate(workload.items):
        bins[k % shards].append(item.id)
    return tuple(tuple(b) for b in bins)


def synthetic(groups: dict[str, tuple[int, float, float]], *, shard_seconds: float = 0.0) -> Workload:
    """{config: (cells, seconds per cell, setup seconds)}."""
    items = tuple(WorkItem(id=f"{c}-{k:03d}", config=c, seconds=s, file=c) for c, (n, s, _) in groups.items() for k in range(n))
    return Workload(items=items, setup={c: setup for c, (_, _, setup) in groups.items()}, shard_seconds=shard_seconds)


def ratio_problem(workload: Workload, planner, shards: int) -> str | None:
    ev = evaluate(workload, planner(workload, shards))
    return None if ev.ratio <= 1.02 else f"makespan {ev.makespan:.1f} s is {ev.ratio:.3f} x the lower bound"


def compile_problem(workload: Workload, planner, shards: int) -> str | None:
    minimum = sum(workload.setup_of(c) for c in {i.config for i in workload.items})
    paid = evaluate(workload, planner(workload, shards)).setup_total
    return None if paid <= minimum * 1.05 else f"compiles {paid:.0f} s, minimum {minimum:.0f} s"


@pytest.mark.parametrize("shards", [2, 4, 8])
def test_every_cell_is_placed_exactly_once(b200_workload, shards):
    assignment = plan_setup_aware(b200_workload, shards)
    check_assignment(b200_workload, assignment)
    with pytest.raises(ValueError):
        check_assignment(b200_workload, (assignment[0], assignment[0], *assignment[2:]))


@pytest.mark.parametrize("shards", [2, 4, 8])
@pytest.mark.parametrize(
    ("planner", "good"), [(plan_setup_aware, True), (longest_first_items, False)], ids=["planner", "lpt-cells"]
)
def test_makespan_within_two_percent_of_the_lower_bound(b200_workload, planner, good, shards):
    problem = ratio_problem(b200_workload, planner, shards)
    assert (problem is None) is good, problem


@pytest.mark.parametrize("shards", [2, 4, 8])
@pytest.mark.parametrize(
    ("planner", "good"), [(plan_setup_aware, True), (longest_first_items, False)], ids=["planner", "lpt-cells"]
)
def test_each_configuration_compiles_about_once(b200_workload, planner, good, shards):
    problem = compile_problem(b200_workload, planner, shards)
    assert (problem is None) is good, problem


@pytest.mark.parametrize(
    ("planner", "good"), [(plan_setup_aware, True), (longest_first_items, False)], ids=["planner", "lpt-cells"]
)
def test_only_a_group_larger_than_a_shard_is_split(planner, good):
    workload = synthetic({"huge": (40, 10.0, 10.0), **{f"small{k}": (4, 1.0, 8.0) for k in range(12)}})
    assignment = planner(workload, 4)
    shards_of = {
        config: {k for k, shard in enumerate(assignment) for i in shard if workload.item(i).config == config}
        for config in workload.setup
    }
    assert len(shards_of["huge"]) > 1  # 410 s alone, a shard's share is ~240 s
    split_small = sorted(c for c, where in shards_of.items() if c != "huge" and len(where) > 1)
    assert (not split_small) is good, f"small groups split: {split_small}"


@pytest.mark.parametrize(
    ("planner", "good"), [(plan_setup_aware, True), (longest_first_items, False)], ids=["planner", "lpt-cells"]
)
@pytest.mark.parametrize("shards", [4, 8])
def test_adding_one_cell_moves_few_others(b200_workload, planner, good, shards):
    moved = []
    for k in range(0, len(b200_workload.items), 9):
        without = replace(b200_workload, items=b200_workload.items[:k] + b200_workload.items[k + 1 :])
        moved.append(len(moved_items(planner(without, shards), planner(b200_workload, shards))))
    mean = sum(moved) / len(moved)
    # One new cell should disturb a handful of the 180 cells, not reshuffle the plan.
    assert (mean <= 0.05 * len(b200_workload.items)) is good, f"mean moved {mean:.1f}, max {max(moved)}"


@pytest.mark.parametrize(("planner", "good"), [(plan_setup_aware, True), (in_input_order, False)], ids=["planner", "input-order"])
def test_plan_does_not_depend_on_input_order(b200_workload, planner, good):
    shuffled = list(b200_workload.items)
    random.Random(7).shuffle(shuffled)
    same = planner(b200_workload, 4) == planner(replace(b200_workload, items=tuple(shuffled)), 4)
    assert same is good


def test_budget_picks_the_fewest_shards_that_fit(b200_workload):
    budget = 2.0 * 60
    plan = plan_budget(b200_workload, budget)
    n = len(plan.shards)
    assert plan.makespan <= budget
    assert evaluate(b200_workload, plan_setup_aware(b200_workload, n - 1)).makespan > budget


@pytest.mark.parametrize(
    ("budget_minutes", "message"),
    [(1.4, "cannot fit one shard"), (1.8, "needs more than")],
    ids=["below-fixed-cost", "needs-too-many-shards"],
)
def test_budget_that_cannot_be_met_is_a_usage_error(budget_minutes, message):
    workload = synthetic({f"c{k}": (3, 20.0, 0.0) for k in range(200)}, shard_seconds=84.0)
    with pytest.raises(UsageError, match=message):
        plan_budget(workload, budget_minutes * 60)


@pytest.mark.parametrize("shards", [0, 257])
def test_shard_count_outside_github_limits_is_refused(b200_workload, shards):
    with pytest.raises(UsageError, match="between 1 and 256"):
        plan_shards(b200_workload, shards)


def test_more_shards_than_cells_gives_no_empty_job():
    workload = synthetic({"a": (2, 1.0, 0.0), "b": (1, 1.0, 0.0)})
    plan = plan_shards(workload, 8)
    assert len(plan.shards) == 3 and all(s.cells for s in plan.shards)


def test_estimates_add_setup_once_per_configuration_and_divide_by_workers():
    workload = Workload(
        items=(WorkItem(id="a", config="x", seconds=2.0), WorkItem(id="b", config="x", seconds=2.0)),
        setup={"x": 10.0},
        shard_seconds=5.0,
        workers=2,
    )
    assert work_seconds(workload, workload.items) == 14.0
    assert evaluate(workload, (("a", "b"),)).makespan == 5.0 + 14.0 / 2
    assert evaluate(workload, (("a",), ("b",))).setup_total == 20.0


@pytest.mark.parametrize("baseline", [longest_first_items, longest_first_files])
def test_baselines_place_every_item(b200_workload, baseline):
    check_assignment(b200_workload, baseline(b200_workload, 4))


def test_a_restored_cache_makes_its_configurations_compile_nothing() -> None:
    """`specmatrix shard --cached-configs`: the configurations a restored JIT cache holds cost no compile; the rest do."""
    from matrix.core.expect import effective_versions, expectations
    from matrix.core.loader import load_matrix, load_runners
    from matrix.shard.cost import cached_configs, workload_for

    matrix = load_matrix()
    runner = load_runners()["1-gpu-h200"]
    exps = expectations(matrix, runner, effective_versions(matrix, {}))
    cold = workload_for(matrix, runner, exps)
    held = sorted(cold.setup)[:3]
    warm = workload_for(matrix, runner, exps, cached=cached_configs("\n".join(["# restored", *held]), "list"))
    assert all(cold.setup[c] > 0 for c in held if matrix.cost.backends.get(c.split("/")[0], matrix.cost.default).compile_seconds)
    assert {c: warm.setup[c] for c in held} == dict.fromkeys(held, 0.0)
    assert {c: s for c, s in warm.setup.items() if c not in held} == {c: s for c, s in cold.setup.items() if c not in held}
    manifest = cached_configs(f'{{"configs": ["{held[0]}"]}}', "manifest")
    assert manifest == frozenset(held[:1])
