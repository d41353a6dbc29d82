"""The edge of the pytest audit: read a checkout (bounded), its declared schedule and Buildkite files, audit."""

from __future__ import annotations

import ast
import multiprocessing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from matrix.core.errors import ConfigError
from matrix.core.model import RunnerProfile
from matrix.core.textfiles import read_text
from matrix.core.tomlfields import read_toml_file
from matrix.pytest_suites.audit import FileAudit, PytestAuditReport, SuiteAuditor, combine
from matrix.pytest_suites.collect import Collector
from matrix.pytest_suites.config import discover, read_pytest_config
from matrix.pytest_suites.packs import builtin_packs
from matrix.schedule.buildkite import read_test_area
from matrix.schedule.declared import declared_schedule, parse_declared
from matrix.schedule.model import Schedule
from matrix.schedule.pytest_command import PytestCommandReader

MAX_SOURCE_BYTES = 4 * 1024 * 1024
MAX_YAML_BYTES = 2 * 1024 * 1024


class TreeLoader:
    """Repository-relative path -> text, or None: outside the root, missing, oversized or not UTF-8."""

    def __init__(self, root: Path):
        self.root = root.resolve()

    def __call__(self, path: str) -> str | None:
        if path.startswith("/") or ".." in path.split("/"):
            return None
        target = self.root / path
        try:
            if not target.is_file() or target.stat().st_size > MAX_SOURCE_BYTES:
                return None
            return target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None


@dataclass(frozen=True, kw_only=True)
class AuditInput:
    root: Path
    schedule_files: tuple[Path, ...] = ()
    buildkite_files: tuple[Path, ...] = ()
    installed: frozenset[str] = frozenset()


def _merge(schedules: Sequence[Schedule]) -> Schedule:
    return Schedule(
        entries=tuple(e for s in schedules for e in s.entries),
        unread=tuple(u for s in schedules for u in s.unread),
        unknown_labels=tuple(u for s in schedules for u in s.unknown_labels),
        sources=tuple(x for s in schedules for x in s.sources),
    )


def _step_lines(text: str) -> dict[str, int]:
    # The line of each step's `key:` (or `- label:`), for origins; YAML loaders drop positions.
    lines: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip().removeprefix("- ")
        for field in ("key:", "label:"):
            if stripped.startswith(field):
                lines.setdefault(stripped[len(field) :].strip().strip("\"'"), number)
    return lines


def read_schedule(inputs: AuditInput, profiles: Mapping[str, RunnerProfile]) -> tuple[Schedule, dict[str, str]]:
    """Every schedule the inputs name, and the declared marker conditions."""
    load = TreeLoader(inputs.root)
    readers = (PytestCommandReader(),)
    schedules: list[Schedule] = []
    markers: dict[str, str] = {}
    for path in inputs.schedule_files:
        declared = parse_declared(read_toml_file(path), str(path))
        markers.update(dict(declared.markers))
        schedules.append(declared_schedule(declared, profiles, load, readers))
    for path in inputs.buildkite_files:
        text = read_text(path, ConfigError, limit=MAX_YAML_BYTES)
        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
            raise ConfigError(f"{path}: malformed YAML: {str(exc).splitlines()[0]}") from None
        try:
            name = path.resolve().relative_to(inputs.root.resolve()).as_posix()
        except ValueError:
            name = path.name
        schedules.append(read_test_area(data, name, profiles, readers, _step_lines(text)))
    return _merge(schedules), markers


_STATE: dict[str, object] = {}


def _audit_path(path: str) -> tuple[str, FileAudit]:
    collector = _STATE["collector"]
    auditor = _STATE["auditor"]
    assert isinstance(collector, Collector) and isinstance(auditor, SuiteAuditor)
    return path, auditor.audit_file(collector.collect(path))


def run_audit(inputs: AuditInput, profiles: Mapping[str, RunnerProfile], jobs: int = 1) -> PytestAuditReport:
    """Collect the checkout's tests statically and audit them against its schedule (`jobs` processes)."""
    if not inputs.root.is_dir():
        raise ConfigError(f"{inputs.root}: not a folder")
    schedule, markers = read_schedule(inputs, profiles)
    for marker, text in markers.items():
        try:
            ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, RecursionError):
            raise ConfigError(f"marker {marker!r}: condition does not parse: {text!r}") from None
    config = read_pytest_config(inputs.root)
    load = TreeLoader(inputs.root)
    _STATE["collector"] = Collector(load, config, builtin_packs(), markers)
    _STATE["auditor"] = SuiteAuditor(schedule, profiles, builtin_packs(), inputs.installed)
    paths = discover(inputs.root, config)
    try:
        if jobs > 1 and len(paths) > 1 and "fork" in multiprocessing.get_all_start_methods():
            # Largest files first so the workers finish together; fork shares the schedule and packs.
            ordered = sorted(paths, key=lambda p: -_size(inputs.root / p))
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                done = dict(pool.imap_unordered(_audit_path, ordered, chunksize=2))
        else:
            done = dict(_audit_path(p) for p in paths)
    finally:
        _STATE.clear()
    return combine(str(inputs.root), [done[p] for p in paths], schedule)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
