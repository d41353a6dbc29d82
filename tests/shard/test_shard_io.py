"""Cost model from the matrix and reports, compact selectors, plan files and the GitHub matrix."""

from __future__ import annotations

import json
import random

import pytest

from matrix.core.errors import ReportError, UsageError
from matrix.core.model import Outcome
from matrix.core.report import CellStatus
from matrix.core.selectors import select
from matrix.shard import compact
from matrix.shard.compact import compact_selector
from matrix.shard.cost import config_key, measured_from, workload_for
from matrix.shard.output import INLINE_SELECT_LIMIT, gha_matrix, plan_document, read_plan, shard_selects, write_plan_dir
from matrix.shard.plan import plan_shards

from .conftest import make_report, run_cells


def test_only_cells_expected_to_run_are_planned(default_matrix, runners, b200_workload):
    assert [i.id for i in b200_workload.items] == run_cells(default_matrix, runners["4-gpu-b200"])
    assert len(b200_workload.items) < len(default_matrix.cells)


@pytest.mark.parametrize(
    ("cell_id", "runner", "expected"),
    [
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", "1-gpu-h200", "trtllm_mha/xqa/page_size=16,head_dim=128,gqa=4"),
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", "4-gpu-b200", "trtllm_mha/trtllm-gen/page_size=16"),
        ("draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", "1-gpu-h200", "fa3/fa3"),
    ],
    ids=["xqa", "trtllm-gen", "fa3"],
)
def test_configuration_is_backend_impl_and_config_axes(default_matrix, runners, cell_id, runner, expected):
    from matrix.core.expect import resolve_impl

    cell = default_matrix.cell(cell_id)
    key = config_key(default_matrix, cell, resolve_impl(default_matrix, str(cell.backend), runners[runner].sm))
    assert key.startswith(expected)


def test_cells_sharing_a_configuration_differ_only_outside_its_axes(b200_workload, default_matrix):
    groups: dict[str, list[str]] = {}
    for item in b200_workload.items:
        groups.setdefault(item.config, []).append(item.id)
    topk_variants = [ids for ids in groups.values() if len({default_matrix.cell(i).topk for i in ids}) > 1]
    assert topk_variants, "topk is not a configuration axis: cells differing only in topk share a compiled kernel"


def test_measured_durations_replace_the_cost_table(default_matrix, runners):
    runner = runners["1-gpu-h200"]
    ids = run_cells(default_matrix, runner)
    xqa = next(i for i in ids if "trtllm_mha" in i)
    report = make_report(
        default_matrix,
        runner,
        {ids[0]: CellStatus.PASSED, xqa: CellStatus.PASSED, ids[2]: CellStatus.SKIPPED_UNEXPECTED},
        durations={ids[0]: 3.0, xqa: 11.0, ids[2]: 99.0},
        compile_seconds={xqa: 9.0},
    )
    measured = measured_from([report, report])
    assert measured.cell_seconds == {ids[0]: 3.0, xqa: 2.0}  # compile split off; a skip measures nothing
    from matrix.core.expect import effective_versions, expectations

    workload = workload_for(
        default_matrix, runner, expectations(default_matrix, runner, effective_versions(default_matrix, {})), measured
    )
    assert workload.item(ids[0]).seconds == 3.0
    assert workload.setup_of(workload.item(xqa).config) == 9.0
    cost = default_matrix.cost.backends[str(default_matrix.cell(ids[3]).backend)]
    assert workload.item(ids[3]).seconds == cost.cell_seconds


def test_compact_selector_matches_exactly_its_cells(default_matrix):
    ids = [c.id for c in default_matrix.cells]
    rng = random.Random(3)
    for size in (1, 5, 40, 120, len(ids)):
        chosen = set(rng.sample(ids, size))
        text = compact_selector(default_matrix, chosen)
        assert {c.id for c in select(default_matrix.cells, [text])} == chosen
    assert len(compact_selector(default_matrix, ids)) < len(" ".join(ids)) / 5


def test_compact_selector_check_catches_a_token_dropped(default_matrix, monkeypatch):
    ids = {c.id for c in default_matrix.cells if "dt" in c.id}
    original = compact._render_set
    monkeypatch.setattr(compact, "_render_set", lambda values: original(frozenset(sorted(values)[:1])))
    text = compact_selector(default_matrix, ids)
    assert {c.id for c in select(default_matrix.cells, [text])} != ids


def test_compact_selector_refuses_unknown_ids(default_matrix):
    with pytest.raises(ValueError, match="not matrix cells"):
        compact_selector(default_matrix, ["draft-nope"])


def test_gha_matrix_names_runner_labels_workers_and_selector(default_matrix, runners, b200_workload, tmp_path):
    runner = runners["4-gpu-b200"]
    plan = plan_shards(b200_workload, 4)
    selects = shard_selects(default_matrix, plan, None)
    doc = gha_matrix(runner, plan, selects)
    assert len(doc["include"]) == 4
    planned = set()
    for entry in doc["include"]:
        assert entry["runs-on"] == list(runner.labels) and entry["workers"] == 4
        cells = {c.id for c in select(default_matrix.cells, [entry["select"]])}
        assert len(cells) == entry["cells"] and not cells & planned
        planned |= cells
    assert planned == {i.id for i in b200_workload.items}


def test_long_selectors_go_through_the_plan_dir(default_matrix, runners, b200_workload, tmp_path, monkeypatch):
    plan = plan_shards(b200_workload, 1)
    monkeypatch.setattr("matrix.shard.output.INLINE_SELECT_LIMIT", 100)
    assert INLINE_SELECT_LIMIT > 100
    with pytest.raises(UsageError, match="--plan-dir"):
        shard_selects(default_matrix, plan, None)
    selects = shard_selects(default_matrix, plan, str(tmp_path / "plan"))
    assert selects == {1: f"@{tmp_path / 'plan'}/shard-1.txt"}
    doc = plan_document(default_matrix, runners["4-gpu-b200"], plan, selects, "cost table")
    write_plan_dir(tmp_path / "plan", doc)
    lines = (tmp_path / "plan" / "shard-1.txt").read_text().split()
    assert lines == list(plan.shards[0].cells)
    planned = read_plan(tmp_path / "plan")
    assert planned.runner == "4-gpu-b200" and planned.shards[1] == plan.shards[0].cells


@pytest.mark.parametrize(
    "text",
    ["{not json", json.dumps({"schema": "specmatrix.report/1"}), json.dumps({"schema": "specmatrix.shard-plan/1", "shards": 3})],
    ids=["corrupt", "wrong-schema", "malformed"],
)
def test_corrupt_plan_file_is_a_report_error(tmp_path, text):
    path = tmp_path / "plan.json"
    path.write_text(text)
    with pytest.raises(ReportError, match=str(path)):
        read_plan(path)


def test_expected_skips_never_reach_a_shard(default_matrix, runners, b200_workload):
    from matrix.core.expect import effective_versions, expectations

    exps = expectations(default_matrix, runners["4-gpu-b200"], effective_versions(default_matrix, {}))
    planned = {c for s in plan_shards(b200_workload, 3).shards for c in s.cells}
    assert all(exps[c].outcome is Outcome.RUN for c in planned)
