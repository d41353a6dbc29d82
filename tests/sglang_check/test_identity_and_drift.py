"""Pure checks of backend identity and the stand-in drift checks, over fresh stand-in objects (no sglang needed)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from matrix.core.expect import expected
from matrix.core.loader import load_matrix, load_runners
from matrix.sglang_check.agreement import SglangVerdict, compare_outcome, server_configs
from matrix.sglang_check.drift import Shape, StandIn, accepted_keywords, attribute_reads, call_arguments, shape_drift
from matrix.sglang_check.identity import (
    BackendIdentity,
    BackendMismatch,
    check_identity,
    expected_identity,
    identity_of,
    identity_problems,
)


class TreeBackend:
    def __init__(self, *, skip_prefill: bool = False, is_xqa_impl: bool | None = None) -> None:
        self.skip_prefill = skip_prefill
        if is_xqa_impl is not None:
            self.is_xqa_impl = is_xqa_impl


class OtherBackend(TreeBackend):
    pass


def test_identity_reads_class_family_and_prefill_mode() -> None:
    identity = identity_of(TreeBackend(skip_prefill=True, is_xqa_impl=True))
    assert identity == BackendIdentity(cls=f"{__name__}.TreeBackend", kernel_family="xqa", skip_prefill=True)
    assert identity_of(TreeBackend(is_xqa_impl=False)).kernel_family == "trtllm-gen"
    assert identity_of(object()).kernel_family is None and identity_of(object()).skip_prefill is None


@pytest.mark.parametrize(
    ("built", "problem"),
    [
        (OtherBackend(skip_prefill=True, is_xqa_impl=True), "class test_identity_and_drift.OtherBackend"),
        (TreeBackend(skip_prefill=False, is_xqa_impl=True), "skip_prefill False, expected True"),
        (TreeBackend(skip_prefill=True, is_xqa_impl=False), "kernel family trtllm-gen, expected xqa"),
        (TreeBackend(skip_prefill=True), "kernel family not visible, expected xqa"),
    ],
    ids=["other-class", "prefill", "family", "family-invisible"],
)
def test_another_backend_is_a_mismatch(built: Any, problem: str) -> None:
    want = expected_identity(registry_backend=TreeBackend(), skip_prefill=True, impl="xqa")
    with pytest.raises(BackendMismatch, match=problem.replace("test_identity_and_drift", r"[\w.]*test_identity_and_drift")):
        check_identity(want, identity_of(built), what="cell")


def test_the_same_backend_matches_and_unclaimed_fields_are_not_checked() -> None:
    want = expected_identity(registry_backend=TreeBackend(), skip_prefill=True, impl="xqa")
    assert identity_problems(want, identity_of(TreeBackend(skip_prefill=True, is_xqa_impl=True))) == []
    loose = expected_identity(registry_backend=TreeBackend(), skip_prefill=None, impl="triton")  # not a kernel family
    assert identity_problems(loose, identity_of(TreeBackend(skip_prefill=False))) == []


def test_sglang_building_another_draft_backend_is_a_disagreement() -> None:
    matrix, runners = load_matrix(), load_runners()
    cell = matrix.cell("draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph")
    (config,) = server_configs(cell)
    expectation = expected(matrix, cell, runners["1-gpu-h200"], matrix.pins)
    stage = "FrozenKVMTPDraftWorker._init_draft_attn_backend"
    same = SglangVerdict(accepted=True, stage=stage, backend="trtllm_mha")
    other = SglangVerdict(accepted=True, stage=stage, backend="triton")
    assert compare_outcome(config, expectation, same) is None
    disagreement = compare_outcome(config, expectation, other)
    assert disagreement is not None
    assert "expects sglang to build trtllm_mha; sglang built triton" in disagreement.message


# --- drift: fresh upstream-shaped functions, then each planted change ---------


class Worker:
    def choose(self) -> Any:
        if self.topk == 1:
            return self.runner.backend
        self.cache = self.build()
        return self.cache


def choose_reads_more(self: Any) -> Any:
    return self.build(self.topk, self.server_args)


class Runner:
    def __init__(self, worker: Any) -> None:
        self.max_bs, self.topk = 8, worker.topk
        worker.backend.init_cuda_graph_state(self.max_bs * self.topk, self.max_bs)


class RunnerUnexpanded:
    def __init__(self, worker: Any) -> None:
        self.max_bs, self.topk = 8, worker.topk
        worker.backend.init_cuda_graph_state(self.max_bs, self.max_bs)


def pool(size: int, page_size: int, *, device: str = "cpu") -> None: ...


def pool_renamed(size: int, page: int, *, device: str = "cpu") -> None: ...


def pool_grown(size: int, page_size: int, *, device: str = "cpu", layout: str = "NHD") -> None: ...


READS = StandIn(name="ours", upstream="m:Worker.choose", shape=Shape.READS, expected=("build", "runner", "topk"), why="-")
CALL = StandIn(
    name="ours",
    upstream="m:Runner.__init__",
    shape=Shape.CALL,
    call="init_cuda_graph_state",
    expected=("self.max_bs * self.topk", "self.max_bs"),
    why="-",
)
PARAMS = StandIn(name="ours", upstream="m:pool", shape=Shape.PARAMETERS, expected=("size", "page_size", "device"), why="-")


def test_reads_are_the_attributes_read_less_those_assigned() -> None:
    assert attribute_reads(Worker.choose) == {"topk", "runner", "build"}
    assert attribute_reads(Runner.__init__, "worker") == {"topk", "backend"}
    assert accepted_keywords(pool) == {"size", "page_size", "device"}
    assert call_arguments(Runner.__init__, "init_cuda_graph_state") == [("self.max_bs * self.topk", "self.max_bs")]


@pytest.mark.parametrize(
    ("stand_in", "upstream"),
    [(READS, Worker.choose), (CALL, Runner.__init__), (PARAMS, pool), (replace(PARAMS, exact=True), pool)],
    ids=["reads", "call", "parameters", "exact-parameters"],
)
def test_no_drift_against_the_shape_it_was_written_for(stand_in: StandIn, upstream: Any) -> None:
    assert shape_drift(stand_in, upstream) == []


@pytest.mark.parametrize(
    ("stand_in", "planted", "problem"),
    [
        (READS, choose_reads_more, "which now reads .server_args: the stand-in does not carry it"),
        (replace(READS, expected=("build", "runner", "topk", "gone")), Worker.choose, "no longer reads .gone"),
        (CALL, RunnerUnexpanded.__init__, "init_cuda_graph_state call is now (self.max_bs, self.max_bs)"),
        (CALL, choose_reads_more, "no such call"),
        (PARAMS, pool_renamed, "which no longer accepts 'page_size'"),
        (replace(PARAMS, exact=True), pool_grown, "which now accepts 'layout': the replacement does not"),
    ],
    ids=["reads-more", "reads-less", "call-args", "call-gone", "param-renamed", "replacement-param-added"],
)
def test_a_planted_upstream_change_is_drift(stand_in: StandIn, planted: Any, problem: str) -> None:
    problems = shape_drift(stand_in, planted)
    assert any(problem in p for p in problems), problems
    assert all(p.startswith("ours stands for m:") for p in problems)


def test_a_stand_in_namespace_is_what_the_reads_name() -> None:
    """The habit the GPU stand-ins follow: carry exactly the attributes the upstream function reads."""
    worker = SimpleNamespace(topk=2, runner=SimpleNamespace(backend="b"), build=lambda: "tree")
    assert attribute_reads(Worker.choose) <= set(vars(worker))
    assert Worker.choose(worker) == "tree"
