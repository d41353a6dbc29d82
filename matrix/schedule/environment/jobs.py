"""A CI job's environment where one of its test commands runs: its install steps before the command, folded from
the runner's own interpreter, a container's image, or the image of a function run elsewhere; pure (files come
from loaders)."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from matrix.schedule.containers.docker import read_job
from matrix.schedule.environment.build import environment_of
from matrix.schedule.environment.images import dockerfile_steps
from matrix.schedule.environment.model import InstallStep, JobEnvironment, StepKind
from matrix.schedule.model import Container
from matrix.schedule.shell.commands import exec_marker

Loader = Callable[[str], str | None]
# GitHub-hosted runner images (docs.github.com, "GitHub-hosted runners": the ubuntu-*, windows-*, macos-* labels).
_HOSTED = re.compile(r"^(ubuntu|windows|macos)-(latest|[0-9][0-9.]*)(-arm|-xl|-large|-xlarge)?$")


def job_environment(
    steps: Sequence[InstallStep], load: Loader | None, container: Container | None, labels: Sequence[str] = ()
) -> JobEnvironment:
    """The environment after `steps` (the image's first, when the command runs in one). `actions/setup-python`
    gives a fresh interpreter on a GitHub-hosted runner only: a self-hosted runner's tool cache keeps what earlier
    jobs installed into it. `labels` empty: the command runs elsewhere (a Modal function), its own image first."""
    note = (
        f"the container {container.name}: what its image holds is not known"
        if container is not None
        else "the runner's own Python: what it holds is not known (no actions/setup-python before the tests)"
    )
    if labels and not all(_HOSTED.match(label) for label in labels):
        said = (
            f"actions/setup-python on a self-hosted runner ({', '.join(labels)[:60]}): its tool cache may hold earlier installs"
        )
        steps = [
            replace(s, kind=StepKind.UNKNOWN_BASE, unread=said)
            if s.kind is StepKind.FRESH and s.command.startswith("uses: ")
            else s
            for s in steps
        ]
    return _folded(tuple(steps), load, note)


@functools.lru_cache(maxsize=1024)
def _folded(steps: tuple[InstallStep, ...], load: Loader | None, note: str) -> JobEnvironment:
    # The same steps reach every matrix leg and label set of a job: folded once.
    return environment_of(steps, load or _nothing, base_note=note)


def _nothing(path: str) -> str | None:
    return None


def container_steps(marker: str, docker_steps: Sequence[tuple[str, str]], load: Loader) -> tuple[InstallStep, ...]:
    """What the image of the container a `docker exec` runs in holds (`marker`: the shell reader's container pair
    value): its Dockerfile's steps when the job builds it from one, else a base that is not known, with why."""
    unknown = InstallStep(kind=StepKind.UNKNOWN_BASE, command="a container", unread="the container's image is not read")
    if not marker:
        return (unknown,)
    name = exec_marker(marker)[0]
    job = read_job(docker_steps)
    start = job.starts.get(name)
    build = job.builds.get(start.image) if start is not None else None
    if start is None or build is None:
        image = start.image if start is not None else "(not started by the job)"
        return (replace(unknown, command=f"the container {name}", unread=f"the image {image} is not built by the job"),)
    text = load(build.dockerfile)
    if text is None:
        return (replace(unknown, command=build.dockerfile, unread=f"{build.dockerfile} is not read"),)
    return dockerfile_steps(text, build.dockerfile, build.target)
