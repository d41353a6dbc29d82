"""The target-verify identity check over stand-in fixtures: the backend the kit ran must be one sglang's registry
built for the cell's name, and prefill-capable; and docs/gpu.md names every stand-in (no torch, no sglang)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from matrix.core.loader import load_matrix
from matrix.gpu.cases import DraftCase, draft_case
from matrix.gpu.sglang_verify import check_target_identity
from matrix.sglang_check.identity import BackendMismatch

CELL = "target-triton-topk4-page16-hd128-dt4-gqa4-bf16-graph"


class VerifyBackend:
    def __init__(self, *, skip_prefill: bool = False) -> None:
        self.skip_prefill = skip_prefill


def _case() -> DraftCase:
    return draft_case(load_matrix().cell(CELL))


def test_the_registry_backend_passes() -> None:
    backend = VerifyBackend()
    check_target_identity(_case(), [backend], [SimpleNamespace(backend=backend)], impl="triton")


@pytest.mark.parametrize(
    ("built", "ran", "match"),
    [
        ([VerifyBackend()], VerifyBackend(), "a backend sglang's registry did not build for 'triton'"),
        ([VerifyBackend(skip_prefill=True)], None, "skip_prefill True, expected False"),
    ],
    ids=["not-the-registrys", "decode-only"],
)
def test_another_backend_is_a_mismatch(built: list[VerifyBackend], ran: VerifyBackend | None, match: str) -> None:
    fixture = SimpleNamespace(backend=ran if ran is not None else built[0])
    with pytest.raises(BackendMismatch, match=match):
        check_target_identity(_case(), built, [fixture], impl="triton")


def test_no_fixture_is_a_mismatch() -> None:
    with pytest.raises(BackendMismatch, match="the kit built no fixture"):
        check_target_identity(_case(), [], [], impl=None)


def test_docs_list_every_stand_in() -> None:
    from pathlib import Path

    from matrix.gpu.standins import STAND_INS

    text = (Path(__file__).resolve().parents[2] / "docs" / "gpu.md").read_text(encoding="utf-8")
    missing = [s.upstream for s in STAND_INS if s.upstream.partition(":")[2] not in text or s.name not in text]
    assert missing == []
