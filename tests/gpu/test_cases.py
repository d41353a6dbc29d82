"""Pure pieces of the GPU harness, on CPU: cases, tolerances, padding, config keys, bench tables."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from matrix.core.expect import effective_versions, expectations
from matrix.core.levels import LEVEL_CELLS, Level, uncovered
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Cell, Matrix, Outcome
from matrix.gpu.cases import (
    CAPTURE_BS,
    branch_requests,
    draft_case,
    expanded_graph_rows,
    padded_bucket,
    tolerance,
    unexpanded_graph_rows,
    varied_seq_lens,
)
from matrix.gpu.grouping import config_key
from matrix.gpu.sglang_verify import tree_parents, tree_visibility
from tools.gpu.benchtable import BenchRow, markdown_table, ratio_groups, ratios


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


@pytest.mark.parametrize("page", [1, 16, 64])
def test_lengths_straddle_page_boundaries(page: int) -> None:
    lens = varied_seq_lens(page, max(CAPTURE_BS))
    assert len(lens) == max(CAPTURE_BS)
    if page > 1:
        assert {page - 1, page, page + 1} <= set(lens)
    assert min(lens) == 1


@pytest.mark.parametrize(
    ("cell_id", "topk", "page", "hd", "q_heads", "kv_dtype"),
    [
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", 4, 16, 128, 8, "bf16"),
        ("draft-triton-topk8-page64-hd256-gqa4-bf16-eager", 8, 64, 256, 8, "bf16"),
        ("draft-trtllm_mha-topk4-page16-hd512-gqa8-fp8kv-graph", 4, 16, 512, 16, "fp8_e4m3"),
        ("draft-triton-topk1-page16-hd64-gqa1-fp16-graph", 1, 16, 64, 2, "fp16"),
    ],
    ids=["trtllm-tree", "triton-tree", "fp8kv-hd512", "fp16-hd64"],  # not cell ids: these are not matrix items
)
def test_case_follows_the_cell(matrix: Matrix, cell_id: str, topk: int, page: int, hd: int, q_heads: int, kv_dtype: str) -> None:
    case = draft_case(matrix.cell(cell_id))
    assert (case.topk, case.page_size, case.head_dim, case.num_q_heads, case.kv_dtype) == (topk, page, hd, q_heads, kv_dtype)
    assert case.context_len >= max(case.seq_lens) + page


def test_target_cells_are_chain_verify_cases(matrix: Matrix) -> None:
    case = draft_case(matrix.cell("target-trtllm_mha-topk1-page64-hd128-dt5-gqa4-bf16-graph"))
    assert (case.q_len, case.topk) == (5, 1)
    assert min(case.seq_lens) >= case.q_len  # every request holds its draft tokens
    assert draft_case(matrix.cell("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph")).q_len == 1


def test_tree_verify_cells_are_cases_for_the_sglang_level(matrix: Matrix) -> None:
    tree = draft_case(matrix.cell("target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph"))
    assert (tree.q_len, tree.topk) == (4, 4)


@pytest.mark.parametrize(
    ("tokens", "topk", "parents", "row3"),
    [(4, 1, (-1, 0, 1, 2), [True, True, True, True]), (4, 4, (-1, 0, 0, 0), [True, False, False, True])],
)
def test_draft_tree_mask(tokens: int, topk: int, parents: tuple[int, ...], row3: list[bool]) -> None:
    """Chain: causal. Tree: a token sees the root and itself, not its siblings."""
    assert tree_parents(tokens, topk) == parents
    visible = tree_visibility(parents)
    assert visible[3] == row3
    assert all(visible[i][i] and visible[i][0] for i in range(tokens))


def test_fp8_kv_has_its_own_tolerance() -> None:
    assert tolerance("fp8kv", 128).atol > 0.08 > tolerance("bf16", 128).atol
    assert tolerance("fp8kv", 512).atol < tolerance("fp8kv", 256).atol


@pytest.mark.parametrize(("bs", "topk", "expected"), [(1, 1, (0,)), (2, 3, (0, 0, 0, 1, 1, 1)), (0, 4, ())])
def test_branches_of_a_request_are_adjacent(bs: int, topk: int, expected: tuple[int, ...]) -> None:
    assert branch_requests(bs, topk) == expected


@pytest.mark.parametrize(("bs", "bucket"), [(1, 1), (3, 4), (5, 8), (8, 8)])
def test_replay_pads_to_the_next_captured_size(bs: int, bucket: int) -> None:
    assert padded_bucket(bs, CAPTURE_BS) == bucket


def test_replay_past_the_largest_capture_is_refused() -> None:
    with pytest.raises(ValueError, match="exceeds"):
        padded_bucket(9, CAPTURE_BS)


@pytest.mark.parametrize("topk", [1, 2, 4, 8])
def test_graph_rows_expanded_vs_the_old_bug(topk: int) -> None:
    assert expanded_graph_rows(8, topk) == 8 * topk
    assert (unexpanded_graph_rows(8, topk) < expanded_graph_rows(8, topk)) is (topk > 1)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("draft-trtllm_mha-topk1-page16-hd128-gqa4-bf16-graph", "draft-trtllm_mha-topk8-page16-hd128-gqa4-bf16-eager", True),
        ("draft-trtllm_mha-topk1-page16-hd128-gqa4-bf16-graph", "draft-trtllm_mha-topk1-page64-hd128-gqa4-bf16-graph", False),
        ("draft-trtllm_mha-topk1-page16-hd128-gqa4-bf16-graph", "draft-trtllm_mha-topk1-page16-hd256-gqa4-bf16-graph", False),
        ("draft-triton-topk1-page16-hd128-gqa4-bf16-graph", "draft-trtllm_mha-topk1-page16-hd128-gqa4-bf16-graph", False),
    ],
    ids=["topk-and-mode-share", "page-splits", "head-dim-splits", "backend-splits"],
)
def test_config_key_groups_cells_that_share_a_compile(matrix: Matrix, a: str, b: str, same: bool) -> None:
    key_a, key_b = (config_key(matrix, matrix.cell(c), 90) for c in (a, b))
    assert (key_a == key_b) is same
    assert key_a.startswith(str(matrix.cell(a).backend))


def test_config_key_names_the_impl_on_the_arch(matrix: Matrix) -> None:
    cell = matrix.cell("draft-trtllm_mha-topk1-page16-hd128-gqa4-bf16-graph")
    assert config_key(matrix, cell, 90).startswith("trtllm_mha/xqa/page_size=16,head_dim=128")
    assert config_key(matrix, cell, 100).startswith("trtllm_mha/trtllm-gen/")


def test_the_gpu_groups_and_the_shard_planner_spell_a_configuration_alike(matrix: Matrix) -> None:
    from matrix.core.expect import resolve_impl
    from matrix.shard.cost import config_key as shard_config_key

    for cell in matrix.cells[:40]:
        assert config_key(matrix, cell, 90) == shard_config_key(matrix, cell, resolve_impl(matrix, str(cell.backend), 90))


def _row(impl: str, topk: int, us: float) -> BenchRow:
    return BenchRow(
        cell="c", backend=impl, impl=impl, topk=topk, page_size=16, head_dim=128, gqa=4, dtype="bf16", rows=8, median_us=us
    )


def test_headline_ratio_pairs_the_same_shape() -> None:
    rows = [_row("sglang-trtllm_mha", 4, 30.0), _row("sglang-triton", 4, 40.0), _row("sglang-triton", 8, 50.0)]
    assert ratios(rows) == {"topk4-page16-hd128-gqa4-bf16": pytest.approx(0.75)}
    table = markdown_table(rows)
    assert "| 16 | 128 | 4 | bf16 | 4 | 40.0 | 30.0 | 0.75 |" in table
    assert "| 16 | 128 | 4 | bf16 | 8 | 50.0 | - | - |" in table
    assert ratio_groups(rows) == {"page16 hd128 gqa4 bf16": {4: pytest.approx(0.75)}}


def test_replot_rebuilds_table_and_pictures_from_saved_timings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    from tools.gpu.bench import main

    rows = [_row("sglang-trtllm_mha", 4, 30.0), _row("sglang-triton", 4, 40.0), _row("sglang-triton", 1, 20.0)]
    saved = tmp_path / "bench.json"
    saved.write_text(json.dumps({"rows": [dataclasses.asdict(r) for r in rows]}), encoding="utf-8")
    assert main(["--replot", str(saved), "--out", str(tmp_path / "out")]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bench-ratio.png", "bench.json", "bench.md", "bench.png"]
    doc = json.loads((tmp_path / "out" / "bench.json").read_text(encoding="utf-8"))
    assert doc["ratio_trtllm_mha_over_triton"] == {"topk4-page16-hd128-gqa4-bf16": 0.75}
    capsys.readouterr()
    bad_rows = [{"cell": "c"}, {**dataclasses.asdict(rows[0]), "median_us": "fast"}]
    for bad, message in zip(bad_rows, ("(KeyError: 'backend')", "field 'median_us' is 'fast', not float"), strict=True):
        saved.write_text(json.dumps({"rows": [bad]}), encoding="utf-8")
        assert main(["--replot", str(saved), "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a bench.json" in err and message in err
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{", "not a bench.json (Expecting property name enclosed in double quotes at line 1)", id="malformed"),
        pytest.param('{"rows": [' + "9" * 5000 + "]}", "bench.json not accepted: an integer of 5000 digits", id="huge-int"),
        pytest.param('{"rows": [{"median_us": NaN}]}', "bench.json not accepted: NaN is not a JSON number", id="nan"),
        pytest.param("[" * 100_000 + "]" * 100_000, "bench.json nested too deeply", id="deep"),
        pytest.param('["rows"]', "not a bench.json (TypeError: ", id="not-an-object"),
    ],
)
def test_replot_of_bad_json_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    """--replot reads through the core's bounded reader (matrix.core.jsonio), before anything is plotted."""
    from tools.gpu.bench import main

    saved = tmp_path / "bench.json"
    saved.write_text(text, encoding="utf-8")
    assert main(["--replot", str(saved), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"bench_kernels: error: {saved}: ") and message in err
    assert not (tmp_path / "out").exists()


GROUPING_CONFTEST = "from matrix.gpu.config_scheduler import pytest_xdist_make_scheduler  # noqa: F401\n"
GROUPING_TEST = """
import pytest

@pytest.mark.matrix(select="draft-trtllm_mha-*-page16-hd{128,256}-gqa4-bf16-* draft-triton-*-page64-hd128-gqa4-bf16-* !draft-*-tgt_*")
def test_cell(matrix_cell):
    pass
"""


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
def test_loadgroup_puts_each_kernel_configuration_on_one_worker(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Planted bug: plain --dist load spreads one configuration over both workers (each compiles it)."""
    import importlib.metadata
    import json

    monkeypatch.setenv("SPECMATRIX_DETECT", json.dumps({"gpus": 2, "capability": [9, 0], "name": "NVIDIA H200"}))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    pytester.makeconftest(GROUPING_CONFTEST)
    pytester.makepyfile(test_grouping=GROUPING_TEST)
    installed = any(e.value == "matrix.plugin" for e in importlib.metadata.entry_points(group="pytest11"))
    load = () if installed else ("-p", "matrix.plugin")
    matrix = load_matrix()
    spread = {}
    for dist in ("loadgroup", "load"):
        report = f"out/{dist}.json"
        quiet = ("-p", "no:cacheprovider", "-p", "no:benchmark")
        pytester.runpytest(*load, *quiet, "-n", "2", "--dist", dist, "--matrix-runner", "2-gpu-h200", "--matrix-report", report)
        doc = json.loads((pytester.path / report).read_text(encoding="utf-8"))
        workers: dict[str, set[str]] = {}
        for cell in doc["cells"]:
            workers.setdefault(config_key(matrix, matrix.cell(cell["cell"]), 90), set()).add(cell["worker"])
        spread[dist] = max(len(w) for w in workers.values())
        assert len(doc["cells"]) == 24
    assert spread == {"loadgroup": 1, "load": 2}


@pytest.mark.parametrize("runner", ["4-gpu-b200", "1-gpu-h200", "2-gpu-h200"])
def test_every_cell_that_must_run_has_a_gpu_test(matrix: Matrix, runner: str) -> None:
    """No RUN cell is left to the coverage gate as never-ran: some level's test is parametrized over it."""
    run = _run_cells(matrix, runner)
    assert run and uncovered(run) == []


def test_a_level_removed_from_the_table_leaves_cells_uncovered(matrix: Matrix, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(LEVEL_CELLS, Level.TARGET_SGLANG)
    missing = uncovered(_run_cells(matrix, "1-gpu-h200"))
    assert missing and all(c.startswith(("target-triton", "target-flashinfer", "target-fa3")) for c in missing)


def _run_cells(matrix: Matrix, runner: str) -> list[Cell]:
    profile = load_runners()[runner]
    exps = expectations(matrix, profile, effective_versions(matrix, {}))
    return [c for c in matrix.cells if exps[c.id].outcome is Outcome.RUN]


@pytest.mark.parametrize("runner", ["1-gpu-h200", "4-gpu-b200"])
def test_cells_json_shows_draft_cells_with_the_target_apart(runner: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`specmatrix cells --format json`: draft cells whose target_backend is another backend than their own, some of
    them expected to RUN (the GPU runs them with the two backends set apart)."""
    import json

    from matrix.cli.main import main

    assert main(["cells", "--format", "json", "--runner", runner]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    apart = [c for c in cells if c["values"]["target_backend"] not in ("same", c["values"]["backend"])]
    assert apart and all(c["values"]["role"] == "draft" for c in apart)
    assert any(c["outcome"] == "run" for c in apart)
    assert {c["values"]["target_backend"] for c in apart} == {"triton", "trtllm_mha", "flashinfer", "fa3"}
