"""Pure checks of matrix.sglang_check and the [[page_promotion]] table (no sglang needed)."""

from __future__ import annotations

import copy
import importlib
import sys
from collections.abc import Callable
from typing import Any

import pytest

from matrix.core.errors import ConfigError
from matrix.core.expect import expected
from matrix.core.loader import default_matrix_text, load_matrix, load_runners, parse_matrix, read_toml
from matrix.core.model import Matrix
from matrix.sglang_check.agreement import SglangVerdict, SpecPath, compare_outcome, rejecting_rules, server_configs
from matrix.sglang_check.buffers import row_shortfalls
from matrix.sglang_check.gaps import KNOWN_GAPS, known_gap
from matrix.sglang_check.pages import PageConfig, compare_page, expected_page_size, page_configs
from matrix.sglang_check.resolution import DRAFT_BACKEND_FIELDS, resolution_cases, resolve_draft_backend

NEW = {"sglang": "0.5.23"}
OLD = {"sglang": "0.5.16"}


def matrix_with(change: Callable[[dict[str, Any]], None]) -> Matrix:
    data = copy.deepcopy(read_toml(default_matrix_text(), "matrix.toml"))
    change(data)
    return parse_matrix(data, "planted.toml")


@pytest.fixture(scope="module")
def matrix() -> Matrix:
    return load_matrix()


# --- the [[page_promotion]] table --------------------------------------------


def test_default_table_is_parsed_in_order(matrix: Matrix) -> None:
    assert [p.id for p in matrix.page_promotions] == [
        "trtllm-mha-target-page",
        "trtllm-mha-target-page-128",
        "trtllm-mha-draft-page",
    ]
    draft = matrix.page_promotions[2]
    assert (draft.role, draft.backend, draft.promote_to) == ("draft", "trtllm_mha", 64)
    assert [(v.library, v.specifier) for v in draft.versions] == [("sglang", ">=0.5.17")]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.update(backend="cutlass"), "unknown backend 'cutlass'"),
        (lambda p: p.update(role="verifier"), "unknown role 'verifier'"),
        (lambda p: p.update(promote_to=8), "promote_to 8 is not one of the accepted page sizes"),
        (lambda p: p.update(accepted=[16, "x"]), "must be positive integers"),
        (lambda p: p.update(versions={"sglang": "not a spec"}), "invalid version specifier"),
        (lambda p: p.update(colour="red"), "unknown key 'colour'"),
        (lambda p: p.pop("source"), "source: expected a non-empty string"),
    ],
)
def test_bad_page_promotion_is_one_clear_error(change: Callable[[dict[str, Any]], None], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        matrix_with(lambda d: change(d["page_promotion"][0]))
    assert "planted.toml: page_promotion #1" in str(info.value)


def test_duplicate_page_promotion_id_is_an_error() -> None:
    with pytest.raises(ConfigError, match="page_promotion id 'trtllm-mha-target-page' used twice"):
        matrix_with(lambda d: d["page_promotion"].append(dict(d["page_promotion"][0])))


def test_a_matrix_without_the_table_has_no_promotions() -> None:
    assert matrix_with(lambda d: d.pop("page_promotion")).page_promotions == ()


@pytest.mark.parametrize(
    ("target", "draft", "page", "versions", "want"),
    [
        ("trtllm_mha", None, 1, NEW, 64),
        ("trtllm_mha", None, 16, NEW, 16),
        ("trtllm_mha", None, 64, NEW, 64),
        ("triton", "trtllm_mha", 1, NEW, 64),
        ("triton", "trtllm_mha", 1, OLD, 1),
        ("trtllm_mha", None, 1, OLD, 64),
        ("triton", "triton", 1, NEW, 1),
        ("flashinfer", None, 16, NEW, 16),
    ],
)
def test_expected_page_size(
    matrix: Matrix, target: str, draft: str | None, page: int, versions: dict[str, str], want: int
) -> None:
    config = PageConfig(target_backend=target, draft_backend=draft, page_size=page)
    assert expected_page_size(matrix, config, versions).page_size == want


def test_page_128_depends_on_the_release(matrix: Matrix) -> None:
    config = PageConfig(target_backend="trtllm_mha", draft_backend=None, page_size=128)
    assert expected_page_size(matrix, config, NEW).page_size == 128
    assert expected_page_size(matrix, config, OLD).page_size == 64


def test_page_configs_pair_every_draft_with_every_target_backend(matrix: Matrix) -> None:
    ids = {c.id for c in page_configs(matrix)}
    assert "target-triton-draft-trtllm_mha-page1" in ids
    assert "target-trtllm_mha-draft-fa3-page16" in ids
    assert "target-trtllm_mha-page64" in ids
    drafts = {(c.draft_backend, c.page_size) for c in page_configs(matrix) if c.draft_backend}
    backends = matrix.axis("backend").values
    assert all(PageConfig(target_backend=str(t), draft_backend=d, page_size=p).id in ids for d, p in drafts for t in backends)


def test_page_mismatch_names_the_entries(matrix: Matrix) -> None:
    config = PageConfig(target_backend="triton", draft_backend="trtllm_mha", page_size=1)
    assert compare_page(matrix, config, NEW, 64, via="x") is None
    mismatch = compare_page(matrix, config, NEW, 1, via="server args")
    assert mismatch is not None
    assert mismatch.message == (
        "target-triton-draft-trtllm_mha-page1: the matrix expects page size 64 (trtllm-mha-draft-page); "
        "sglang's server args gives 1"
    )


# --- server-args agreement -----------------------------------------------------

ACCEPT = SglangVerdict(accepted=True, stage="hook")
REJECT = SglangVerdict(accepted=False, stage="hook", message="no")


@pytest.mark.parametrize(
    ("cell_id", "versions", "rule_ids"),
    [
        ("target-trtllm_mha-topk2-page64-hd128-gqa4-bf16-graph", NEW, ["target-trtllm-mha-topk1", "target-tree-paged-backends"]),
        ("target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph", NEW, []),
        ("draft-flashinfer-topk2-page16-hd128-gqa4-bf16-graph", NEW, ["draft-tree-backends"]),
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", NEW, []),
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", OLD, ["draft-tree-trtllm-mha-sglang"]),
        ("draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", NEW, []),
    ],
    ids=[
        "target-trtllm-tree",
        "target-triton-tree",
        "draft-flashinfer-tree",
        "draft-trtllm-tree",
        "draft-trtllm-tree-old",
        "draft-fa3",
    ],
)
def test_rejecting_rules_are_config_and_sglang_version_rules(
    matrix: Matrix, cell_id: str, versions: dict[str, str], rule_ids: list[str]
) -> None:
    exp = expected(matrix, matrix.cell(cell_id), load_runners()["4-gpu-b200"], versions)
    assert [r.id for r in rejecting_rules(exp)] == rule_ids


def test_hardware_skips_are_not_sglang_rejections(matrix: Matrix) -> None:
    exp = expected(matrix, matrix.cell("draft-fa3-topk1-page16-hd128-gqa4-bf16-graph"), load_runners()["cpu"], NEW)
    assert exp.blocking and rejecting_rules(exp) == ()


@pytest.mark.parametrize(
    ("cell_id", "verdict", "disagrees"),
    [
        ("target-trtllm_mha-topk2-page64-hd128-gqa4-bf16-graph", REJECT, False),
        ("target-trtllm_mha-topk2-page64-hd128-gqa4-bf16-graph", ACCEPT, True),
        ("target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph", ACCEPT, False),
        ("target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph", REJECT, True),
    ],
    ids=["trtllm-rejected", "trtllm-accepted", "triton-accepted", "triton-rejected"],
)
def test_compare_outcome(matrix: Matrix, cell_id: str, verdict: SglangVerdict, disagrees: bool) -> None:
    cell = matrix.cell(cell_id)
    config = server_configs(cell)[0]
    found = compare_outcome(config, expected(matrix, cell, load_runners()["4-gpu-b200"], NEW), verdict)
    assert (found is not None) == disagrees
    if found is not None:
        assert found.message.startswith(f"eagle-{cell_id}: the matrix expects sglang to ")


def test_server_configs_follow_the_role(matrix: Matrix) -> None:
    target = server_configs(matrix.cell("target-trtllm_mha-topk2-page64-hd256-dt5-gqa4-bf16-graph"))
    assert [(c.path, c.topk, c.page_size, c.num_draft_tokens) for c in target] == [
        (SpecPath.EAGLE, 2, 64, 5),
        (SpecPath.FROZEN_KV_MTP, 2, 64, 5),
    ]
    draft = server_configs(matrix.cell("draft-triton-topk8-page1-hd128-gqa4-bf16-eager"))
    assert [c.path for c in draft] == [SpecPath.FROZEN_KV_MTP]
    assert draft[0].server_fields()["speculative_algorithm"] == "FROZEN_KV_MTP"


def test_known_gap_needs_every_rejecting_rule_covered(matrix: Matrix) -> None:
    both = tuple(r for r in matrix.rules if r.id in ("target-trtllm-mha-topk1", "target-tree-paged-backends"))
    assert known_gap(SpecPath.FROZEN_KV_MTP, both) is KNOWN_GAPS[0]
    assert known_gap(SpecPath.EAGLE, both) is None
    other = tuple(r for r in matrix.rules if r.id == "draft-tree-backends")
    assert known_gap(SpecPath.FROZEN_KV_MTP, both + other) is None
    assert known_gap(SpecPath.FROZEN_KV_MTP, ()) is None


# --- draft backend resolution and buffers ----------------------------------------


@pytest.mark.parametrize(
    ("fields", "want"),
    [
        ({"speculative_draft_attention_backend": "a", "decode_attention_backend": "b", "attention_backend": "c"}, "a"),
        ({"speculative_draft_attention_backend": None, "decode_attention_backend": "b", "attention_backend": "c"}, "b"),
        ({"speculative_draft_attention_backend": "", "decode_attention_backend": None, "attention_backend": "c"}, "c"),
    ],
)
def test_resolution_order(fields: dict[str, str | None], want: str) -> None:
    assert resolve_draft_backend(fields) == want


def test_resolution_cases_cover_every_combination() -> None:
    cases = resolution_cases(["triton", "trtllm_mha"])
    assert len(cases) == 3 * 3 * 2
    assert all(tuple(dict(c.fields)) == DRAFT_BACKEND_FIELDS for c in cases)
    assert len({c.id for c in cases}) == len(cases)


def test_a_wrong_order_is_told_apart() -> None:
    wrong = ("decode_attention_backend", "speculative_draft_attention_backend", "attention_backend")
    disagree = [
        c
        for c in resolution_cases(["triton", "trtllm_mha"])
        if resolve_draft_backend(c.as_dict(), wrong) != resolve_draft_backend(c.as_dict())
    ]
    assert disagree


@pytest.mark.parametrize(
    ("rows", "sequences", "short"),
    [
        (32, 32, []),
        (40, 32, []),
        (8, 32, ["cache_seqlens", "page_table", "page_table_draft_decode", "cu_seqlens_q", "cu_seqlens_k"]),
    ],
)
def test_row_shortfalls(rows: int, sequences: int, short: list[str]) -> None:
    shapes = {
        "cache_seqlens": (rows,),
        "page_table": (rows, 8),
        "page_table_draft_decode": (rows, 8),
        "cu_seqlens_q": (rows + 1,),
        "cu_seqlens_k": (rows + 1,),
    }
    assert [s.buffer for s in row_shortfalls(shapes, sequences)] == short


def test_a_missing_buffer_is_a_shortfall() -> None:
    (only,) = row_shortfalls({"cache_seqlens": (4,), "page_table": (4, 1), "cu_seqlens_q": (5,), "cu_seqlens_k": (5,)}, 4)
    assert only.message == "page_table_draft_decode: missing (needs 4 rows)"


def test_edge_module_imports_without_sglang() -> None:
    before = set(sys.modules)
    importlib.import_module("matrix.sglang_check.edge")
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] == "sglang"}
