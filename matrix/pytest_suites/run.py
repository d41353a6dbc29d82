"""The edge of the pytest audit: read a checkout (bounded), its declared schedule and Buildkite files, audit."""

from __future__ import annotations

import ast
import contextlib
import gc
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.core.errors import ConfigError
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import READ_FILES
from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import FileAudit, ItemOutcome, PytestAuditReport, SuiteAuditor, combine
from matrix.pytest_suites.cache import (
    DISCOVERY,
    Discovery,
    Entry,
    Frame,
    ResultCache,
    Stored,
    frame_key,
    invocations_digest,
    tool_key,
)
from matrix.pytest_suites.collect import Collector, TestFile
from matrix.pytest_suites.collect_errors import BrokenFile, with_collection_errors, with_missing_nodes
from matrix.pytest_suites.config import PytestConfig, read_pytest_config
from matrix.pytest_suites.invocation import Invocation, read_invocation
from matrix.pytest_suites.loader import MAX_KEPT_CHARS, UNREADABLE, SourceLoader
from matrix.pytest_suites.packs import builtin_packs
from matrix.pytest_suites.recorded import Recorder, manifest, recording, unchanged
from matrix.pytest_suites.rules import UNLISTED, discover, discover_with_conftests
from matrix.pytest_suites.tracked import TrackedCollector
from matrix.pytest_suites.verdicts import PytestFinding
from matrix.schedule.model import PytestSelection, Schedule

if TYPE_CHECKING:
    from matrix.pytest_suites.workers import CollectingWorkers

__all__ = ["MAX_KEPT_CHARS", "UNREADABLE", "AuditInput", "SourceLoader", "item_outcomes", "run_audit"]


@dataclass(frozen=True, kw_only=True)
class AuditInput:
    root: Path
    schedule_files: tuple[Path, ...] = ()
    buildkite_files: tuple[Path, ...] = ()
    installed: frozenset[str] = frozenset()
    workflows: bool = True  # read ROOT's .github/workflows (and the scripts their steps run) when it has them
    join: tuple[str, ...] = ()  # runners whose runs are joined (`--junit`): the report carries each test's verdict there


def has_workflows(root: Path) -> bool:
    return (root / ".github" / "workflows").is_dir()


# The readers of CI files, the join and the worker processes are imported where a run needs them: a warm run, whose
# frame and audits come from the cache, reads no CI file, joins nothing and starts no worker.


def read_schedule(inputs: AuditInput, profiles: Mapping[str, RunnerProfile]) -> Schedule:
    """Every schedule the inputs name: the checkout's GitHub workflows, declared files, Buildkite test areas."""
    from matrix.schedule.commands.pytest_command import PytestCommandReader
    from matrix.schedule.load import load_schedule

    return load_schedule(
        inputs.root,
        profiles,
        (PytestCommandReader(),),
        follow_scripts=True,
        workflows=inputs.workflows and has_workflows(inputs.root),
        schedule_files=inputs.schedule_files,
        buildkite_files=inputs.buildkite_files,
    )


def invocations(root: Path, schedule: Schedule) -> list[Invocation]:
    """Each pytest entry's command as pytest reads it in this checkout (configuration, addopts, PYTEST_ADDOPTS)."""
    out: list[Invocation] = []
    memo: dict[str, Any] = {}
    for entry in schedule.pytest_entries():
        assert isinstance(entry.selection, PytestSelection)
        installed = entry.environment.names() if entry.environment is not None else None
        out.append(read_invocation(root, entry.selection, entry.env_map, memo, installed=installed))
    return out


def run_audit(
    inputs: AuditInput, profiles: Mapping[str, RunnerProfile], jobs: int = 1, *, cache_dir: Path | None = None
) -> PytestAuditReport:
    """Collect the checkout's tests statically and audit them against its schedule (`jobs` processes); with
    `cache_dir`, what an earlier run read and found is used where every file it read is unchanged (cache.py)."""
    if not inputs.root.is_dir():
        raise ConfigError(f"{inputs.root}: not a folder")
    thresholds = gc.get_threshold()
    # The syntax trees of every file stay alive for the whole audit and hold no cycles; with the default
    # thresholds the collector rescans them about a dozen times, half the audit's CPU on flashinfer's tests.
    # mypy sets the same thresholds for the same reason (mypy/build.py, `gc.set_threshold(200 * 1000, 30, 30)`).
    gc.set_threshold(200_000, 30, 30)
    try:
        return _run_audit(inputs, profiles, jobs, cache_dir)
    finally:
        gc.set_threshold(*thresholds)


def _run_audit(inputs: AuditInput, profiles: Mapping[str, RunnerProfile], jobs: int, cache_dir: Path | None) -> PytestAuditReport:
    cache = _open_cache(inputs, profiles, cache_dir)
    stored = _stored_frame(cache)
    load = SourceLoader(inputs.root, fingerprints=cache is not None)
    # Collection allocates millions of acyclic syntax-tree nodes that reference counting frees: the cyclic
    # collector's passes over them free nothing, so it is off while files are collected (the workers inherit
    # that), as in the guard audit's workers (registered_suite/tree.py).
    was_enabled = gc.isenabled()
    gc.disable()
    workers: CollectingWorkers | None = None
    try:
        if stored is None:
            frame, collector, workers = _read_frame(inputs, profiles, load, cache, jobs)
        else:
            frame, run = stored
            collector = _collector(load, frame, cache)
            if cache is not None:
                cache.open_entries(run)
        schedule = frame.schedule
        read = with_missing_nodes(frame.invocations, collector.collect)
        paths, walked, problems = _discover(inputs.root, frame.config, [a for i in read for a in i.args if i.runs], cache)
        chains = sorted({*walked, *(c for p in paths for c in collector.conftest_chain(p))})
        conftests = [*_broken_conftests(collector, chains, cache), *unlisted(problems)]
        read = with_collection_errors(read, conftests, collector.conftest_ignores)
        results = _Results(inputs, profiles, schedule, collector, cache)
        valid = results.stored(paths)
        misses = [p for p in paths if p not in valid]
        if workers is None and len(misses) >= PARALLEL_MISSES and jobs > 1 and _can_fork():
            workers = _workers(jobs, collector, sorted(misses, key=lambda p: -_size(inputs.root / p)), profiles, inputs)
        for path in misses if workers is not None else ():
            READ_FILES.note_path(inputs.root / path, path)  # read by the workers: no output may replace it either
        done = results.compute(misses, read, workers)
        # A test file that does not parse stops the commands that collect it: audited again with that known (rare).
        torn = {e.broken.path: e.broken for e in valid.values() if e.broken is not None}
        torn |= {b.path: b for b in unparsed(collector, [p for p in misses if any(_unparsable(f) for f in done[p].findings)])}
        final = with_collection_errors(read, [torn[p] for p in paths if p in torn], collector.conftest_ignores)
        if final != read:
            done = results.compute(misses, final, None)
        done |= results.reused(valid, final)
    finally:
        if workers is not None:
            workers.close()
        if was_enabled:
            gc.enable()
    if cache is not None:
        cache.save()
    auditor = SuiteAuditor(
        schedule, profiles, builtin_packs(), inputs.installed, final, join=inputs.join, project=collector.project
    )
    broken = [_at_line(auditor.audit_file(TestFile(path=c.path, tests=(), error=_said(c))), c.line) for c in conftests]
    stopped = tuple(f"{path}: {why}" for path, why in problems if path not in {c.path for c in conftests})
    return combine(str(inputs.root), [*(done[p] for p in paths), *broken], schedule, notes=(*auditor.not_run, *stopped))


# Below this many files to audit, forking workers costs more than it saves (a warm run with a few files changed).
PARALLEL_MISSES = 48


def _unparsable(finding: PytestFinding) -> bool:
    return finding.finding.kind == GuardFindingKind.UNPARSABLE


def _open_cache(inputs: AuditInput, profiles: Mapping[str, RunnerProfile], folder: Path | None) -> ResultCache | None:
    if folder is None:
        return None
    key = frame_key(
        tool_key(),
        inputs.root,
        profiles,
        schedule_files=inputs.schedule_files,
        buildkite_files=inputs.buildkite_files,
        workflows=inputs.workflows,
        installed=inputs.installed,
        join=inputs.join,
    )
    return ResultCache(folder, key)


def _stored_frame(cache: ResultCache | None) -> tuple[Frame, str] | None:
    """The frame of an earlier run whose every recorded file, folder and probe is as it was then."""
    found = cache.load_frame() if cache is not None else None
    if found is None:
        return None
    frame, seen, run = found
    if not unchanged(seen):
        return None
    for item in seen:
        READ_FILES.note_path(item.path)  # read for the frame: no output may replace it
    return frame, run


def _collector(load: SourceLoader, frame: Frame, cache: ResultCache | None) -> Collector:
    kind = TrackedCollector if cache is not None else Collector
    collector = kind(load, frame.config, builtin_packs(), frame.markers)
    collector.problem = load.problem
    return collector


def _read_frame(
    inputs: AuditInput, profiles: Mapping[str, RunnerProfile], load: SourceLoader, cache: ResultCache | None, jobs: int
) -> tuple[Frame, Collector, CollectingWorkers | None]:
    """Read the configuration, the declared markers and the CI files, recording what was read when caching; the
    workers start on pytest's own discovery (known before the schedule) while the workflows are read."""
    from matrix.pytest_suites.joined import check_runners
    from matrix.schedule.sources import declared_markers

    with _recording(cache) as recorder:
        config = read_pytest_config(inputs.root)  # a configuration file pytest cannot read is one line, first
        markers = declared_markers(inputs.schedule_files)
        for marker, text in markers.items():
            try:
                ast.parse(text, mode="eval")
            except (SyntaxError, ValueError, RecursionError):
                raise ConfigError(f"marker {marker!r}: condition does not parse: {text!r}") from None
    collector = _collector(load, Frame(config=config, markers=markers, schedule=Schedule(), invocations=()), cache)
    workers = None
    if jobs > 1 and _can_fork():
        # Largest first, so that the workers finish together.
        early = sorted(discover(inputs.root, config), key=lambda p: -_size(inputs.root / p))
        if len(early) > 1:
            workers = _workers(jobs, collector, early, profiles, inputs)
    try:
        with _recording(cache, recorder) as recorder:
            schedule = read_schedule(inputs, profiles)
            check_runners(inputs.join, schedule)
            read = invocations(inputs.root, schedule)
    except BaseException:
        if workers is not None:
            workers.close()
        raise
    frame = Frame(config=config, markers=markers, schedule=schedule, invocations=tuple(read))
    if cache is not None and recorder is not None and not recorder.overflow:
        seen = manifest(recorder.touched.items(), since_ns=recorder.started_ns, opened=recorder.opened)
        run = cache.save_frame(frame, seen) if seen is not None else None
        cache.open_entries(run or "")
    return frame, collector, workers


@contextlib.contextmanager
def _recording(cache: ResultCache | None, recorder: Recorder | None = None) -> Iterator[Recorder | None]:
    if cache is None:
        yield None
        return
    with recording(ignore=(str(cache.folder),), recorder=recorder) as active:
        yield active


def _discover(
    root: Path, config: PytestConfig, named: list[str], cache: ResultCache | None
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...]]:
    """pytest's discovery (test files, the conftest.py files of the folders walked, the folders it could not list);
    with a cache, an earlier run's while every folder it listed and path it probed is as it was."""
    stored = cache.get_discovery(named) if cache is not None and cache.run else None
    if cache is not None and stored is not None and unchanged(stored.seen):
        cache.keep(DISCOVERY)
        return stored.paths, stored.walked, stored.problems
    problems: list[tuple[str, str]] = []
    with _recording(cache) as recorder:
        paths, walked = discover_with_conftests(root, config, named, problems)
    if cache is not None and cache.run and recorder is not None and not recorder.overflow:
        seen = manifest(recorder.touched.items(), since_ns=recorder.started_ns, opened=recorder.opened)
        if seen is not None:
            cache.put_discovery(named, Discovery(paths=paths, walked=walked, problems=tuple(problems), seen=seen))
    return paths, walked, tuple(problems)


def _can_fork() -> bool:
    from matrix.pytest_suites.workers import can_fork

    return can_fork()


def _workers(
    jobs: int, collector: Collector, early: list[str], profiles: Mapping[str, RunnerProfile], inputs: AuditInput
) -> CollectingWorkers:
    from matrix.pytest_suites.workers import CollectingWorkers

    return CollectingWorkers(
        jobs, collector=collector, early=early, profiles=profiles, installed=inputs.installed, join=inputs.join
    )


def _broken_conftests(collector: Collector, chains: Sequence[str], cache: ResultCache | None) -> list[BrokenFile]:
    """The conftest.py files pytest fails to import; each one's status is kept by its fingerprint when caching."""
    if cache is None or not isinstance(collector, TrackedCollector):
        return unparsed(collector, chains)
    out: list[BrokenFile] = []
    for path in chains:
        entry = cache.get(path)
        if entry is not None and entry.is_conftest and entry.reads_hold(collector.source.holds):
            cache.keep(path)
            found = [entry.broken] if entry.broken is not None else []
        else:
            found = unparsed(collector, [path])
            reads = {path: collector.source.fingerprint(path)}
            cache.put(path, Entry(audit=None, reads=reads, invocations="", broken=found[0] if found else None))
        out.extend(found)
    return out


class _Results:
    """The run's per-file audits: reused from the cache where every file one read is unchanged and the CI commands
    are those it was judged under, else collected and audited (in the workers when they run), and stored."""

    def __init__(
        self,
        inputs: AuditInput,
        profiles: Mapping[str, RunnerProfile],
        schedule: Schedule,
        collector: Collector,
        cache: ResultCache | None,
    ):
        self.inputs = inputs
        self.profiles = profiles
        self.schedule = schedule
        self.collector = collector
        self.cache = cache

    def stored(self, paths: Sequence[str]) -> dict[str, Stored]:
        """The stored entries whose every read file is unchanged."""
        out: dict[str, Stored] = {}
        cache, collector = self.cache, self.collector
        if cache is None or not isinstance(collector, TrackedCollector):
            return out
        holds = collector.source.holds
        for path in paths:
            entry = cache.get(path)
            if entry is not None and not entry.is_conftest and entry.reads_hold(holds):
                out[path] = entry
        return out

    def reused(self, valid: Mapping[str, Stored], read: Sequence[Invocation]) -> dict[str, FileAudit]:
        """The audits of `valid` under the commands `read`: stored ones judged under them, the others again."""
        if not valid or self.cache is None:
            return {}
        digest = invocations_digest(read)
        done: dict[str, FileAudit] = {}
        for path, entry in valid.items():
            audit = entry.audit() if entry.invocations == digest else None
            if audit is not None:
                done[path] = audit
                self.cache.keep(path)
        return done | self.compute([p for p in valid if p not in done], read, None)

    def compute(
        self, paths: Sequence[str], read: Sequence[Invocation], workers: CollectingWorkers | None
    ) -> dict[str, FileAudit]:
        """Audit `paths` under the commands `read` (stored when caching)."""
        if not paths:
            return {}
        inputs, collector = self.inputs, self.collector
        auditor = SuiteAuditor(
            self.schedule, self.profiles, builtin_packs(), inputs.installed, read, join=inputs.join, project=collector.project
        )
        if workers is not None:
            done = workers.audit(paths, self.schedule, read)
        else:
            done = {}
            for path in paths:
                if isinstance(collector, TrackedCollector):
                    collector.track(path)
                    auditor.forget_evaluations()
                done[path] = auditor.audit_file(collector.collect(path))
            if isinstance(collector, TrackedCollector):
                collector.untrack()
        if self.cache is not None and isinstance(collector, TrackedCollector):
            digest = invocations_digest(read)
            reads = workers.reads if workers is not None else {p: collector.reads(p) for p in paths}
            for path in paths:
                found = unparsed(collector, [path]) if any(_unparsable(f) for f in done[path].findings) else []
                if path in reads:
                    entry = Entry(audit=done[path], reads=reads[path], invocations=digest, broken=found[0] if found else None)
                    self.cache.put(path, entry)
        return done


def item_outcomes(inputs: AuditInput, profiles: Mapping[str, RunnerProfile]) -> tuple[dict[str, ItemOutcome], tuple[str, ...]]:
    """Every collected test's outcome (node id -> outcome) and the files that could not be read or parsed."""
    config = read_pytest_config(inputs.root)
    from matrix.schedule.sources import declared_markers

    schedule, markers = read_schedule(inputs, profiles), declared_markers(inputs.schedule_files)
    load = SourceLoader(inputs.root)
    collector = Collector(load, config, builtin_packs(), markers)
    collector.problem = load.problem
    read = with_missing_nodes(invocations(inputs.root, schedule), collector.collect)
    problems: list[tuple[str, str]] = []
    paths, walked = discover_with_conftests(inputs.root, config, [a for i in read for a in i.args if i.runs], problems)
    chains = sorted({*walked, *(c for p in paths for c in collector.conftest_chain(p))})
    stops = [*unparsed(collector, [*chains, *paths]), *unlisted(problems)]
    read = with_collection_errors(read, stops, collector.conftest_ignores)
    auditor = SuiteAuditor(schedule, profiles, builtin_packs(), inputs.installed, read, project=collector.project)
    out: dict[str, ItemOutcome] = {}
    broken: list[str] = []
    for path in paths:
        collected = collector.collect(path)
        if collected.error is not None:
            broken.append(path)
        out.update(auditor.outcomes(collected))
    return out, tuple(broken)


def _at_line(audit: FileAudit, line: int) -> FileAudit:
    """A broken conftest's finding, at the line its parse stopped."""
    return replace(audit, findings=tuple(replace(f, finding=replace(f.finding, line=line)) for f in audit.findings))


def _said(broken: BrokenFile) -> str:
    return broken.why if broken.problem == "does not parse" else f"{broken.problem} ({broken.why})"


def unlisted(problems: Sequence[tuple[str, str]]) -> list[BrokenFile]:
    """The folders discovery could not list: pytest fails on each as it would on a broken conftest there."""
    return [
        BrokenFile(path=path, why=why.removeprefix(f"{UNLISTED} (").removesuffix(")"), problem=UNLISTED, folder=True)
        for path, why in problems
        if why.startswith(UNLISTED)
    ]


def unparsed(collector: Collector, paths: Sequence[str]) -> list[BrokenFile]:
    """Those of `paths` that are read but do not parse, with the line pytest's error would name; and those that are
    there but cannot be read (pytest's import of them fails the same way)."""
    out: list[BrokenFile] = []
    for path in paths:
        parsed = collector.parsed(path)
        problem = collector.problem(path) if parsed is None else None
        if problem is not None and problem.startswith(UNREADABLE):
            out.append(BrokenFile(path=path, why=problem.removeprefix(UNREADABLE).strip(" ()"), problem=UNREADABLE))
        elif parsed is not None and parsed.tree is None:
            error = parsed.analysis.syntax_error or "does not parse"
            line = parsed.analysis.error_line
            out.append(BrokenFile(path=path, why=f"line {line}: {error}", line=line))
    return out


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
