"""What sglang's server arguments should do with a sliding-window target, from the matrix's [[swa_combination]] table.

Each table entry stands for every pair of its target and draft backends; the check asks the installed sglang for
each pair (matrix/sglang_check/edge.py: `swa_verdict`) and compares field by field.
"""

from __future__ import annotations

from dataclasses import dataclass

from matrix.core.model import Matrix, SwaCombination, SwaOutcome

# Attention-backend fields a model override could set; with the backends given on the command line, a declaration of
# any of them would mean sglang changed a backend the combination asked for.
BACKEND_FIELDS = (
    "attention_backend",
    "decode_attention_backend",
    "prefill_attention_backend",
    "speculative_draft_attention_backend",
)


@dataclass(frozen=True, kw_only=True)
class SwaConfig:
    """One server configuration of a table entry: its target backend and its draft backend (None: the flag unset)."""

    entry: SwaCombination
    target_backend: str
    draft_backend: str | None

    @property
    def id(self) -> str:
        draft = f"-draft-{self.draft_backend}" if self.draft_backend else ""
        return f"{self.entry.id}:target-{self.target_backend}{draft}"

    def server_fields(self) -> dict[str, object]:
        """The ServerArgs fields this configuration sets (topk 1: the table speaks of windows, not trees)."""
        uses_trtllm = "trtllm_mha" in (self.target_backend, self.draft_backend)
        return {
            "attention_backend": self.target_backend,
            "speculative_draft_attention_backend": self.draft_backend,
            "speculative_algorithm": self.entry.algorithm,
            "speculative_num_steps": 3,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": self.entry.num_draft_tokens,
            # A page every backend of the pair accepts as it is (trtllm_mha snaps below 16 to 64).
            "page_size": 64 if uses_trtllm else 16,
            "speculative_draft_window_size": self.entry.draft_window_size,
            "enable_hierarchical_cache": self.entry.hierarchical_cache,
        }


@dataclass(frozen=True, kw_only=True)
class SwaVerdict:
    """What the installed sglang did: the hook's outcome, what its model overrides declared, and its message."""

    outcome: SwaOutcome
    disable_hybrid_swa_memory: bool
    changed_backends: tuple[str, ...]
    message: str = ""


def swa_configs(matrix: Matrix) -> tuple[SwaConfig, ...]:
    return tuple(
        SwaConfig(entry=entry, target_backend=target, draft_backend=draft)
        for entry in matrix.swa_combinations
        for target in entry.target_backends
        for draft in entry.draft_backends
    )


def compare_swa(config: SwaConfig, verdict: SwaVerdict) -> str | None:
    """None when sglang did what the entry says; else one line naming the entry, each difference and its source."""
    entry = config.entry
    wrong: list[str] = []
    if verdict.outcome is not entry.outcome:
        said = f": {verdict.message}" if verdict.message else ""
        wrong.append(f"the matrix says {entry.outcome.value}, sglang's server args gave {verdict.outcome.value}{said}")
    if verdict.disable_hybrid_swa_memory != entry.disable_hybrid_swa_memory:
        wrong.append(
            f"the matrix says disable_hybrid_swa_memory={str(entry.disable_hybrid_swa_memory).lower()}, "
            f"sglang's model overrides declare {str(verdict.disable_hybrid_swa_memory).lower()}"
        )
    if verdict.changed_backends:
        wrong.append(f"sglang's model overrides change {', '.join(verdict.changed_backends)} (the table has no such entry)")
    if not wrong:
        return None
    return f"{config.id} [swa_combination {entry.id}, source: {entry.source}]: " + "; ".join(wrong)
