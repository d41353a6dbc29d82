"""sglang's server arguments with a sliding-window target against the matrix's [[swa_combination]] table."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

from matrix.core.loader import load_matrix
from matrix.core.model import Matrix, SwaOutcome
from matrix.sglang_check import edge
from matrix.sglang_check.swa import SwaConfig, SwaVerdict, compare_swa, swa_configs

CONFIGS = swa_configs(load_matrix())


@functools.cache
def _verdict(config: SwaConfig) -> SwaVerdict:
    return edge.swa_verdict(config)


@pytest.mark.parametrize("config", CONFIGS, ids=[c.id for c in CONFIGS])
def test_sglang_does_what_the_swa_table_says(config: SwaConfig) -> None:
    disagreement = compare_swa(config, _verdict(config))
    assert disagreement is None, disagreement


def test_the_table_covers_the_draft_paths_and_every_backend(matrix: Matrix) -> None:
    """Every backend as target and as draft under a Frozen-KV MTP window, and each way a window is judged."""
    backends = {str(b) for b in matrix.axis("backend").values}
    frozen_window = [c for c in CONFIGS if c.entry.algorithm == "FROZEN_KV_MTP" and c.entry.draft_window_size]
    assert {c.target_backend for c in frozen_window} == backends
    assert {c.draft_backend for c in frozen_window} >= {"trtllm_mha", "triton"}
    assert {c.entry.outcome for c in CONFIGS} == set(SwaOutcome)
    assert {c.entry.disable_hybrid_swa_memory for c in CONFIGS} == {True, False}


def _entry(d: dict[str, Any], entry_id: str) -> dict[str, Any]:
    return next(t for t in d["swa_combination"] if t["id"] == entry_id)


@pytest.mark.parametrize(
    ("plant", "config_id", "said"),
    [
        pytest.param(
            lambda d: _entry(d, "frozen-kv-mtp-draft-window").update(outcome="accepted"),
            "frozen-kv-mtp-draft-window:target-triton-draft-trtllm_mha",
            "the matrix says accepted, sglang's server args gave window-ignored: --speculative-draft-window-size has no effect",
            id="frozen-window-said-honoured",
        ),
        pytest.param(
            lambda d: _entry(d, "eagle-draft-window").update(outcome="window-ignored"),
            "eagle-draft-window:target-fa3-draft-trtllm_mha",
            "the matrix says window-ignored, sglang's server args gave accepted",
            id="eagle-window-said-ignored",
        ),
        pytest.param(
            lambda d: _entry(d, "frozen-kv-mtp-window-below-draft-tokens").update(outcome="refused"),
            "frozen-kv-mtp-window-below-draft-tokens:target-triton-draft-trtllm_mha",
            "the matrix says refused, sglang's server args gave window-ignored",
            id="frozen-window-below-tokens-said-refused",
        ),
        pytest.param(
            lambda d: _entry(d, "frozen-kv-mtp-window-zero").update(outcome="window-ignored"),
            "frozen-kv-mtp-window-zero:target-triton-draft-trtllm_mha",
            "sglang's server args gave refused: --speculative-draft-window-size must be positive, got 0.",
            id="zero-window-said-ignored",
        ),
        pytest.param(
            lambda d: _entry(d, "hybrid-swa-off-gemma3-frozen-kv-mtp").update(disable_hybrid_swa_memory=False),
            "hybrid-swa-off-gemma3-frozen-kv-mtp:target-trtllm_mha-draft-triton",
            "the matrix says disable_hybrid_swa_memory=false, sglang's model overrides declare true",
            id="gemma3-said-hybrid",
        ),
        pytest.param(
            lambda d: _entry(d, "frozen-kv-mtp-gemma4").update(disable_hybrid_swa_memory=True),
            "frozen-kv-mtp-gemma4:target-flashinfer-draft-trtllm_mha",
            "the matrix says disable_hybrid_swa_memory=true, sglang's model overrides declare false",
            id="gemma4-said-no-hybrid",
        ),
        pytest.param(
            lambda d: _entry(d, "hybrid-swa-off-step3p5-hicache").update(hierarchical_cache=False),
            "hybrid-swa-off-step3p5-hicache:target-fa3",
            "sglang's model overrides declare false",
            id="step3p5-cache-dropped",
        ),
    ],
)
def test_a_wrong_entry_is_reported(
    matrix_with: Callable[[Callable[[dict[str, Any]], None]], Matrix],
    plant: Callable[[dict[str, Any]], None],
    config_id: str,
    said: str,
) -> None:
    planted = next(c for c in swa_configs(matrix_with(plant)) if c.id == config_id)
    disagreement = compare_swa(planted, edge.swa_verdict(planted))
    assert disagreement is not None
    assert disagreement.startswith(f"{config_id} [swa_combination {planted.entry.id}, source: sglang 0.5.23 ")
    assert said in disagreement


def test_a_backend_changed_by_sglang_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """An override that replaced a backend given on the command line would be a combination sglang changes."""
    from sglang.srt.arg_groups import model_override_base

    (config,) = [c for c in CONFIGS if c.id == "hybrid-swa-kept-exaone-no-window:target-triton"]
    monkeypatch.setitem(
        model_override_base._MODEL_OVERRIDE_FNS, "Exaone4ForCausalLM", [lambda server_args, hf: {"attention_backend": "fa3"}]
    )
    disagreement = compare_swa(config, edge.swa_verdict(config))
    assert disagreement is not None
    assert "sglang's model overrides change attention_backend" in disagreement
