"""sglang's own speculative validation against the matrix's config rules, for every cell on capable runners."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

from matrix.core.expect import expected
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Matrix, RunnerProfile
from matrix.sglang_check import edge
from matrix.sglang_check.agreement import ServerConfig, SglangVerdict, SpecPath, compare_outcome, rejecting_rules, server_configs
from matrix.sglang_check.gaps import known_gap

# Runners with every backend's hardware, so only config rules can tell the outcomes apart.
CAPABLE_RUNNERS = ("4-gpu-b200", "1-gpu-h200")


@functools.cache
def _verdict(
    path: SpecPath, role: str, backend: str, target_backend: str, topk: int, page_size: int, num_draft_tokens: int
) -> SglangVerdict:
    config = ServerConfig(
        cell_id="-",
        path=path,
        role=role,
        backend=backend,
        topk=topk,
        page_size=page_size,
        num_draft_tokens=num_draft_tokens,
        target_backend=target_backend,
    )
    return edge.speculative_verdict(config)


def verdict_for(config: ServerConfig) -> SglangVerdict:
    """sglang's verdict; cells that differ only in axes sglang's validation never reads share one call."""
    return _verdict(
        config.path, config.role, config.backend, config.target_backend, config.topk, config.page_size, config.num_draft_tokens
    )


def _cases() -> list[Any]:
    matrix = load_matrix()
    runners = load_runners()
    # Judged at the pins here (collection time); the test itself re-judges at the installed versions.
    cases = []
    for runner in CAPABLE_RUNNERS:
        for cell in matrix.cells:
            for config in server_configs(cell):
                gap = known_gap(config.path, rejecting_rules(expected(matrix, cell, runners[runner], matrix.pins)))
                marks = (
                    [pytest.mark.xfail(strict=True, reason=f"sglang upstream gap [{gap.rule_id}]: {gap.note} ({gap.link})")]
                    if gap
                    else []
                )
                cases.append(pytest.param(runner, config, marks=marks, id=f"{runner}:{config.test_id}"))
    return cases


@pytest.mark.parametrize(("runner", "config"), _cases())
def test_sglang_agrees_with_the_config_rules(
    matrix: Matrix, runners: dict[str, RunnerProfile], versions: dict[str, str], runner: str, config: ServerConfig
) -> None:
    expectation = expected(matrix, matrix.cell(config.cell_id), runners[runner], versions)
    disagreement = compare_outcome(config, expectation, verdict_for(config))
    assert disagreement is None, disagreement.message


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            ServerConfig(
                cell_id="-", path=SpecPath.EAGLE, role="target", backend="trtllm_mha", topk=2, page_size=64, num_draft_tokens=4
            ),
            "trtllm_mha backend only supports topk = 1 for speculative decoding.",
        ),
        (
            ServerConfig(
                cell_id="-", path=SpecPath.EAGLE, role="target", backend="flashmla", topk=2, page_size=64, num_draft_tokens=4
            ),
            "speculative_eagle_topk > 1 with page_size > 1 is only supported on ('flashinfer', 'fa3', 'triton')",
        ),
        (
            ServerConfig(
                cell_id="-", path=SpecPath.FROZEN_KV_MTP, role="draft", backend="fa3", topk=2, page_size=16, num_draft_tokens=1
            ),
            "Frozen-KV MTP topk > 1 currently supports triton and trtllm_mha attention backends, got fa3.",
        ),
    ],
    ids=["eagle-trtllm-topk", "eagle-page-tree", "frozen-draft-backend"],
)
def test_sglang_messages_are_the_ones_the_rules_cite(config: ServerConfig, message: str) -> None:
    verdict = verdict_for(config)
    assert not verdict.accepted
    assert verdict.message.startswith(message)


def test_frozen_kv_mtp_bypasses_the_target_checks() -> None:
    config = ServerConfig(
        cell_id="-", path=SpecPath.FROZEN_KV_MTP, role="target", backend="trtllm_mha", topk=4, page_size=64, num_draft_tokens=4
    )
    assert verdict_for(config).accepted


def _planted_wrong_rules() -> list[Any]:
    def allow_fa3_draft_trees(d: dict[str, Any]) -> None:
        next(r for r in d["rule"] if r["id"] == "draft-tree-backends")["require"]["backend"]["in"].append("fa3")

    def drop_target_topk_rule(d: dict[str, Any]) -> None:
        d["rule"] = [r for r in d["rule"] if r["id"] != "target-trtllm-mha-topk1"]
        next(r for r in d["rule"] if r["id"] == "target-tree-paged-backends")["require"]["backend"]["in"].append("trtllm_mha")

    def reject_triton_trees(d: dict[str, Any]) -> None:
        next(r for r in d["rule"] if r["id"] == "target-tree-paged-backends")["require"]["backend"]["in"].remove("triton")

    return [
        pytest.param(
            allow_fa3_draft_trees, "draft-fa3-topk2-page16-hd128-gqa4-bf16-graph", None, "rejected it in", id="allow-fa3-draft"
        ),
        pytest.param(
            drop_target_topk_rule, "target-trtllm_mha-topk2-page64-hd128-gqa4-bf16-graph", None, "rejected it in", id="drop-topk1"
        ),
        pytest.param(
            reject_triton_trees,
            "target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph",
            "target-tree-paged-backends",
            "accepted it",
            id="reject-triton",
        ),
    ]


@pytest.mark.parametrize(("plant", "cell_id", "rule_id", "said"), _planted_wrong_rules())
def test_a_wrong_rule_is_reported(
    matrix_with: Callable[[Callable[[dict[str, Any]], None]], Matrix],
    runners: dict[str, RunnerProfile],
    versions: dict[str, str],
    plant: Callable[[dict[str, Any]], None],
    cell_id: str,
    rule_id: str | None,
    said: str,
) -> None:
    planted = matrix_with(plant)
    cell = planted.cell(cell_id)
    config = next(c for c in server_configs(cell) if c.path is SpecPath.EAGLE or c.role == "draft")
    disagreement = compare_outcome(config, expected(planted, cell, runners["4-gpu-b200"], versions), verdict_for(config))
    assert disagreement is not None
    assert said in disagreement.message
    if rule_id:
        assert f"[{rule_id}]" in disagreement.message


def test_an_older_sglang_pin_is_reported(matrix: Matrix, runners: dict[str, RunnerProfile]) -> None:
    """Judged as if sglang 0.5.16 were installed, the draft trtllm_mha tree is expected to be refused; 0.5.23 accepts it."""
    cell = matrix.cell("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph")
    (config,) = server_configs(cell)
    disagreement = compare_outcome(
        config, expected(matrix, cell, runners["4-gpu-b200"], {"sglang": "0.5.16"}), verdict_for(config)
    )
    assert disagreement is not None
    assert "[draft-tree-trtllm-mha-sglang]" in disagreement.message
