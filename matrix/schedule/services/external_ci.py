"""CI that runs outside what the schedule readers read: the configuration files of other CI services in the
repository, and workflow steps that hand the run to another service (`matrix/data/external_ci.toml`, each entry
with its source). Each becomes an `UnreadJob` that may run any test, named by its file and line: a test no read
entry selects is then undetermined, never unscheduled, since "cannot read" must not become "does not run".

A hand-off counts whatever starts its workflow (a pull-request comment such as `/te-ci` starts CI as surely as a
push), so workflows are scanned here as written, apart from the walker's reading of events and conditions.
"""

from __future__ import annotations

import functools
import posixpath
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.schedule.github.context import Workflow
from matrix.schedule.github.workflow_doc import key_lines
from matrix.schedule.model import Origin, UnreadJob

__all__ = ["CiFile", "ExternalCi", "action_handoffs", "external_ci", "handoffs", "other_ci_files"]

# Files named per pattern, at most: a folder of hundreds of pipeline files still says "this CI exists" with a few.
MAX_NAMED = 8


@dataclass(frozen=True, kw_only=True)
class CiFile:
    """A CI configuration file by its path from the repository root (`*` within one folder; `/` last: a folder)."""

    pattern: str
    system: str
    source: str
    read_with: str = ""  # the flag that reads it, when one does


@dataclass(frozen=True, kw_only=True)
class ExternalCi:
    """The shipped pack: CI files, and the actions (`owner/name`, lowercased) and commands that hand a run on."""

    files: tuple[CiFile, ...]
    actions: Mapping[str, str]  # action -> the service it starts a run on
    commands: Mapping[str, str]  # command word -> the service


@functools.cache
def external_ci() -> ExternalCi:
    from matrix.core.textfiles import package_text

    doc = tomllib.loads(package_text("data/external_ci.toml"))
    return ExternalCi(
        files=tuple(
            CiFile(
                pattern=str(f["pattern"]), system=str(f["system"]), source=str(f["source"]), read_with=str(f.get("read_with", ""))
            )
            for f in doc.get("file", [])
        ),
        actions={str(a["uses"]).lower(): str(a["system"]) for a in doc.get("action", [])},
        commands={str(c["name"]): str(c["system"]) for c in doc.get("command", [])},
    )


def other_ci_files(repo: Path) -> tuple[UnreadJob, ...]:
    """One unread job for each CI configuration file (or folder) of another service found in `repo`."""
    out: list[UnreadJob] = []
    for entry in external_ci().files:
        for name in _present(repo, entry.pattern):
            how = f"; read it with {entry.read_with}" if entry.read_with else ""
            reason = f"{entry.system} runs from {name}, which is not read{how}: what it runs is not known"
            out.append(UnreadJob(origin=Origin(file=name, line=1, job=f"({entry.system})"), reason=reason))
    return tuple(out)


def _present(repo: Path, pattern: str) -> list[str]:
    """The repository-relative paths `pattern` names that exist (each is only named here, never read)."""
    if pattern.endswith("/"):
        return [pattern.rstrip("/")] if (repo / pattern).is_dir() else []
    if "*" not in pattern:
        return [pattern] if (repo / pattern).is_file() else []
    folder, name = posixpath.split(pattern)
    if "*" in folder:  # one wildcard folder level (`.buildkite/*/*.yml`, `*/Jenkinsfile`): names only, never read
        inside = repo.resolve()
        found = sorted(
            p.relative_to(repo).as_posix()
            for p in repo.glob(pattern)
            if not p.parent.is_symlink() and p.is_file() and p.resolve().is_relative_to(inside)
        )
        return found[:MAX_NAMED]
    base = repo / folder if folder else repo
    if not base.is_dir():
        return []
    found = sorted(p.name for p in base.glob(name) if p.is_file())
    return [posixpath.join(folder, n) if folder else n for n in found[:MAX_NAMED]]


def handoffs(workflows: Iterable[Workflow]) -> tuple[UnreadJob, ...]:
    """One unread job per workflow and service its steps hand a run to, naming the jobs that do."""
    pack = external_ci()
    out: list[UnreadJob] = []
    for workflow in workflows:
        jobs = workflow.doc.get("jobs")
        if not isinstance(jobs, Mapping):
            continue
        by_system: dict[str, list[tuple[str, str]]] = {}  # service -> (job id, what its step says)
        for job_id, job in jobs.items():
            steps = job.get("steps") if isinstance(job, Mapping) else None
            for step in steps if isinstance(steps, list) else ():
                found = _handoff(step, pack) if isinstance(step, Mapping) else None
                if found is not None:
                    by_system.setdefault(found[0], []).append((str(job_id), found[1]))
                    break
        if not by_system:
            continue
        lines = key_lines(workflow.lines)
        for system, found_jobs in by_system.items():
            first = found_jobs[0][0]
            said = ", ".join(f"{job} ({what})" for job, what in found_jobs)
            reason = f"hands the run to {system}: {said}; what that CI runs is not read"
            out.append(UnreadJob(origin=Origin(file=workflow.name, line=lines.get(f"{first}:", 1), job=first), reason=reason))
    return tuple(out)


def action_handoffs(
    actions: Iterable[tuple[str, Mapping[str, Any], Mapping[tuple[int | str, str], tuple[int, str]]]],
) -> tuple[UnreadJob, ...]:
    """One unread job per step of a local composite action that hands the run to another service (a Blossom
    `blossom-ci` step inside `.github/actions/x/action.yml` starts CI there as surely as one in a workflow)."""
    pack = external_ci()
    out: list[UnreadJob] = []
    for name, doc, marks in actions:
        runs = doc.get("runs")
        steps = runs.get("steps") if isinstance(runs, Mapping) else None
        for step in steps if isinstance(steps, list) else ():
            found = _handoff(step, pack) if isinstance(step, Mapping) else None
            if found is None:
                continue
            mark = marks.get((id(step), "run")) or marks.get((id(step), "uses"))
            origin = Origin(file=name, line=mark[0] if mark is not None else 1, job="(composite action)")
            out.append(UnreadJob(origin=origin, reason=f"hands the run to {found[0]}: {found[1]}; what that CI runs is not read"))
    return tuple(out)


def _handoff(step: Mapping[object, object], pack: ExternalCi) -> tuple[str, str] | None:
    """(service, what the step says) when a step hands the run to another CI service."""
    uses = step.get("uses")
    if isinstance(uses, str):
        action = "/".join(uses.split("@", 1)[0].split("/")[:2]).lower()
        if action in pack.actions:
            return pack.actions[action], f"uses: {uses}"
    run = step.get("run")
    if isinstance(run, str) and any(word in run for word in pack.commands):
        from matrix.schedule.shell.commands import commands  # the shell parser: only for a step that names a command here

        for command in commands(run, keywords=tuple(pack.commands)):
            word = posixpath.basename(command.words[0]) if command.words else ""
            if word in pack.commands:
                return pack.commands[word], f"run: {' '.join(command.words)}"
    return None
