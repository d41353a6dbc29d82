"""The places a repository's CI says what it runs, each a small strategy behind `ScheduleSource` (the edge: files
are read here): its GitHub workflows (with the scripts their steps run, Makefiles, Modal, tox and nox files), a
declared schedule TOML, a Buildkite test-area file. `load.load_schedule` reads the ones a command names and merges
them with `Schedule.merge`, so every command sees one schedule read one way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from matrix.core.errors import ConfigError
from matrix.core.profile import RunnerProfile
from matrix.core.textfiles import read_text
from matrix.schedule.model import CommandReader, Schedule, UnreadJob

if TYPE_CHECKING:
    from matrix.schedule.services.declared import Declared

__all__ = ["BuildkiteFile", "DeclaredFile", "GithubWorkflows", "ScheduleSource", "declared_markers"]


class ScheduleSource(Protocol):
    """One place CI says what it runs: read into a schedule with the runner profiles and the command readers."""

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule: ...


@dataclass(frozen=True, kw_only=True)
class GithubWorkflows:
    """The workflows under `root` (a repository root or its `.github/workflows`); with `follow_scripts` the shell
    scripts, make targets, Modal functions and tox/nox sessions steps run (inside the repository) are read too, and
    named among the files read; with `cache_dir` a schedule read before from the same files is reused. The CI
    files of other services in the repository (GitLab CI, Jenkins, ...) are listed as unread jobs that may run any
    test (`matrix.schedule.services.external_ci`), except those in `given` (resolved paths another source reads)."""

    root: Path
    follow_scripts: bool = False
    cache_dir: Path | None = None
    given: frozenset[Path] = frozenset()

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule:
        from matrix.schedule.files import workflow_files
        from matrix.schedule.load import TreeLoader

        if self.cache_dir is not None and not self.follow_scripts:
            return self._cached(runners, readers, self.cache_dir)
        from matrix.schedule.github.walk import read_github  # the walker: only a run that reads workflows loads it

        repo = workflow_files(self.root)[0]
        scripts = TreeLoader(repo) if self.follow_scripts else None
        schedule = _with_unread(read_github(self.root, readers, runners, scripts=scripts), self._other_ci(repo))
        if scripts is not None and scripts.read:  # "files read" names the scripts, Makefiles and Modal files too
            schedule = replace(schedule, sources=tuple(dict.fromkeys((*schedule.sources, *scripts.read))))
        return schedule

    def _other_ci(self, repo: Path) -> tuple[UnreadJob, ...]:
        from matrix.schedule.services.external_ci import other_ci_files

        return tuple(u for u in other_ci_files(repo) if (repo / u.origin.file).resolve() not in self.given)

    def _cached(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...], cache_dir: Path) -> Schedule:
        from matrix.schedule.cache import cached, schedule_key
        from matrix.schedule.files import ci_script_files, container_files, workflow_files
        from matrix.schedule.github.local_actions import local_action_files
        from matrix.schedule.runner_configs import CANDIDATES

        repo, files = workflow_files(self.root)
        others = self._other_ci(repo)
        inputs = [*files, *(repo / c for c in CANDIDATES if (repo / c).is_file()), *ci_script_files(repo), *container_files(repo)]
        # The other services' CI files are named in the key (a folder by its name only): one that appears or goes
        # gives another key.
        inputs += [repo / u.origin.file for u in others if (repo / u.origin.file).is_file()]
        inputs += local_action_files(repo, [read_text(f, ConfigError) for f in files])  # the composite actions used
        key = schedule_key(inputs, repo, runners, ",".join(type(r).__name__ for r in readers))
        if any((repo / u.origin.file).is_dir() for u in others):
            key = schedule_key([], repo, runners, f"{key}:" + ",".join(u.origin.file for u in others))

        def read() -> Schedule:
            from matrix.schedule.github.walk import read_github  # only when the cache has no schedule for these files

            return _with_unread(read_github(self.root, readers, runners), others)

        schedule = cached(cache_dir, key, read)
        keyed = {path.relative_to(repo).as_posix() for path in inputs if path.is_relative_to(repo)}
        if not keyed.issuperset(schedule.sources):
            # The walk read a file the key did not name (a local action found where the key's search did not look):
            # a schedule stored under this key may be stale, so it is read again, and not fingerprinted.
            return read()
        return schedule


def _with_unread(schedule: Schedule, unread: tuple[UnreadJob, ...]) -> Schedule:
    return replace(schedule, unread=(*schedule.unread, *unread)) if unread else schedule


@dataclass(frozen=True, kw_only=True)
class DeclaredFile:
    """A declared schedule TOML (`ci/schedules/*.toml`, `--schedule-file`); the scripts it names are read from the
    checkout at `root`."""

    path: Path
    root: Path

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule:
        from matrix.schedule.load import TreeLoader
        from matrix.schedule.services.declared import declared_schedule

        return declared_schedule(_parse(self.path), runners, TreeLoader(self.root), readers)


def declared_markers(paths: Sequence[Path]) -> dict[str, str]:
    """The marker conditions the declared files give (conftest hooks that turn a marker into a skip), later files
    over earlier ones."""
    markers: dict[str, str] = {}
    for path in paths:
        markers.update(_parse(path).markers)
    return markers


def _parse(path: Path) -> Declared:
    from matrix.core.tomlfields import read_toml_file
    from matrix.schedule.services.declared import parse_declared

    return parse_declared(read_toml_file(path), str(path))


@dataclass(frozen=True, kw_only=True)
class BuildkiteFile:
    """A Buildkite test-area YAML (vLLM `.buildkite/test_areas/*.yaml`), named by its path under `root`."""

    path: Path
    root: Path

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule:
        from matrix.schedule.services.buildkite import read_test_area
        from matrix.schedule.yamldoc import MAX_BYTES, load_yaml

        text = read_text(self.path, ConfigError, limit=MAX_BYTES)
        data = load_yaml(text, str(self.path))  # the workflows' bounded reader: aliases, nesting and size
        try:
            name = self.path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            name = self.path.name
        return read_test_area(data, name, runners, readers, _step_lines(text))


def _step_lines(text: str) -> dict[str, int]:
    # The line of each step's `key:` (or `- label:`), for origins; YAML loaders drop positions.
    lines: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip().removeprefix("- ")
        for field in ("key:", "label:"):
            if stripped.startswith(field):
                lines.setdefault(stripped[len(field) :].strip().strip("\"'"), number)
    return lines
