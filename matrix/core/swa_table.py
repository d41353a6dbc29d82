"""The `[[swa_combination]]` table: what sglang's server arguments do with a sliding-window target and its draft."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.model import Axis, SwaCombination, SwaOutcome
from matrix.core.tomlfields import expect_keys, str_field, strings_field, tables_field

SWA_KEYS = {
    "id",
    "architecture",
    "sliding_window_pattern",
    "hierarchical_cache",
    "algorithm",
    "target_backend",
    "draft_backend",
    "draft_window_size",
    "num_draft_tokens",
    "outcome",
    "disable_hybrid_swa_memory",
    "reason",
    "source",
}
# The speculative algorithms as sglang's hook sees them after its alias resolution (NEXTN is EAGLE; NEXTN or EAGLE
# with a Gemma 4 assistant draft is FROZEN_KV_MTP).
ALGORITHMS = ("EAGLE", "EAGLE3", "FROZEN_KV_MTP")


def parse_swa_combinations(value: Any, axes: Mapping[str, Axis], source: str) -> tuple[SwaCombination, ...]:
    found = tuple(_parse_one(t, axes, f"{source}: swa_combination #{i + 1}") for i, t in enumerate(tables_field(value, source)))
    ids = [c.id for c in found]
    for cid in ids:
        if ids.count(cid) > 1:
            raise ConfigError(f"{source}: swa_combination id {cid!r} used twice")
    return found


def _parse_one(t: Mapping[str, Any], axes: Mapping[str, Axis], where: str) -> SwaCombination:
    expect_keys(t, SWA_KEYS, where)
    cid = str_field(t.get("id"), f"{where}: id")
    where = f"{where} ({cid})"
    if "backend" not in axes:
        raise ConfigError(f"{where}: needs a 'backend' axis in the matrix")
    algorithm = str_field(t.get("algorithm"), f"{where}: algorithm")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"{where}: algorithm: unknown {algorithm!r} (allowed: {', '.join(ALGORITHMS)})")
    outcome = str_field(t.get("outcome"), f"{where}: outcome")
    if outcome not in {o.value for o in SwaOutcome}:
        raise ConfigError(f"{where}: outcome: unknown {outcome!r} (allowed: {', '.join(o.value for o in SwaOutcome)})")
    targets = _backends(t.get("target_backend"), axes["backend"], f"{where}: target_backend")
    drafts: tuple[str | None, ...] = (
        _backends(t["draft_backend"], axes["backend"], f"{where}: draft_backend") if "draft_backend" in t else (None,)
    )
    window = _positive_or_none(t.get("draft_window_size"), f"{where}: draft_window_size", allow_zero=True)
    pattern = _positive_or_none(t.get("sliding_window_pattern"), f"{where}: sliding_window_pattern", allow_zero=False)
    tokens = _positive_or_none(t.get("num_draft_tokens", 4), f"{where}: num_draft_tokens", allow_zero=False)
    return SwaCombination(
        id=cid,
        architecture=str_field(t.get("architecture"), f"{where}: architecture"),
        sliding_window_pattern=pattern,
        hierarchical_cache=_bool(t.get("hierarchical_cache", False), f"{where}: hierarchical_cache"),
        algorithm=algorithm,
        target_backends=targets,
        draft_backends=drafts,
        draft_window_size=window,
        num_draft_tokens=tokens or 4,
        outcome=SwaOutcome(outcome),
        disable_hybrid_swa_memory=_bool(t.get("disable_hybrid_swa_memory"), f"{where}: disable_hybrid_swa_memory"),
        reason=str_field(t.get("reason"), f"{where}: reason"),
        source=str_field(t.get("source"), f"{where}: source"),
    )


def _backends(value: Any, axis: Axis, where: str) -> tuple[str, ...]:
    names = strings_field(value if isinstance(value, list) else [value], where)
    if not names:
        raise ConfigError(f"{where}: empty list")
    for name in names:
        if name not in axis.values:
            raise ConfigError(f"{where}: unknown backend {name!r} (allowed: {list(axis.values)})")
    return names


def _positive_or_none(value: Any, where: str, *, allow_zero: bool) -> int | None:
    # A zero draft window is kept: sglang's refusal of it is one of the facts the table records.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if allow_zero else 1):
        raise ConfigError(f"{where}: expected a {'non-negative' if allow_zero else 'positive'} integer, got {value!r}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    return value
