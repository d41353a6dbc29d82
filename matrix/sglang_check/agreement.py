"""Does sglang's own validation accept a cell's configuration when the matrix says it does?

A cell is expected to be rejected by sglang exactly when a blocking rule is of kind `config`, or of kind
`library` with an sglang version requirement (sglang refuses the configuration in that release).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from matrix.core.model import Cell, Expectation, Rule, RuleKind

SGLANG = "sglang"


class SpecPath(StrEnum):
    """The speculative algorithm whose server-args handler judges the configuration."""

    EAGLE = "EAGLE"
    FROZEN_KV_MTP = "FROZEN_KV_MTP"


# Target cells are judged on both paths (the EAGLE family validates, Frozen-KV MTP bypasses it);
# draft cells describe the Frozen-KV MTP draft, whose backend choice only that path makes.
PATHS_BY_ROLE: dict[str, tuple[SpecPath, ...]] = {
    "target": (SpecPath.EAGLE, SpecPath.FROZEN_KV_MTP),
    "draft": (SpecPath.FROZEN_KV_MTP,),
}
SPECULATIVE_NUM_STEPS = 3
SAME_BACKEND = "same"  # the target_backend axis value for one backend across the server (matrix/data/matrix.toml)


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """The server arguments a cell stands for on one speculative path (one backend for the whole server)."""

    cell_id: str
    path: SpecPath
    role: str
    backend: str
    topk: int
    page_size: int
    num_draft_tokens: int
    # The target's backend when a draft cell sets it apart (`--attention-backend`; the draft's then goes to
    # `--speculative-draft-attention-backend`); empty: one backend for the whole server.
    target_backend: str = ""

    @property
    def target(self) -> str:
        return self.target_backend or self.backend

    @property
    def id(self) -> str:
        return f"{self.path.value.lower()}-{self.cell_id}"

    @property
    def test_id(self) -> str:
        """A test id naming the cell without being one: a cell id in a CPU test's id would make it a matrix item."""
        return f"{self.path.value.lower()}:{self.cell_id.replace('-', '.')}"

    def server_fields(self) -> dict[str, str | int]:
        fields: dict[str, str | int] = {
            "speculative_algorithm": self.path.value,
            "attention_backend": self.target,
            "page_size": self.page_size,
            "speculative_eagle_topk": self.topk,
            "speculative_num_steps": SPECULATIVE_NUM_STEPS,
            "speculative_num_draft_tokens": self.num_draft_tokens,
        }
        if self.target != self.backend:
            fields["speculative_draft_attention_backend"] = self.backend
        return fields


@dataclass(frozen=True, kw_only=True)
class SglangVerdict:
    """Whether sglang accepted a configuration; `backend` names the backend it built, where the check saw one."""

    accepted: bool
    stage: str
    message: str = ""
    backend: str | None = None


@dataclass(frozen=True, kw_only=True)
class Disagreement:
    config: ServerConfig
    rules: tuple[Rule, ...]
    verdict: SglangVerdict

    @property
    def message(self) -> str:
        if not self.rules and self.verdict.accepted and self.verdict.backend not in (None, self.config.backend):
            return (
                f"{self.config.id}: the matrix expects sglang to build {self.config.backend}; "
                f"sglang built {self.verdict.backend} in {self.verdict.stage}"
            )
        if self.rules:
            claim = "expects sglang to reject it: " + "; ".join(f"[{r.id}] {r.reason}" for r in self.rules)
        else:
            claim = "expects sglang to accept it (no config rule blocks it)"
        said = "accepted it" if self.verdict.accepted else f"rejected it in {self.verdict.stage}: {self.verdict.message}"
        return f"{self.config.id}: the matrix {claim}; sglang {said}"


def server_configs(cell: Cell) -> tuple[ServerConfig, ...]:
    """The configurations a cell stands for, one per speculative path of its role."""
    role = str(cell.get("role"))
    values = {name: cell.get(name) for name in ("topk", "page_size", "num_draft_tokens")}
    ints = {k: v if isinstance(v, int) else 1 for k, v in values.items()}
    target = cell.get("target_backend")
    target_backend = "" if target in (None, SAME_BACKEND) else str(target)
    return tuple(
        ServerConfig(
            cell_id=cell.id,
            path=path,
            role=role,
            backend=str(cell.get("backend")),
            topk=ints["topk"],
            page_size=ints["page_size"],
            num_draft_tokens=ints["num_draft_tokens"],
            target_backend=target_backend,
        )
        for path in PATHS_BY_ROLE.get(role, ())
    )


def rejecting_rules(expectation: Expectation) -> tuple[Rule, ...]:
    """The blocking rules that claim sglang refuses the configuration."""
    return tuple(
        v.rule
        for v in expectation.blocking
        if v.rule.kind is RuleKind.CONFIG
        or (v.rule.kind is RuleKind.LIBRARY and any(r.library == SGLANG for r in v.rule.versions))
    )


def compare_outcome(config: ServerConfig, expectation: Expectation, verdict: SglangVerdict) -> Disagreement | None:
    """A disagreement when the matrix and sglang differ on whether the configuration is refused, or sglang accepted
    it but built another backend than the one the configuration names."""
    rules = rejecting_rules(expectation)
    other_backend = verdict.accepted and verdict.backend not in (None, config.backend)
    if bool(rules) == (not verdict.accepted) and not other_backend:
        return None
    return Disagreement(config=config, rules=rules, verdict=verdict)
