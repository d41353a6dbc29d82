"""The environment of a container a job runs its tests in (`docker exec NAME ...`, `docker run IMAGE ...`); pure over
the job's scripts.

A command run in a container does not see the runner's environment, nor the job's or step's `env:`: it sees what the
image sets (`ENV` in the Dockerfile the job builds it from, `containers.dockerfile`), what `docker run -e` gave the
container, and what `docker exec -e` gives the command, then what its own script does inside (`unset`, `export`).
Each of these is read here from the job's own steps, in order: a container started by a later command, by a step
whose `if:` is false, or on a branch known only at run time is not the one an earlier command reaches. Whatever
cannot be read (an image pulled from a registry or built from a base that is not a Docker Official Image, an
`--env-file`, `-e NAME` from the runner, a login shell, `BASH_ENV`, a Dockerfile outside the folders
`files.container_files` lists) is named, so a reader of the environment says `undetermined` instead of "unset".
The subset read is `containers.subset`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from matrix.schedule.containers.calls import ContainerCall, container_name, read_marker
from matrix.schedule.containers.dockerfile import StageEnv, Value, instructions, official, stage_env
from matrix.schedule.containers.subset import BUILD_VALUED
from matrix.schedule.model import Container
from matrix.schedule.shell.commands import CONTAINER, Command, commands

__all__ = [
    "ContainerStart",
    "DockerStep",
    "ImageBuild",
    "JobContainers",
    "container_of",
    "dockerfile_env",
    "instructions",
    "read_job",
]

MAX_BASE_DEPTH = 4  # images the job builds FROM images the job builds


@dataclass(frozen=True, kw_only=True)
class ContainerStart:
    """`docker run ... --name NAME IMAGE`: what the job gave the container (`conditional`: why it may not have run)."""

    name: str
    image: str
    env: tuple[tuple[str, str], ...] = ()
    unread: tuple[str, ...] = ()
    conditional: str = ""


@dataclass(frozen=True, kw_only=True)
class ImageBuild:
    """`docker build -f FILE -t TAG [--target STAGE] [--build-arg N=V] CONTEXT`, the Dockerfile repo-relative."""

    tag: str
    dockerfile: str
    target: str | None = None
    args: tuple[tuple[str, Value], ...] = ()
    conditional: str = ""


@dataclass(frozen=True, kw_only=True)
class DockerStep:
    """A step's script that may start or build containers, its folder, and why it may not run ("" when it runs)."""

    script: str
    working_dir: str = "."
    condition: str = ""
    env: tuple[tuple[str, str], ...] = ()  # what the step's script starts with (its `-e X=$Y` may read it)


@dataclass(frozen=True, kw_only=True)
class JobContainers:
    """What a job's steps start and build, read before the command that runs in a container."""

    starts: Mapping[str, ContainerStart]
    builds: Mapping[str, ImageBuild]


def read_job(steps: Iterable[DockerStep | tuple[str, str]], *, until: Callable[[Command], bool] | None = None) -> JobContainers:
    """The containers and images of a job from its steps, in order; in the last step, only its commands before the
    first one `until` accepts (the command run in the container)."""
    starts: dict[str, ContainerStart] = {}
    builds: dict[str, ImageBuild] = {}
    listed = [s if isinstance(s, DockerStep) else DockerStep(script=s[0], working_dir=s[1]) for s in steps]
    for index, step in enumerate(listed):
        last = until is not None and index == len(listed) - 1
        if "docker" not in step.script and "podman" not in step.script:
            continue
        keywords = None if last else ("docker", "podman")
        for command in commands(step.script, step.working_dir, keywords, dict(step.env)):
            if last and until is not None and until(command):
                break
            conditional = "; ".join(filter(None, (step.condition, *command.conditions)))
            call = _call_of(command)
            if call is not None and call.kind == "run" and call.container:
                starts[call.container] = ContainerStart(
                    name=call.container, image=call.name, env=call.env, unread=call.unread, conditional=conditional
                )
            words = list(command.words)
            if words[:2] in (["docker", "build"], ["podman", "build"]) or words[:3] == ["docker", "buildx", "build"]:
                for build in _build(words[3:] if words[1] == "buildx" else words[2:], command.working_dir, conditional):
                    builds[build.tag] = build
    return JobContainers(starts=starts, builds=builds)


def _call_of(command: Command) -> ContainerCall | None:
    value = next((v for k, v in command.env if k == CONTAINER), None)
    return None if value is None else read_marker(value)


def _build(words: Sequence[str], working: str, conditional: str) -> list[ImageBuild]:
    tags: list[str] = []
    dockerfile: str | None = None
    target: str | None = None
    args: list[tuple[str, Value]] = []
    rest: list[str] = []
    i = 0
    while i < len(words):
        option, eq, inline = words[i].partition("=")
        if option in BUILD_VALUED and not eq:
            value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 2
        elif option.startswith("-"):
            value, i = words[i][len(option) + 1 :] if eq else inline, i + 1
        else:
            rest.append(words[i])
            i += 1
            continue
        if option in ("-t", "--tag"):
            tags.append(value)
        elif option in ("-f", "--file"):
            dockerfile = value
        elif option == "--target":
            target = value
        elif option == "--build-arg":
            name, has, given = value.partition("=")
            # `--build-arg NAME` takes the runner's NAME; a value the runner's shell knows only at run time is too
            late = not has or "$" in given or "`" in given or "__UNRESOLVED_" in given
            args.append((name, None if late else given))
    context = rest[0] if rest else "."
    path = _joined(working, dockerfile if dockerfile is not None else f"{context}/Dockerfile")
    return [ImageBuild(tag=tag, dockerfile=path, target=target, args=tuple(args), conditional=conditional) for tag in tags]


def _joined(working: str, path: str) -> str:
    if path.startswith("/"):
        return path
    return posixpath.normpath(posixpath.join(working, path))


def container_of(
    marker: str, job: JobContainers, load: Callable[[str], str | None]
) -> tuple[tuple[tuple[str, str], ...], Container]:
    """The environment a command run in a container starts with (the image's ENV, then `docker run -e`, then
    `docker exec -e`) and the container record saying what of it could not be read; `load` reads a repo-relative
    Dockerfile or None."""
    call = read_marker(marker)
    unread = [*call.unread, *(n for n in call.notes if n != "--entrypoint")]
    notes: list[str] = []
    env: dict[str, str] = {}
    if call.kind == "exec":
        start = job.starts.get(call.name)
        if start is None:
            unread.append(f"no step of the job before it starts the container {call.name} with `docker run --name`")
        else:
            if start.conditional:
                unread.append(f"the container {call.name} is started only under a condition: {start.conditional}")
            unread.extend(start.unread)
            image = _image(start.image, job, load, 0)
            env.update(image.env)
            unread.extend(image.unread)
            notes.extend(image.notes)
            env.update(start.env)
        name = call.name
    elif call.kind == "run":
        image = _image(call.name, job, load, 0)
        env.update(image.env)
        unread.extend(image.unread)
        notes.extend(image.notes)
        if image.entrypoint and "--entrypoint" not in call.notes:
            unread.append(f"the image {call.name} has an ENTRYPOINT, which runs before the command")
        name = container_name(call)
    else:
        name = container_name(call)
    env.update(call.env)
    if call.shell == "bash" and "BASH_ENV" in env:
        unread.append(f"BASH_ENV={env['BASH_ENV'][:60]} in the container: `bash -c` reads that file first")
    return tuple(env.items()), Container(name=name, unread="; ".join(dict.fromkeys(unread)), notes=tuple(dict.fromkeys(notes)))


@dataclass(frozen=True, kw_only=True)
class _Image:
    env: Mapping[str, str]
    unread: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    entrypoint: bool = False


def _image(image: str, job: JobContainers, load: Callable[[str], str | None], depth: int) -> _Image:
    """The environment an image gives a container: read from the Dockerfile the job builds it from (and the
    images that one starts from, when the job builds those too)."""
    build = job.builds.get(image)
    if build is None:
        if official(image):
            return _Image(
                env={}, notes=(f"the image {image} is a Docker Official Image (assumed to set no variable of the project)",)
            )
        return _Image(env={}, unread=(f"the image {image or '(unknown)'} is not built by the job from a Dockerfile",))
    unread: list[str] = []
    if build.conditional:
        unread.append(f"the image {image} is built only under a condition: {build.conditional}")
    text = load(build.dockerfile)
    if text is None:
        return _Image(env={}, unread=(*unread, f"the Dockerfile {build.dockerfile} of the image {image} is not read"))
    stage: StageEnv = stage_env(text, build.target, dict(build.args))
    unread.extend(f"{build.dockerfile}: {u} is not read" for u in stage.unread)
    if stage.base is None:
        return _Image(env={}, unread=(*unread, f"{build.dockerfile} has no stage {build.target or '(final)'} to read"))
    env: dict[str, str] = {}
    notes: list[str] = []
    entrypoint = stage.entrypoint
    if stage.base and stage.base in job.builds and depth < MAX_BASE_DEPTH:
        base = _image(stage.base, job, load, depth + 1)  # an image the job built before, from its own Dockerfile
        env.update(base.env)
        unread.extend(base.unread)
        notes.extend(base.notes)
        entrypoint = entrypoint or base.entrypoint
    elif official(stage.base) and stage.base not in job.builds:
        notes.append(
            f"{build.dockerfile} starts from {stage.base}, a Docker Official Image (assumed to set no variable of the project)"
        )
    else:
        unread.append(
            f"{build.dockerfile} starts from {stage.base or 'an image named at run time'}, whose environment is not read"
        )
    env.update(stage.env)
    return _Image(env=env, unread=tuple(unread), notes=tuple(notes), entrypoint=entrypoint)


def dockerfile_env(text: str, target: str | None = None) -> tuple[dict[str, str], str | None]:
    """The ENV a Dockerfile's `target` stage (else its last) sets and the external image that stage starts from
    (None when the stage is not there)."""
    found = stage_env(text, target)
    return dict(found.env), found.base
