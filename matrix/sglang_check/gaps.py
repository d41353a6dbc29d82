"""Known places where sglang does not enforce a matrix rule; tests mark them as strict expected failures."""

from __future__ import annotations

from dataclasses import dataclass

from matrix.core.model import Rule
from matrix.sglang_check.agreement import SpecPath

SPECULATIVE_HOOK_0_5_23 = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/arg_groups/speculative_hook.py"
OVERRIDES_0_5_23 = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/arg_groups/overrides.py"


@dataclass(frozen=True, kw_only=True)
class KnownGap:
    path: SpecPath
    rule_id: str
    link: str
    note: str


KNOWN_GAPS: tuple[KnownGap, ...] = (
    KnownGap(
        path=SpecPath.FROZEN_KV_MTP,
        rule_id="target-trtllm-mha-topk1",
        link=SPECULATIVE_HOOK_0_5_23,
        note="SpeculativeAlgorithm dispatch sends FROZEN_KV_MTP to _handle_frozen_kv_mtp, which skips the trtllm_mha topk check",
    ),
    KnownGap(
        path=SpecPath.FROZEN_KV_MTP,
        rule_id="target-tree-paged-backends",
        link=SPECULATIVE_HOOK_0_5_23,
        note="SpeculativeAlgorithm dispatch sends FROZEN_KV_MTP to _handle_frozen_kv_mtp, which skips the topk>1/page>1 check",
    ),
)

SHALLOW_VIEW_GAP = KnownGap(
    path=SpecPath.EAGLE,
    rule_id="trtllm-mha-draft-page",
    link=OVERRIDES_0_5_23,
    note=(
        "_mla_backend_page_constraints reads view.speculative_draft_attention_backend without a default, so a view "
        "lacking it (test_model_overrides.py::test_page_constraint_passes_at_callable_level) raises AttributeError"
    ),
)


def known_gap(path: SpecPath, rules: tuple[Rule, ...], gaps: tuple[KnownGap, ...] = KNOWN_GAPS) -> KnownGap | None:
    """The gap explaining why sglang accepts on `path` what `rules` reject, when every rule is a known gap."""
    found = [next((g for g in gaps if g.path is path and g.rule_id == r.id), None) for r in rules]
    if not found or any(g is None for g in found):
        return None
    return found[0]
