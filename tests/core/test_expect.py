"""Each support rule of the default matrix, judged on the runner profiles it concerns."""

from __future__ import annotations

import pytest

from matrix.core.expect import effective_versions, expected, resolve_impl
from matrix.core.model import Matrix, Outcome, RunnerProfile

PINS = {"flashinfer": "0.7.2", "sglang": "0.5.23"}


def judge(matrix: Matrix, runners: dict[str, RunnerProfile], cell_id: str, runner: str, versions: dict[str, str] | None = None):
    return expected(matrix, matrix.cell(cell_id), runners[runner], PINS if versions is None else versions)


@pytest.mark.parametrize(
    ("cell_id", "runner", "outcome", "blocking"),
    [
        # the bug class: trtllm_mha with topk > 1 on a paged cache must run on every trtllm_mha arch
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", "4-gpu-b200", Outcome.RUN, None),
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", "1-gpu-h200", Outcome.RUN, None),
        ("draft-trtllm_mha-topk8-page64-hd256-gqa4-bf16-graph", "1-gpu-5090", Outcome.RUN, None),
        ("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", "4-gpu-gb300", Outcome.RUN, None),
        ("draft-triton-topk4-page1-hd128-gqa4-bf16-graph", "1-gpu-h200", Outcome.RUN, None),
        # no GPU: everything skips, for the GPU reason first
        ("draft-triton-topk1-page1-hd128-gqa4-bf16-graph", "cpu", Outcome.SKIP, "needs-gpu"),
        # page size
        ("draft-trtllm_mha-topk1-page1-hd128-gqa4-bf16-graph", "4-gpu-b200", Outcome.SKIP, "trtllm-mha-page-size"),
        # fa3 is Hopper-only
        ("draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", "1-gpu-h200", Outcome.RUN, None),
        ("draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", "4-gpu-b200", Outcome.SKIP, "fa3-hopper-only"),
        ("draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", "1-gpu-5090", Outcome.SKIP, "fa3-hopper-only"),
        # Frozen-KV MTP builds a dedicated topk > 1 draft backend only for triton / trtllm_mha
        ("draft-flashinfer-topk2-page16-hd128-gqa4-bf16-graph", "1-gpu-h200", Outcome.SKIP, "draft-tree-backends"),
        ("draft-flashinfer-topk1-page16-hd128-gqa4-bf16-graph", "1-gpu-h200", Outcome.RUN, None),
        # target trtllm_mha needs topk == 1
        ("target-trtllm_mha-topk2-page64-hd128-dt4-gqa4-bf16-graph", "4-gpu-b200", Outcome.SKIP, "target-trtllm-mha-topk1"),
        ("target-trtllm_mha-topk1-page64-hd128-dt4-gqa4-bf16-graph", "4-gpu-b200", Outcome.RUN, None),
        # XQA: head_dim <= 256 for q_len > 1; 512 only at q_len 1
        ("target-trtllm_mha-topk1-page64-hd512-dt4-gqa4-bf16-graph", "1-gpu-h200", Outcome.SKIP, "xqa-head-dim-multi-token"),
        ("target-trtllm_mha-topk1-page64-hd512-gqa4-bf16-graph", "1-gpu-h200", Outcome.RUN, None),
        ("target-trtllm_mha-topk1-page64-hd512-dt4-gqa4-bf16-graph", "4-gpu-b200", Outcome.RUN, None),
        # trtllm-gen headDim 512 covers at most 8 draft tokens
        ("target-trtllm_mha-topk1-page64-hd512-dt8-gqa4-bf16-graph", "4-gpu-b200", Outcome.RUN, None),
        (
            "target-trtllm_mha-topk1-page64-hd512-dt16-gqa4-bf16-graph",
            "4-gpu-b200",
            Outcome.SKIP,
            "trtllm-gen-hd512-sixteen-tokens",
        ),
        # topk > 1 with page > 1 on the target side: flashinfer / fa3 / triton only
        ("target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph", "1-gpu-h200", Outcome.RUN, None),
    ],
)
def test_default_rules(default_matrix, runners, cell_id, runner, outcome, blocking):
    exp = judge(default_matrix, runners, cell_id, runner)
    assert exp.outcome is outcome, exp.reason
    assert (exp.blocking[0].rule.id if exp.blocking else None) == blocking


@pytest.mark.parametrize(
    ("flashinfer", "outcome"),
    [("0.6.13", Outcome.SKIP), ("0.6.14", Outcome.RUN), ("0.7.2", Outcome.RUN)],
)
def test_trtllm_gen_hd512_needs_flashinfer_0_6_14(default_matrix, runners, flashinfer, outcome):
    exp = judge(
        default_matrix,
        runners,
        "target-trtllm_mha-topk1-page64-hd512-dt5-gqa4-bf16-graph",
        "4-gpu-b200",
        {"flashinfer": flashinfer},
    )
    assert exp.outcome is outcome
    if outcome is Outcome.SKIP:
        assert exp.blocking[0].rule.id == "trtllm-gen-hd512-draft-tokens"
        assert f"have {flashinfer}" in exp.blocking[0].detail


@pytest.mark.parametrize(("flashinfer", "outcome"), [("0.6.17", Outcome.SKIP), ("0.6.18", Outcome.RUN)])
def test_xqa_hd512_needs_flashinfer_0_6_18(default_matrix, runners, flashinfer, outcome):
    exp = judge(
        default_matrix, runners, "target-trtllm_mha-topk1-page64-hd512-gqa4-bf16-graph", "1-gpu-h200", {"flashinfer": flashinfer}
    )
    assert exp.outcome is outcome


def test_version_comparison_is_semantic_not_lexical(default_matrix, runners):
    # "0.6.9" < "0.6.14" numerically but not as strings
    exp = judge(
        default_matrix, runners, "target-trtllm_mha-topk1-page64-hd512-dt5-gqa4-bf16-graph", "4-gpu-b200", {"flashinfer": "0.6.9"}
    )
    assert exp.outcome is Outcome.SKIP


def test_unknown_version_skips_with_reason(default_matrix, runners):
    exp = judge(default_matrix, runners, "target-trtllm_mha-topk1-page64-hd512-dt5-gqa4-bf16-graph", "4-gpu-b200", {})
    assert exp.outcome is Outcome.SKIP
    assert "version unknown" in exp.reason


def test_missing_library_is_judged_at_its_pin(default_matrix):
    # a runner that lost its flashinfer install must not turn RUN cells into expected skips
    assert effective_versions(default_matrix, {"flashinfer": None, "torch": "2.11"}) == {**default_matrix.pins, "torch": "2.11"}
    assert effective_versions(default_matrix, {"flashinfer": "0.6.1"})["flashinfer"] == "0.6.1"


@pytest.mark.parametrize(
    ("sm", "impl"),
    [(90, "xqa"), (120, "xqa"), (100, "trtllm-gen"), (103, "trtllm-gen"), (80, None), (None, None)],
)
def test_trtllm_mha_implementation_by_arch(default_matrix, sm, impl):
    assert resolve_impl(default_matrix, "trtllm_mha", sm) == impl


def test_backend_without_impl_table_is_its_own_impl(default_matrix):
    assert resolve_impl(default_matrix, "triton", 90) == "triton"


def test_trail_lists_every_applicable_rule(default_matrix, runners):
    exp = judge(default_matrix, runners, "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph", "4-gpu-b200")
    ids = [v.rule.id for v in exp.trail]
    assert ids == ["needs-gpu", "trtllm-mha-arch", "trtllm-mha-page-size", "draft-tree-backends", "draft-tree-trtllm-mha-sglang"]
    assert all(v.satisfied for v in exp.trail)
    assert exp.reason.startswith("must run:")


def test_skip_reason_names_rule_and_fact(default_matrix, runners):
    exp = judge(default_matrix, runners, "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", "4-gpu-b200")
    assert exp.reason == "[fa3-hopper-only] fa3 kernels are built for Hopper (sm90) only (needs sm in [90]; sm is 100)"


def test_default_matrix_size_is_a_few_hundred(default_matrix):
    assert 150 <= len(default_matrix.cells) <= 500
    assert len({c.id for c in default_matrix.cells}) == len(default_matrix.cells)


def test_every_cell_runs_somewhere_or_is_a_config_reject(default_matrix, runners):
    """A cell no profile can run is dead weight unless sglang itself rejects it."""
    for cell in default_matrix.cells:
        exps = [expected(default_matrix, cell, r, PINS) for r in runners.values()]
        if any(e.outcome is Outcome.RUN for e in exps):
            continue
        kinds = {v.rule.kind.value for e in exps for v in e.blocking}
        assert "config" in kinds or "kernel" in kinds, cell.id
