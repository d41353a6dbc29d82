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
from matrix.schedule.model import CommandReader, Schedule

if TYPE_CHECKING:
    from matrix.schedule.declared import Declared

__all__ = ["BuildkiteFile", "DeclaredFile", "GithubWorkflows", "ScheduleSource", "declared_markers"]


class ScheduleSource(Protocol):
    """One place CI says what it runs: read into a schedule with the runner profiles and the command readers."""

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule: ...


@dataclass(frozen=True, kw_only=True)
class GithubWorkflows:
    """The workflows under `root` (a repository root or its `.github/workflows`); with `follow_scripts` the shell
    scripts, make targets, Modal functions and tox/nox sessions steps run (inside the repository) are read too, and
    named among the files read; with `cache_dir` a schedule read before from the same files is reused."""

    root: Path
    follow_scripts: bool = False
    cache_dir: Path | None = None

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule:
        from matrix.schedule.files import workflow_files
        from matrix.schedule.load import TreeLoader

        if self.cache_dir is not None and not self.follow_scripts:
            return self._cached(runners, readers, self.cache_dir)
        from matrix.schedule.github import read_github  # the walker: only a run that reads workflows loads it

        scripts = TreeLoader(workflow_files(self.root)[0]) if self.follow_scripts else None
        schedule = read_github(self.root, readers, runners, scripts=scripts)
        if scripts is not None and scripts.read:  # "files read" names the scripts, Makefiles and Modal files too
            schedule = replace(schedule, sources=tuple(dict.fromkeys((*schedule.sources, *scripts.read))))
        return schedule

    def _cached(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...], cache_dir: Path) -> Schedule:
        from matrix.schedule.cache import cached, schedule_key
        from matrix.schedule.files import ci_script_files, container_files, workflow_files
        from matrix.schedule.runner_configs import CANDIDATES

        repo, files = workflow_files(self.root)
        inputs = [*files, *(repo / c for c in CANDIDATES if (repo / c).is_file()), *ci_script_files(repo), *container_files(repo)]
        key = schedule_key(inputs, repo, runners, ",".join(type(r).__name__ for r in readers))

        def read() -> Schedule:
            from matrix.schedule.github import read_github  # only when the cache has no schedule for these files

            return read_github(self.root, readers, runners)

        return cached(cache_dir, key, read)


@dataclass(frozen=True, kw_only=True)
class DeclaredFile:
    """A declared schedule TOML (`ci/schedules/*.toml`, `--schedule-file`); the scripts it names are read from the
    checkout at `root`."""

    path: Path
    root: Path

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule:
        from matrix.schedule.declared import declared_schedule
        from matrix.schedule.load import TreeLoader

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
    from matrix.schedule.declared import parse_declared

    return parse_declared(read_toml_file(path), str(path))


@dataclass(frozen=True, kw_only=True)
class BuildkiteFile:
    """A Buildkite test-area YAML (vLLM `.buildkite/test_areas/*.yaml`), named by its path under `root`."""

    path: Path
    root: Path

    def read(self, runners: Mapping[str, RunnerProfile], readers: tuple[CommandReader, ...]) -> Schedule:
        from matrix.schedule.buildkite import read_test_area
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
