"""Target verify's prefix placement on CPU: the prefix KV lands where the batch's request table reads it.

sglang's kit writes it with its contiguous mapping in the eager leg of the CUDA-graph case while the fixture's
table is shuffled by pages (matrix/gpu/sglang_verify.py says why that matters); the GPU cells use
`prefix_where_the_batch_reads` instead. Runs the kit's own `_populate_prefix_kv` with a stand-in pool (needs torch
and sglang; runs in `nox -s sglang`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from .conftest import SGLANG_CPU_IMPORT_WARNINGS

pytestmark = [
    pytest.mark.requires_torch,
    pytest.mark.requires_sglang,
    *(pytest.mark.filterwarnings(w) for w in SGLANG_CPU_IMPORT_WARNINGS),
]
torch = pytest.importorskip("torch")
pytest.importorskip("sglang")

from matrix.gpu.sglang_verify import prefix_where_the_batch_reads  # noqa: E402

PAGE = 4
CONTEXT = 16  # four pages per request
PREFIXES = (5, 11, 3)
KV_HEADS, HEAD_DIM = 1, 2


class Projection:
    """project_qkv as the kit's module has it: key = value = the token's two hidden numbers."""

    head_dim = HEAD_DIM
    attn = object()

    def project_qkv(self, hidden: Any) -> tuple[Any, Any, Any]:
        return hidden, hidden, hidden


class Pool:
    def __init__(self, slots: int) -> None:
        self.k = torch.full((slots, KV_HEADS, HEAD_DIM), -1.0)

    def set_kv_buffer(self, layer: Any, loc: Any, k: Any, v: Any) -> None:
        self.k[loc] = k


def shuffled_table(rows: int, order: tuple[int, ...]) -> Any:
    """Request r's logical page p lives on physical page order[p] of its block, as the kit's shuffled layout does."""
    table = torch.zeros((rows, CONTEXT), dtype=torch.int64)
    for r in range(rows):
        for pos in range(CONTEXT):
            table[r, pos] = PAGE + r * CONTEXT + order[pos // PAGE] * PAGE + pos % PAGE
    return table


def fixture_and_inputs() -> tuple[Any, Any, Any, dict[str, Any]]:
    pool = Pool(PAGE + 4 * CONTEXT)
    runner = SimpleNamespace(
        req_to_token_pool=SimpleNamespace(req_to_token=shuffled_table(4, (2, 0, 3, 1))),
        token_to_kv_pool=pool,
        device="cpu",
    )
    fixture = SimpleNamespace(actual_module=Projection(), runner=runner)
    case = SimpleNamespace(num_kv_heads=KV_HEADS, page_size=PAGE)
    # hidden[t] = (request, position): every token's key names the token.
    inputs = {"prefix_hidden": [torch.tensor([[float(r), float(p)] for p in range(n)]) for r, n in enumerate(PREFIXES)]}
    return fixture, case, pool, inputs


def misplaced(pool: Pool, table: Any, rows: list[int]) -> list[tuple[int, int]]:
    """Prefix tokens whose slot, as the request table names it, holds another token's key."""
    wrong = []
    for r, n in enumerate(PREFIXES):
        for pos in range(n):
            if pool.k[int(table[rows[r], pos]), 0].tolist() != [float(r), float(pos)]:
                wrong.append((r, pos))
    return wrong


@pytest.mark.parametrize("rows", [[0, 1, 2], [3, 1, 0]])
def test_prefix_lands_where_the_batch_reads(rows: list[int]) -> None:
    fixture, case, pool, inputs = fixture_and_inputs()
    batch = SimpleNamespace(req_pool_indices=torch.tensor(rows, dtype=torch.int32))
    prefix_where_the_batch_reads(fixture, case, batch, inputs, max_context_len=CONTEXT)
    assert misplaced(pool, fixture.runner.req_to_token_pool.req_to_token, rows) == []


def test_the_kits_own_placement_misses_a_shuffled_table() -> None:
    """The defect the replacement exists for; if a later kit places by the table, this turns red and the
    replacement can go."""
    from sglang.test.kits.attention_unittest.attention_methods.dense_attention import prepare_dense_runner_inputs

    fixture, case, pool, inputs = fixture_and_inputs()
    batch = SimpleNamespace(req_pool_indices=torch.tensor([0, 1, 2], dtype=torch.int32))
    prepare_dense_runner_inputs(fixture, case, batch, inputs, max_context_len=CONTEXT)
    assert misplaced(pool, fixture.runner.req_to_token_pool.req_to_token, [0, 1, 2]) != []
