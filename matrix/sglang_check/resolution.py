"""The order in which Frozen-KV MTP picks its topk > 1 draft backend from the server arguments."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# sglang 0.5.23 sglang/srt/speculative/frozen_kv_mtp_worker_v2.py, FrozenKVMTPDraftWorker._resolve_draft_backend_type
# (docs/sources.md#draft-backend-resolution).
DRAFT_BACKEND_FIELDS = ("speculative_draft_attention_backend", "decode_attention_backend", "attention_backend")


@dataclass(frozen=True, kw_only=True)
class ResolutionCase:
    fields: tuple[tuple[str, str | None], ...]

    @property
    def id(self) -> str:
        short = (name.removesuffix("_attention_backend").removesuffix("_backend") for name, _ in self.fields)
        return "-".join(f"{name}={value or 'unset'}" for name, (_, value) in zip(short, self.fields, strict=True))

    def as_dict(self) -> dict[str, str | None]:
        return dict(self.fields)


def resolve_draft_backend(fields: Mapping[str, str | None], order: Sequence[str] = DRAFT_BACKEND_FIELDS) -> str | None:
    """The first field in `order` that is set."""
    return next((value for name in order if (value := fields.get(name))), None)


def resolution_cases(backends: Sequence[str]) -> tuple[ResolutionCase, ...]:
    """Every way of setting the three fields from `backends` (the base backend is always set)."""
    optional: list[str | None] = [None, *backends]
    return tuple(
        ResolutionCase(fields=tuple(zip(DRAFT_BACKEND_FIELDS, combo, strict=True)))
        for combo in itertools.product(optional, optional, backends)
    )
