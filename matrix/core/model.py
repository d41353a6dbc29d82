"""Frozen records of the planning core: axes, cells, runner profiles, rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

# The runner profile records live apart so that a command that reads only runner profiles (`specmatrix guards`)
# does not build the matrix records below (a frozen dataclass costs about 1 ms to create); they are part of the
# model and imported from here as before (`as`: an explicit re-export for mypy --strict).
from matrix.core.profile import RunnerProfile as RunnerProfile  # noqa: PLC0414
from matrix.core.profile import SkipPolicy as SkipPolicy  # noqa: PLC0414

Value = int | str


class Outcome(StrEnum):
    RUN = "run"
    SKIP = "skip"


class RuleKind(StrEnum):
    """Why a rule exists: hardware, kernel limit, library version, or sglang configuration."""

    HARDWARE = "hardware"
    KERNEL = "kernel"
    LIBRARY = "library"
    CONFIG = "config"


@dataclass(frozen=True, kw_only=True)
class Axis:
    name: str
    values: tuple[Value, ...]
    id_format: str
    default: Value | None = None
    omit_default_in_id: bool = False

    def id_part(self, value: Value) -> str | None:
        if self.omit_default_in_id and value == self.default:
            return None
        return self.id_format.format(value)


@dataclass(frozen=True, kw_only=True)
class Cell:
    """One point of the matrix; axis values are readable as attributes (`cell.topk`)."""

    id: str
    group: str
    values: tuple[tuple[str, Value], ...]

    def __getattr__(self, name: str) -> Value:
        values: tuple[tuple[str, Value], ...] = object.__getattribute__(self, "values")
        for key, value in values:
            if key == name:
                return value
        raise AttributeError(f"cell has no axis {name!r}")

    def as_dict(self) -> dict[str, Value]:
        return dict(self.values)

    def get(self, axis: str) -> Value | None:
        for key, value in self.values:  # a handful of axes: a scan beats building a dict per call
            if key == axis:
                return value
        return None


class Op(StrEnum):
    IN = "in"
    NOT_IN = "not_in"
    EQ = "eq"
    NE = "ne"
    GT = "gt"
    GE = "ge"
    LT = "lt"
    LE = "le"


@dataclass(frozen=True, kw_only=True)
class Condition:
    """`subject op operand`; subject is an axis name or a runner fact (sm, gpus, impl)."""

    subject: str
    op: Op
    operand: tuple[Value, ...]


@dataclass(frozen=True, kw_only=True)
class VersionRequirement:
    library: str
    specifier: str


@dataclass(frozen=True, kw_only=True)
class Rule:
    id: str
    kind: RuleKind
    when: tuple[Condition, ...]
    require: tuple[Condition, ...]
    versions: tuple[VersionRequirement, ...]
    reason: str
    source: str


@dataclass(frozen=True, kw_only=True)
class ImplChoice:
    """Which implementation a backend uses on an arch (trtllm_mha: xqa or trtllm-gen)."""

    backend: str
    sms: tuple[int, ...]
    impl: str
    source: str


@dataclass(frozen=True, kw_only=True)
class PagePromotion:
    """sglang's page-size snap: when `backend` serves `role` and the page size is not accepted, it becomes `promote_to`.

    `versions` names the library versions in which the promotion exists (it applies only there).
    """

    id: str
    role: str
    backend: str
    accepted: tuple[int, ...]
    promote_to: int
    versions: tuple[VersionRequirement, ...]
    reason: str
    source: str


class SwaOutcome(StrEnum):
    """What sglang's speculative server-args hook does with a combination."""

    ACCEPTED = "accepted"  # no error, no "has no effect" warning
    WINDOW_IGNORED = "window-ignored"  # accepted, with sglang's warning that the draft window has no effect
    REFUSED = "refused"  # the hook raises


@dataclass(frozen=True, kw_only=True)
class SwaCombination:
    """What sglang's server arguments do with a sliding-window target, a speculative path and its backends.

    Every pair of `target_backends` x `draft_backends` (None: the flag left unset) is one combination; read by the
    sglang configuration check (matrix/sglang_check/swa.py), not by `expected`.
    """

    id: str
    architecture: str
    sliding_window_pattern: int | None
    hierarchical_cache: bool
    algorithm: str
    target_backends: tuple[str, ...]
    draft_backends: tuple[str | None, ...]
    draft_window_size: int | None
    num_draft_tokens: int
    outcome: SwaOutcome
    disable_hybrid_swa_memory: bool
    reason: str
    source: str


@dataclass(frozen=True, kw_only=True)
class BackendCost:
    cell_seconds: float
    compile_seconds: float
    config_axes: tuple[str, ...]


DEFAULT_CELL_COST = BackendCost(cell_seconds=1.0, compile_seconds=0.0, config_axes=())


@dataclass(frozen=True, kw_only=True)
class CostModel:
    shard_seconds: float
    backends: Mapping[str, BackendCost] = field(default_factory=dict)
    default: BackendCost = DEFAULT_CELL_COST  # cells of a matrix without [cost.backend.*] tables


@dataclass(frozen=True, kw_only=True)
class CoverageLayout:
    """Which axes form the coverage table's rows (after the runner's arch) and its columns."""

    rows: tuple[str, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Matrix:
    name: str
    axes: tuple[Axis, ...]
    cells: tuple[Cell, ...]
    rules: tuple[Rule, ...]
    impls: tuple[ImplChoice, ...]
    pins: Mapping[str, str]
    cost: CostModel
    source_path: str
    page_promotions: tuple[PagePromotion, ...] = ()
    swa_combinations: tuple[SwaCombination, ...] = ()
    coverage: CoverageLayout | None = None  # None: the first axis as rows, the next two as columns

    @property
    def layout(self) -> CoverageLayout:
        """The coverage layout `[coverage]` names, else the first axis as rows and the next two as columns."""
        if self.coverage is not None:
            return self.coverage
        names = tuple(a.name for a in self.axes)
        return CoverageLayout(rows=names[:1], columns=names[1:3])

    def axis(self, name: str) -> Axis:
        for axis in self.axes:
            if axis.name == name:
                return axis
        raise KeyError(name)

    def cell(self, cell_id: str) -> Cell:
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        raise KeyError(cell_id)


@dataclass(frozen=True, kw_only=True)
class RuleVerdict:
    """One applicable rule's result for a (cell, runner) pair."""

    rule: Rule
    satisfied: bool
    detail: str


@dataclass(frozen=True, kw_only=True)
class Expectation:
    cell_id: str
    runner: str
    outcome: Outcome
    impl: str | None
    trail: tuple[RuleVerdict, ...]

    @property
    def blocking(self) -> tuple[RuleVerdict, ...]:
        return tuple(v for v in self.trail if not v.satisfied)

    @property
    def reason(self) -> str:
        """The first blocking rule as one line, or the rules that allow the run."""
        blocking = self.blocking
        if blocking:
            first = blocking[0]
            return f"[{first.rule.id}] {first.rule.reason} ({first.detail})"
        if self.trail:
            return "must run: " + ", ".join(v.rule.id for v in self.trail)
        return "must run: no rule restricts this cell"
