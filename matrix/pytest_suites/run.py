"""The edge of the pytest audit: read a checkout (bounded), its declared schedule and Buildkite files, audit."""

from __future__ import annotations

import ast
import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from matrix.core.errors import ConfigError
from matrix.core.model import RunnerProfile
from matrix.core.textfiles import READ_FILES, BadPathError, OutsideTreeError, SpecialFileError, decode_python
from matrix.core.treefiles import TreeFiles
from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import FileAudit, ItemOutcome, PytestAuditReport, SuiteAuditor, combine
from matrix.pytest_suites.collect import Collector, TestFile
from matrix.pytest_suites.collect_errors import BrokenFile, with_collection_errors, with_missing_nodes
from matrix.pytest_suites.config import read_pytest_config
from matrix.pytest_suites.invocation import Invocation, read_invocation
from matrix.pytest_suites.joined import check_runners
from matrix.pytest_suites.packs import builtin_packs
from matrix.pytest_suites.rules import UNLISTED, discover, discover_with_conftests
from matrix.pytest_suites.workers import CollectingWorkers, can_fork
from matrix.schedule.commands.pytest_command import PytestCommandReader
from matrix.schedule.load import MAX_SOURCE_BYTES, load_schedule
from matrix.schedule.model import PytestSelection, Schedule
from matrix.schedule.sources import declared_markers


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


def read_schedule(inputs: AuditInput, profiles: Mapping[str, RunnerProfile]) -> Schedule:
    """Every schedule the inputs name: the checkout's GitHub workflows, declared files, Buildkite test areas."""
    return load_schedule(
        inputs.root,
        profiles,
        (PytestCommandReader(),),
        follow_scripts=True,
        workflows=inputs.workflows and has_workflows(inputs.root),
        schedule_files=inputs.schedule_files,
        buildkite_files=inputs.buildkite_files,
    )


# Why a file that is there was not read, when the OS refuses it (permissions): pytest's import of it fails.
UNREADABLE = "cannot be read"
# The texts a SourceLoader keeps (characters); past it files are read again when asked again.
MAX_KEPT_CHARS = 64 * 1024 * 1024


class SourceLoader:
    """Repository-relative path -> Python source text as the interpreter decodes it (BOM, coding cookie), or None;
    symlinks resolved and a target outside the checkout refused. Why a file was not read is kept, by path only."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.problems: dict[str, str] = {}
        self.files = TreeFiles(self.root)
        # Each answer, kept: the collector asks for a file's text to parse it, to see that it exists and whether
        # it says "skip", and the linker for a module; reading, resolving and decoding it once is enough.
        self.texts: dict[str, str | None] = {}
        self.kept = 0

    def __call__(self, path: str) -> str | None:
        if path in self.texts:
            return self.texts[path]
        text = self._load(path)
        if self.kept < MAX_KEPT_CHARS:
            self.texts[path] = text
            self.kept += len(text) if text is not None else 0
        return text

    def _load(self, path: str) -> str | None:
        try:
            data = self.files.read(path, MAX_SOURCE_BYTES)
        except OutsideTreeError:
            self.problems[path] = "a symlink to a file outside the audited tree; not read"
            return None
        except SpecialFileError as exc:
            self.problems[path] = f"is {exc.kind}, not a regular file; not read"
            return None
        except BadPathError:
            self.problems[path] = "its path holds a NUL byte; not read"
            return None
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            # pytest fails on a file it cannot read (a conftest or test file without read permission): named.
            self.problems[path] = f"{UNREADABLE} ({exc.strerror or type(exc).__name__})"
            return None
        if len(data) > MAX_SOURCE_BYTES:
            self.problems[path] = f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MiB; not read"
            return None
        try:
            return decode_python(data)
        except (ValueError, SyntaxError):
            self.problems[path] = "not Python source text (its encoding does not decode)"
            return None

    def problem(self, path: str) -> str | None:
        return self.problems.get(path)


def invocations(root: Path, schedule: Schedule) -> list[Invocation]:
    """Each pytest entry's command as pytest reads it in this checkout (configuration, addopts, PYTEST_ADDOPTS)."""
    out: list[Invocation] = []
    memo: dict[str, Any] = {}
    for entry in schedule.pytest_entries():
        assert isinstance(entry.selection, PytestSelection)
        installed = entry.environment.names() if entry.environment is not None else None
        out.append(read_invocation(root, entry.selection, entry.env_map, memo, installed=installed))
    return out


def run_audit(inputs: AuditInput, profiles: Mapping[str, RunnerProfile], jobs: int = 1) -> PytestAuditReport:
    """Collect the checkout's tests statically and audit them against its schedule (`jobs` processes)."""
    if not inputs.root.is_dir():
        raise ConfigError(f"{inputs.root}: not a folder")
    thresholds = gc.get_threshold()
    # The syntax trees of every file stay alive for the whole audit and hold no cycles; with the default
    # thresholds the collector rescans them about a dozen times, half the audit's CPU on flashinfer's tests.
    # mypy sets the same thresholds for the same reason (mypy/build.py, `gc.set_threshold(200 * 1000, 30, 30)`).
    gc.set_threshold(200_000, 30, 30)
    try:
        return _run_audit(inputs, profiles, jobs)
    finally:
        gc.set_threshold(*thresholds)


def _run_audit(inputs: AuditInput, profiles: Mapping[str, RunnerProfile], jobs: int) -> PytestAuditReport:
    config = read_pytest_config(inputs.root)  # a configuration file pytest cannot read is one line, first
    markers = declared_markers(inputs.schedule_files)
    for marker, text in markers.items():
        try:
            ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError):
            raise ConfigError(f"marker {marker!r}: condition does not parse: {text!r}") from None
    load = SourceLoader(inputs.root)
    collector = Collector(load, config, builtin_packs(), markers)
    collector.problem = load.problem
    # Collection allocates millions of acyclic syntax-tree nodes that reference counting frees: the cyclic
    # collector's passes over them free nothing, so it is off while files are collected (the workers inherit
    # that), as in the guard audit's workers (registered_suite/tree.py).
    was_enabled = gc.isenabled()
    gc.disable()
    workers: CollectingWorkers | None = None
    try:
        if jobs > 1 and can_fork():
            # pytest's own discovery (testpaths, else the rootdir) is known before the schedule: the workers start
            # on it while the workflows are read.
            # Largest first, so that the workers finish together.
            early = sorted(discover(inputs.root, config), key=lambda p: -_size(inputs.root / p))
            if len(early) > 1:
                workers = CollectingWorkers(
                    jobs, collector=collector, early=early, profiles=profiles, installed=inputs.installed, join=inputs.join
                )
        schedule = read_schedule(inputs, profiles)
        check_runners(inputs.join, schedule)
        read = with_missing_nodes(invocations(inputs.root, schedule), collector.collect)
        problems: list[tuple[str, str]] = []
        paths, walked = discover_with_conftests(inputs.root, config, [a for i in read for a in i.args if i.runs], problems)
        for path in paths if workers is not None else ():
            READ_FILES.note_path(inputs.root / path, path)  # read by the workers: no output may replace it either
        conftests = unparsed(collector, sorted({*walked, *(c for p in paths for c in collector.conftest_chain(p))}))
        conftests += unlisted(problems)
        read = with_collection_errors(read, conftests, collector.conftest_ignores)
        auditor = SuiteAuditor(
            schedule, profiles, builtin_packs(), inputs.installed, read, join=inputs.join, project=collector.project
        )
        if workers is not None:
            done = workers.audit(paths, schedule, read)
        else:
            done = {p: auditor.audit_file(collector.collect(p)) for p in paths}
        # A test file that does not parse stops the commands that collect it: audited again with that known (rare).
        unread = [p for p in paths if any(f.finding.kind is GuardFindingKind.UNPARSABLE for f in done[p].findings)]
        torn = unparsed(collector, unread)
        again = with_collection_errors(read, torn, collector.conftest_ignores)
        if again != read:
            auditor = SuiteAuditor(
                schedule, profiles, builtin_packs(), inputs.installed, again, join=inputs.join, project=collector.project
            )
            done = {p: auditor.audit_file(collector.collect(p)) for p in paths}
    finally:
        if workers is not None:
            workers.close()
        if was_enabled:
            gc.enable()
    broken = [_at_line(auditor.audit_file(TestFile(path=c.path, tests=(), error=_said(c))), c.line) for c in conftests]
    stopped = tuple(f"{path}: {why}" for path, why in problems if path not in {c.path for c in conftests})
    return combine(str(inputs.root), [*(done[p] for p in paths), *broken], schedule, notes=(*auditor.not_run, *stopped))


def item_outcomes(inputs: AuditInput, profiles: Mapping[str, RunnerProfile]) -> tuple[dict[str, ItemOutcome], tuple[str, ...]]:
    """Every collected test's outcome (node id -> outcome) and the files that could not be read or parsed."""
    config = read_pytest_config(inputs.root)
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
