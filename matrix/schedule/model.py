"""The schedule model: what CI selects, on which runner labels and profiles, with which env and gating; pure.

Every reader (GitHub Actions, runner-config tables, Buildkite, a declared schedule file) produces these records,
and every audit consumes them, so "which test runs on which runner" is decided from one shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any, Protocol

from matrix.schedule.environment.model import JobEnvironment


class Gate(StrEnum):
    """When an entry runs: on every push/PR, in the merge queue, only with a PR label, only on a schedule or by hand.
    Every gate is CI that runs: the audits count each; the gate says to a reader when."""

    ALWAYS = "always"  # push / pull_request without a label condition
    MERGE_QUEUE = "merge-queue"  # merge_group: a pull request in the merge queue, before it lands
    LABEL = "label"  # a pull request carrying a label (sglang `run-ci`, flashinfer `run-ci`)
    SCHEDULE = "schedule"  # cron, or a workflow called from a scheduled workflow
    MANUAL = "manual"  # workflow_dispatch only, or Buildkite `optional: true` on PRs
    UNKNOWN = "unknown"  # a condition that cannot be read statically (shown as an assumption)


@dataclass(frozen=True, kw_only=True)
class Origin:
    """Where an entry was read: the CI file (relative to the repository root), its line, the job or step id,
    and the chain of calls that led there (a caller workflow's job calling a reusable workflow)."""

    file: str
    line: int
    job: str
    via: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.file}:{self.line} job {self.job}{called_from(self.via)}"


def called_from(via: Sequence[str]) -> str:
    """How an origin shows the chain of calls that led to it (the tail of `str(origin)`)."""
    return "".join(f" (called from {v})" for v in via)


@dataclass(frozen=True, kw_only=True)
class SuiteSelection:
    """sglang's `run_suite.py --hw HW --suite SUITE [--nightly]`: registrations whose suite and nightly flag match."""

    suite: str
    hw: str | None
    nightly: bool


@dataclass(frozen=True, kw_only=True)
class PytestSelection:
    """One pytest invocation: its arguments as written, resolved relative to `working_dir` (repo-relative)."""

    paths: tuple[str, ...]
    working_dir: str = "."
    ignore: tuple[str, ...] = ()
    deselect: tuple[str, ...] = ()
    keyword: str | None = None  # -k
    markexpr: str | None = None  # -m
    shard: tuple[int, int] | None = None  # (shard id, shard count) from parallelism
    # The arguments as written (variables expanded), for pytest's own parser (`pytest-audit`); None when unknown.
    argv: tuple[str, ...] | None = None


Selection = SuiteSelection | PytestSelection


def selection_fields(selection: Selection) -> dict[str, Any]:
    """A selection's fields as plain JSON values (the schedule cache and `specmatrix schedule --format json`)."""
    if isinstance(selection, SuiteSelection):
        return {"suite": selection.suite, "hw": selection.hw, "nightly": selection.nightly}
    return {
        "paths": list(selection.paths),
        "working_dir": selection.working_dir,
        "ignore": list(selection.ignore),
        "deselect": list(selection.deselect),
        "keyword": selection.keyword,
        "markexpr": selection.markexpr,
        "shard": list(selection.shard) if selection.shard else None,
    }


@dataclass(frozen=True, kw_only=True)
class Container:
    """The container an entry's command runs in (`docker exec NAME ...`): the runner's environment does not reach
    it, so the entry's `env` is all the command sees, unless `unread` says why the container may hold more."""

    name: str
    unread: str = ""
    notes: tuple[str, ...] = ()  # assumptions made to read it (a Docker Official Image's own variables)


# Kinds of runner whose devices the CUDA API (torch.cuda) sees: NVIDIA's, and AMD's through ROCm's HIP build of torch.
CUDA_API_KINDS = frozenset({"cuda", "rocm"})
_SM = re.compile(r"sm_?(\d)(\d+)")


@dataclass(frozen=True, kw_only=True)
class RunnerHardware:
    """What a runner no profile describes is, as far as its labels say (`matrix/data/runner_labels.toml`): its kind
    (cpu, cuda, rocm, xpu, npu, macos, windows), the GPU vendor, how many GPUs of that kind and their architecture
    (`sm86`, `gfx942`); None or "" where the labels do not say. `labels` are the labels it was read from."""

    kind: str
    vendor: str = ""
    gpus: int | None = None
    arch: str = ""
    labels: tuple[str, ...] = ()

    @property
    def capability(self) -> tuple[int, int] | None:
        """The CUDA compute capability an NVIDIA architecture (`sm86`) names; None for any other."""
        found = _SM.fullmatch(self.arch) if self.kind == "cuda" else None
        return (int(found.group(1)), int(found.group(2))) if found else None

    @property
    def cuda_devices(self) -> int | None:
        """How many devices `torch.cuda` sees there: the GPUs of an NVIDIA or ROCm host, none elsewhere."""
        return self.gpus if self.kind in CUDA_API_KINDS else 0

    def describe(self) -> str:
        """`rocm, 8 GPU(s), gfx950` (what is known)."""
        count = f"{self.gpus} GPU(s)" if self.gpus is not None else "GPUs not counted"
        parts = [self.kind, count if self.kind not in ("cpu", "macos", "windows") else "", self.arch]
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True, kw_only=True)
class RunnerPlatform:
    """The operating system and CPU of a runner as its labels say (`matrix/data/runner_labels.toml`): `os` as
    Python's `sys.platform` spells it (`linux`, `win32`, `darwin`), `machine` as `platform.machine()` does on it
    (`x86_64`, `aarch64`); "" where the labels do not say (or two of them disagree)."""

    os: str = ""
    machine: str = ""
    avx2: bool = False  # the CPU has AVX2 (or AVX-512), as the label's source says
    avx512: bool = False  # the CPU has AVX-512 F/BW/DQ/VL (oneDNN's avx512_core), as the label's source says
    labels: tuple[str, ...] = ()

    def describe(self) -> str:
        """`linux x86_64 (linux.4xlarge)`, or what is known of it."""
        known = " ".join(p for p in (self.os, self.machine) if p) or "an unknown platform"
        return f"{known} ({', '.join(self.labels)})" if self.labels else known


@dataclass(frozen=True, kw_only=True)
class ScheduleEntry:
    """One thing CI runs: what it selects, where (labels as written and the profiles they resolve to), its
    environment, when it runs, the assumptions made to read it statically, and where it was read."""

    selection: Selection
    labels: tuple[str, ...]
    profiles: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    gates: tuple[Gate, ...] = (Gate.ALWAYS,)
    assumptions: tuple[str, ...] = ()
    origin: Origin
    # Known runners without a CUDA profile the labels name (a label pack's ROCm, XPU, NPU or macOS host): the
    # entry runs there, and no guard is judged there.
    other_runners: tuple[str, ...] = ()
    # Set when the command runs inside a container the job started: `env` is then the container's, not the job's.
    container: Container | None = None
    # What the job installs where the command runs (its base, distributions, versions), read from its steps;
    # None where no job's steps were read (a declared schedule, Buildkite).
    environment: JobEnvironment | None = None
    # What the runner of `other_runners` is, as far as its labels say (set only when no profile is named).
    hardware: RunnerHardware | None = None
    # Names the command's environment certainly lacks though the runner may set them (`unset X`, `env -u X`,
    # `export -n X` before it); "*" after `env -i`: every name outside `env`.
    unset: tuple[str, ...] = ()

    @property
    def env_map(self) -> Mapping[str, str]:
        return dict(self.env)


@dataclass(frozen=True, kw_only=True)
class UnreadJob:
    """A CI job or step that may run tests but could not be read statically: listed, never dropped silently.
    `reach` bounds what it could run when its text still says so (the literal paths of `pytest tests/a -k "$F"`,
    the test file a `python tests/test_x.py` step runs): repository-relative files or folders; None when nothing
    bounds it, and then every test may be run by it."""

    origin: Origin
    reason: str
    reach: tuple[str, ...] | None = None
    # The runner profiles it runs on when its job's `runs-on` is read (an unread step of a read job); None when
    # not known. A test whose guard skips on all of them is not run by it, whatever it selects.
    runners: tuple[str, ...] | None = None

    def may_run(self, path: str) -> bool:
        """Whether a test file at repository-relative `path` is within what this entry could run."""
        if self.reach is None:
            return True
        return any(within(path, folder) for folder in self.reach)


def merged_unread(jobs: Sequence[UnreadJob]) -> tuple[UnreadJob, ...]:
    """Unread entries, one per (origin, reason, reach) in first-seen order: the legs of a job's matrix that meet
    the same unread step give one entry, on the runners of them all (unknown when one leg's is)."""
    found: dict[tuple[Origin, str, tuple[str, ...] | None], UnreadJob] = {}
    for job in jobs:
        key = (job.origin, job.reason, job.reach)
        seen = found.get(key)
        if seen is None:
            found[key] = job
        elif seen.runners != job.runners:
            both = None if seen.runners is None or job.runners is None else tuple(dict.fromkeys((*seen.runners, *job.runners)))
            found[key] = UnreadJob(origin=seen.origin, reason=seen.reason, reach=seen.reach, runners=both)
    return tuple(found.values())


def within(path: str, folder: str) -> bool:
    """Whether repository-relative `path` is `folder` or lies under it (`.` holds everything)."""
    folder = folder.rstrip("/")
    return folder in (".", "") or path == folder or path.startswith(folder + "/")


def unread_entry(
    origin: Origin, reason: str, reach: Sequence[str] | None = None, runners: tuple[str, ...] | None = None
) -> UnreadJob:
    """An unread entry; one its text bounds says so in its reason, so every report shows which paths it could run."""
    if reach is None:
        return UnreadJob(origin=origin, reason=reason, runners=runners)
    shown = ", ".join(reach[:8]) + (f" and {len(reach) - 8} more" if len(reach) > 8 else "")
    said = f"{reason}; it can run only tests under {shown}"
    return UnreadJob(origin=origin, reason=said, reach=tuple(reach), runners=runners)


@dataclass(frozen=True, kw_only=True)
class UnknownLabel:
    """A runner label no profile knows (nor lists as a former label), with the nearest profile names."""

    label: str
    origin: Origin
    nearest: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """Everything read from a repository's CI: entries, the jobs that could not be read, unknown labels, and the
    files read (so a user can check what the audit believes before trusting a verdict)."""

    entries: tuple[ScheduleEntry, ...] = ()
    unread: tuple[UnreadJob, ...] = ()
    unknown_labels: tuple[UnknownLabel, ...] = ()
    sources: tuple[str, ...] = field(default=())
    # Jobs that may run tests but that GitHub never starts (a `needs:` on a skipped job, a matrix of no
    # combination), each with why: listed, so "not in the schedule" is never a silent guess.
    not_run: tuple[UnreadJob, ...] = ()
    # Environment-variable-like names the CI files mention anywhere (workflows, the scripts they run): a name
    # outside this set and outside an entry's env is unset in that job; a name inside it may be set at run time.
    ci_names: tuple[str, ...] = ()

    @classmethod
    def merge(cls, schedules: Sequence[Schedule]) -> Schedule:
        """One schedule of several read from different sources (workflows, declared files, Buildkite)."""
        return cls(
            entries=tuple(e for s in schedules for e in s.entries),
            unread=tuple(u for s in schedules for u in s.unread),
            unknown_labels=tuple(u for s in schedules for u in s.unknown_labels),
            sources=tuple(dict.fromkeys(x for s in schedules for x in s.sources)),
            ci_names=tuple(sorted({n for s in schedules for n in s.ci_names})),
            not_run=tuple(u for s in schedules for u in s.not_run),
        )

    def suite_entries(self, suite: str, hw: str, nightly: bool) -> tuple[ScheduleEntry, ...]:
        """Entries that run sglang registrations of `suite` on `hw` with this nightly flag (run_suite.py rules)."""
        return tuple(e for e, sel in self._by_suite.get(suite, ()) if (sel.hw is None or sel.hw == hw) and sel.nightly == nightly)

    @cached_property
    def _by_suite(self) -> dict[str, tuple[tuple[ScheduleEntry, SuiteSelection], ...]]:
        """The suite entries by suite name, in schedule order: the guard audit asks once per registration (26,000
        times on sglang's July tree), and a scan of every entry each time was a fifth of its cold CPU."""
        found: dict[str, list[tuple[ScheduleEntry, SuiteSelection]]] = {}
        for e in self.entries:
            if isinstance(e.selection, SuiteSelection):
                found.setdefault(e.selection.suite, []).append((e, e.selection))
        return {suite: tuple(entries) for suite, entries in found.items()}

    def pytest_entries(self) -> tuple[ScheduleEntry, ...]:
        return tuple(e for e in self.entries if isinstance(e.selection, PytestSelection))


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """What a command reader knows about the step a command line came from."""

    working_dir: str
    env: Mapping[str, str]
    origin: Origin


class CommandReader(Protocol):
    """Turns one shell command line (already split into words, environment prefixes removed) into selections.

    The GitHub Actions walker hands every command of every `run:` step (and of the shell scripts they call) to
    each reader; `run_suite.py` and `pytest` are two readers. A reader that does not recognise the command
    returns nothing.
    """

    def selections(self, words: Sequence[str], context: StepContext) -> Iterable[Selection]: ...


class UnreadableCommand(Exception):
    """Raised by a CommandReader that recognises a command it cannot read statically (a suite given by an
    expression); the walker records it as an `UnreadJob` with this reason instead of dropping it."""

    def __init__(self, reason: str, reach: tuple[str, ...] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reach = reach  # the paths the command could still run, when its words bound them (`UnreadJob.reach`)
