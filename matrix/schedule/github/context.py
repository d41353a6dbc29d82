"""The records the GitHub Actions walk passes down its stages (workflow -> job -> step); pure.

Each stage gets what it reads as a frozen record (`WorkflowContext`, `JobContext`) and writes what it finds into
the `Found` it is handed, so a workflow walked once can hand its findings to every caller under that caller's chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from matrix.schedule.model import Container, Gate, Origin, ScheduleEntry, UnknownLabel, UnreadJob, called_from

# Each possible label set of a job's `runs-on`, with the assumptions behind it.
LabelSets = list[tuple[tuple[str, ...], tuple[str, ...]]]


@dataclass(frozen=True, kw_only=True)
class Workflow:
    name: str  # repo-relative path
    doc: Mapping[str, Any]
    lines: tuple[str, ...]
    # Where each `run:` / `script:` value and each job key is written (`matrix.schedule.yamldoc.Marks`).
    marks: Mapping[tuple[int | str, str], tuple[int, str]] = field(default_factory=dict, compare=False, repr=False)

    def run_at(self, holder: Mapping[Any, Any], key: str = "run") -> tuple[int, str] | None:
        """(line, YAML style) of `holder[key]` as written in this file, when the loader marked it."""
        return self.marks.get((id(holder), key))


class Notes:
    """Assumptions made while resolving one job's values (kept in order, once each). A plain class: a walk makes
    a few thousand, and a dataclass's generated `__init__` with a default factory costs twice as much."""

    __slots__ = ("items",)

    def __init__(self, *, items: list[str] | None = None) -> None:
        self.items: list[str] = [] if items is None else items

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)


@dataclass(frozen=True, kw_only=True)
class WorkflowContext:
    """One workflow as a walk reaches it: the events that start it, its inputs, the chain of calls to it (`via`,
    added to what it finds by the caller), and the workflows being called on the way (`calling`: a cycle stops)."""

    workflow: Workflow
    events: tuple[str, ...]
    inputs: Mapping[str, Any]
    via: tuple[str, ...]
    depth: int = 0
    calling: tuple[str, ...] = ()
    # The gate each event gives its jobs (`subset.EVENTS`, refined by the trigger's own settings); a called
    # workflow has its caller's.
    gates: Mapping[str, Gate] = field(default_factory=dict)
    # (event, condition text) -> its truth: an `if:` reads only the inputs, the event and the echoed outputs
    # (never the matrix or env), so the same text in the same walk has the same value (a step's `if:` in every
    # matrix job).
    conditions: dict[tuple[str, str], bool | None] = field(default_factory=dict, compare=False, repr=False)
    # event -> the values of the parts of `if:` texts read so far (`evaluate_shared`): sglang's jobs repeat the
    # same clauses (`github.repository == ... || github.event_name == ...`, a job filter) with one name changed.
    parts: dict[str, dict[int, Any]] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True, kw_only=True)
class JobContext:
    """One job leg (a matrix combination) as its steps see it: the workflow, where the job is, the event it is read
    for, its gates, matrix values, runner label sets, the workflow's env and the folder its `run:` steps start in."""

    workflow: WorkflowContext
    origin: Origin
    event: str
    gates: tuple[Gate, ...]
    matrix: Mapping[str, Any]
    label_sets: LabelSets
    working: str = "."
    shell: str = ""  # `defaults.run.shell` of the job, else of the workflow ("" : bash)
    container: Container | None = None  # the job's own `container:`, where every `run:` step runs


Record = TypeVar("Record", ScheduleEntry, UnknownLabel)
Rooted = tuple[Record, tuple[str, ...]]  # a record, and the call chain to add to its origin's


class Found:
    """What a walk of one workflow finds: entries and unknown labels (with the call chain that reaches them from
    the workflow walked), jobs not read and jobs never started. Mutable by design: the stages of one walk add to it."""

    __slots__ = ("_seen", "entries", "not_run", "unknown", "unread")

    def __init__(self) -> None:
        self.entries: list[Rooted[ScheduleEntry]] = []
        self.unread: list[UnreadJob] = []
        self.not_run: list[UnreadJob] = []
        self.unknown: dict[tuple[str, str], Rooted[UnknownLabel]] = {}
        self._seen: set[object] = set()  # every entry and job record taken from a called workflow so far

    def add_entry(self, entry: ScheduleEntry) -> None:
        self.entries.append((entry, ()))

    def add_under(self, other: Found, via: tuple[str, ...]) -> None:
        """Take what a called workflow found, as reached through `via`. What is already here is not added again:
        the legs of a matrix that call one workflow with inputs its results do not show (`with: {x: p${{ matrix.v }}}`
        into a job that only passes `x` on) find the same entries, and kept per leg they multiply by each level of
        a call chain (6 legs over 7 levels: 6**7 copies of each entry, where the schedule lists one)."""
        for entry, chain in other.entries:
            rooted_entry = (entry, (*chain, *via))
            if self._first(rooted_entry):
                self.entries.append(rooted_entry)
        for kind, mine, theirs in (("unread", self.unread, other.unread), ("not run", self.not_run, other.not_run)):
            for job in theirs:
                taken = replace(job, origin=under(job.origin, via))
                if self._first((kind, taken)):
                    mine.append(taken)
        for label, chain in other.unknown.values():
            moved = (*chain, *via)
            self.unknown.setdefault((label.label, str(label.origin) + called_from(moved)), (label, moved))

    def _first(self, key: object) -> bool:
        """Whether `key` is taken for the first time (and now is)."""
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


def under(origin: Origin, via: tuple[str, ...]) -> Origin:
    return replace(origin, via=(*origin.via, *via)) if via else origin


def rooted(record: Record, via: tuple[str, ...]) -> Record:
    return replace(record, origin=under(record.origin, via)) if via else record
