"""Every stand-in of matrix/gpu/standins.py against the installed sglang, and each one red on a planted change of
its own upstream shape (the real function's source or signature, changed the way an upstream edit would)."""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace
from typing import Any

import pytest

from matrix.gpu.cases import CAPTURE_BS, padded_bucket
from matrix.gpu.standins import DECISION_WORKER, DRAFT_WORKER, STAND_INS
from matrix.sglang_check.drift import Shape, StandIn, drift, resolve, shape_drift, upstream_source

PLANTED = "planted_attribute"
SERVER_FIELDS = "matrix/gpu/sglang_runner.py:frozen_kv_mtp_fields"


def _with_fields(stand_in: StandIn) -> StandIn:
    """The server-arguments row names its fields through frozen_kv_mtp_fields itself."""
    if stand_in.name != SERVER_FIELDS:
        return stand_in
    from matrix.gpu.sglang_runner import frozen_kv_mtp_fields

    case = SimpleCase()
    return replace(stand_in, expected=tuple(frozen_kv_mtp_fields(case, 16)))  # type: ignore[arg-type]


class SimpleCase:
    """What frozen_kv_mtp_fields reads of a DraftCase."""

    backend = "triton"
    target = "triton"
    topk = 4
    capture_bs = CAPTURE_BS
    max_bs = max(CAPTURE_BS)


ROWS = [_with_fields(s) for s in STAND_INS]
IDS = [f"{s.shape.value}:{s.upstream.rpartition(':')[2]}:{k}" for k, s in enumerate(ROWS)]


@pytest.mark.parametrize("stand_in", ROWS, ids=IDS)
def test_the_stand_in_matches_the_installed_sglang(stand_in: StandIn) -> None:
    assert drift(stand_in) == []


def _plant(stand_in: StandIn, upstream: Any) -> Any:
    """The upstream function changed in its shape: one more attribute read, a changed call, a dropped keyword."""
    if stand_in.shape is Shape.PARAMETERS:
        sig = inspect.signature(upstream)
        kept = [p for p in sig.parameters.values() if p.name != stand_in.expected[0]]

        def planted(*args: Any, **kwargs: Any) -> None: ...

        planted.__signature__ = sig.replace(parameters=kept)  # type: ignore[attr-defined]
        return planted
    tree = ast.parse(upstream_source(upstream))
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    if stand_in.shape is Shape.READS:
        target = stand_in.parameter or node.args.args[0].arg
        node.body.insert(0, ast.parse(f"_ = {target}.{PLANTED}").body[0])
    else:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == stand_in.call:
                sub.args[0] = ast.parse("self.planted_rows").body[0].value  # type: ignore[attr-defined]
    return ast.unparse(tree)


@pytest.mark.parametrize("stand_in", ROWS, ids=IDS)
def test_a_planted_upstream_change_turns_its_drift_check_red(stand_in: StandIn) -> None:
    planted = _plant(stand_in, resolve(stand_in.upstream))
    problems = shape_drift(stand_in, planted)
    assert problems, "the planted change went unnoticed"
    assert all(p.startswith(f"{stand_in.name} stands for {stand_in.upstream}") for p in problems)


def _carried(stand_in: StandIn) -> set[str]:
    """What our stand-in object actually carries, read off it (not off the table)."""
    from matrix.gpu.sglang_draft import WORKER_ATTRIBUTES, WORKER_METHODS
    from matrix.gpu.sglang_runner import runner_settings
    from matrix.sglang_check import edge

    if stand_in.name == DRAFT_WORKER:
        return {*WORKER_ATTRIBUTES, *WORKER_METHODS}
    if stand_in.name == DECISION_WORKER:
        return set(vars(edge.decision_worker(2, "triton"))) | set(edge.DECISION_WORKER_ATTRIBUTES)
    if stand_in.name.endswith("trtllm_mha_without_init"):
        return set(vars(edge.trtllm_mha_without_init(num_draft_tokens=4, max_num_pages=8)))
    if stand_in.name.endswith("runner_settings"):
        return set(vars(runner_settings(SimpleCase())))  # type: ignore[arg-type]
    if stand_in.name.endswith("frozen_runner_sizing"):
        return set(vars(edge.sizing_worker(None, None, 64)))
    if "build_sglang_draft" in stand_in.name:
        from sglang.test.kits.attention_unittest.attention_methods.dense_attention import MockModelRunner

        return _assigned(MockModelRunner.__init__)
    raise AssertionError(f"no reader of what {stand_in.name} carries")


def _assigned(func: Any) -> set[str]:
    """Attributes a constructor assigns on self (the kit's MockModelRunner: sglang's code, read, not run)."""
    node = ast.parse(upstream_source(func)).body[0]
    return {
        sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute)
        and isinstance(sub.ctx, ast.Store)
        and isinstance(sub.value, ast.Name)
        and sub.value.id == "self"
    }


@pytest.mark.parametrize("stand_in", [s for s in ROWS if s.shape is Shape.READS], ids=lambda s: s.upstream.rpartition(":")[2])
def test_each_stand_in_carries_what_its_upstream_reads(stand_in: StandIn) -> None:
    assert set(stand_in.expected) <= _carried(stand_in)


@pytest.mark.parametrize("bs", range(1, max(CAPTURE_BS) + 1))
def test_the_kernel_levels_padding_is_the_runners(bs: int) -> None:
    """matrix/gpu/cases.py:padded_bucket (the kernel level, no sglang) picks the bucket the runner's own picks."""
    from sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner import FrozenKVMTPCudaGraphRunner

    assert padded_bucket(bs, CAPTURE_BS) == FrozenKVMTPCudaGraphRunner._pad_to_bucket(bs, sorted(CAPTURE_BS))
