"""The [[swa_combination]] table's loader: every entry's fields checked, bad input one ConfigError naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from matrix.core.errors import ConfigError
from matrix.core.loader import default_matrix_text, load_matrix, parse_matrix, read_toml
from matrix.core.model import SwaOutcome


def _builtin() -> dict[str, Any]:
    return copy.deepcopy(read_toml(default_matrix_text(), "matrix.toml"))


def test_the_builtin_table_loads_with_lists_and_defaults() -> None:
    entries = {c.id: c for c in load_matrix().swa_combinations}
    window = entries["frozen-kv-mtp-draft-window"]
    assert window.target_backends == ("triton", "flashinfer", "fa3", "trtllm_mha")
    assert window.draft_backends == ("trtllm_mha", "triton")
    assert (window.draft_window_size, window.num_draft_tokens, window.outcome) == (8, 4, SwaOutcome.WINDOW_IGNORED)
    olmo = entries["hybrid-swa-off-olmo2"]
    assert (olmo.draft_backends, olmo.draft_window_size, olmo.sliding_window_pattern, olmo.hierarchical_cache) == (
        (None,),
        None,
        None,
        False,
    )
    assert entries["frozen-kv-mtp-window-zero"].draft_window_size == 0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("target_backend", "flashmla9", "target_backend: unknown backend 'flashmla9'"),
        ("draft_backend", [], "draft_backend: empty list"),
        ("algorithm", "NEXTN", "algorithm: unknown 'NEXTN' (allowed: EAGLE, EAGLE3, FROZEN_KV_MTP)"),
        ("outcome", "ok", "outcome: unknown 'ok'"),
        ("draft_window_size", -1, "draft_window_size: expected a non-negative integer, got -1"),
        ("num_draft_tokens", 0, "num_draft_tokens: expected a positive integer, got 0"),
        ("disable_hybrid_swa_memory", "yes", "disable_hybrid_swa_memory: expected true or false, got 'yes'"),
        ("source", "", "source: expected a non-empty string"),
    ],
)
def test_a_bad_field_is_named(field: str, value: object, message: str) -> None:
    data = _builtin()
    data["swa_combination"][0][field] = value
    with pytest.raises(ConfigError, match="swa_combination #1 \\(frozen-kv-mtp-gemma4\\): ") as caught:
        parse_matrix(data, "m.toml")
    assert message in str(caught.value)


def test_an_id_used_twice_is_refused() -> None:
    data = _builtin()
    data["swa_combination"].append(dict(data["swa_combination"][0]))
    with pytest.raises(ConfigError, match="swa_combination id 'frozen-kv-mtp-gemma4' used twice"):
        parse_matrix(data, "m.toml")


def test_a_changed_entry_changes_the_matrix_digest() -> None:
    """A report judged against another SWA table is not this matrix's report."""
    from matrix.core.report import matrix_digest

    data = _builtin()
    before = matrix_digest(parse_matrix(data, "m.toml"))
    data["swa_combination"][1]["outcome"] = "accepted"
    assert matrix_digest(parse_matrix(data, "m.toml")) != before
