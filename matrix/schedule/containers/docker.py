"""The environment of a container a job runs its tests in (`docker exec NAME ...`); pure over the job's scripts.

A command run through `docker exec` does not see the runner's environment, nor the job's or step's `env:`: it sees
what the image sets (`ENV` in the Dockerfile the job builds it from), what `docker run -e` gave the container, and
what `docker exec -e` gives the command. Each of these is read here from the job's own steps; whatever cannot be
read (an image pulled from a registry, an `--env-file`, a base image that is not a Docker Official Image, a
Dockerfile outside the folders `files.container_files` lists) is named, so a reader of the environment says
`undetermined` instead of "unset".
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from matrix.schedule.model import Container
from matrix.schedule.shell.commands import commands, exec_marker

# `docker run` options that take the next word as their value (docker run reference, docker 27); a word starting
# with `-` that is neither one of these nor a flag below makes the image unknown.
_RUN_VALUED = frozenset(
    [
        "-a",
        "--attach",
        "--add-host",
        "--annotation",
        "--blkio-weight",
        "--blkio-weight-device",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cgroupns",
        "--cidfile",
        "--cpu-period",
        "--cpu-quota",
        "--cpu-rt-period",
        "--cpu-rt-runtime",
        "-c",
        "--cpu-shares",
        "--cpus",
        "--cpuset-cpus",
        "--cpuset-mems",
        "--device",
        "--device-cgroup-rule",
        "--device-read-bps",
        "--device-read-iops",
        "--device-write-bps",
        "--device-write-iops",
        "--dns",
        "--dns-option",
        "--dns-search",
        "--domainname",
        "--entrypoint",
        "-e",
        "--env",
        "--env-file",
        "--expose",
        "--gpus",
        "--group-add",
        "--health-cmd",
        "--health-interval",
        "--health-retries",
        "--health-start-interval",
        "--health-start-period",
        "--health-timeout",
        "-h",
        "--hostname",
        "--ip",
        "--ip6",
        "--ipc",
        "--isolation",
        "--kernel-memory",
        "-l",
        "--label",
        "--label-file",
        "--link",
        "--link-local-ip",
        "--log-driver",
        "--log-opt",
        "--mac-address",
        "-m",
        "--memory",
        "--memory-reservation",
        "--memory-swap",
        "--memory-swappiness",
        "--mount",
        "--name",
        "--network",
        "--net",
        "--network-alias",
        "--oom-score-adj",
        "--pid",
        "--pids-limit",
        "--platform",
        "-p",
        "--publish",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--sysctl",
        "--tmpfs",
        "--ulimit",
        "-u",
        "--user",
        "--userns",
        "--uts",
        "-v",
        "--volume",
        "--volume-driver",
        "--volumes-from",
        "-w",
        "--workdir",
    ]
)
_RUN_FLAGS = frozenset(
    [
        "-d",
        "--detach",
        "-i",
        "--interactive",
        "-t",
        "--tty",
        "--rm",
        "--privileged",
        "--init",
        "-P",
        "--publish-all",
        "--read-only",
        "--sig-proxy",
        "--no-healthcheck",
        "--oom-kill-disable",
        "-q",
        "--quiet",
        "--disable-content-trust",
        "--use-api-socket",
    ]
)
_SHORT_FLAGS = frozenset("ditPq")
_BUILD_VALUED = frozenset(
    [
        "-f",
        "--file",
        "-t",
        "--tag",
        "--build-arg",
        "--target",
        "--platform",
        "--network",
        "--label",
        "--cache-from",
        "--cache-to",
        "--secret",
        "--ssh",
        "--progress",
        "--output",
        "-o",
        "--iidfile",
        "--add-host",
        "--shm-size",
        "--ulimit",
        "--builder",
        "--build-context",
        "--metadata-file",
        "--allow",
        "--annotation",
        "--attest",
        "--sbom",
        "--provenance",
        "--call",
    ]
)
MAX_DOCKERFILE_STAGES = 32


@dataclass(frozen=True, kw_only=True)
class ContainerStart:
    """`docker run ... --name NAME IMAGE`: what the job gave the container."""

    name: str
    image: str
    env: tuple[tuple[str, str], ...] = ()
    unread: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ImageBuild:
    """`docker build -f FILE -t TAG [--target STAGE] CONTEXT`, the Dockerfile repo-relative."""

    tag: str
    dockerfile: str
    target: str | None = None


@dataclass(frozen=True, kw_only=True)
class JobContainers:
    """What a job's steps start and build, read before the step that runs the tests."""

    starts: Mapping[str, ContainerStart]
    builds: Mapping[str, ImageBuild]


def read_job(scripts: Iterable[tuple[str, str]]) -> JobContainers:
    """The containers and images of a job, from its steps' scripts as (script, working folder), in order."""
    starts: dict[str, ContainerStart] = {}
    builds: dict[str, ImageBuild] = {}
    for script, working in scripts:
        if "docker" not in script:
            continue
        for command in commands(script, working, ("docker",)):
            words = list(command.words)
            if words[:2] == ["docker", "run"]:
                start = _run(words[2:])
                if start is not None:
                    starts[start.name] = start
            elif words[:2] == ["docker", "build"] or words[:3] == ["docker", "buildx", "build"]:
                for build in _build(words[3:] if words[1] == "buildx" else words[2:], command.working_dir):
                    builds[build.tag] = build
    return JobContainers(starts=starts, builds=builds)


def _run(words: Sequence[str]) -> ContainerStart | None:
    name = ""
    env: list[tuple[str, str]] = []
    unread: list[str] = []
    lost = False
    i = 0
    while i < len(words) and (words[i].startswith("-") or lost):
        if lost and not words[i].startswith("-"):
            i += 1
            continue
        option, eq, inline = words[i].partition("=")
        if option in _RUN_VALUED and not eq:
            value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 2
        elif (
            option in _RUN_VALUED
            or option in _RUN_FLAGS
            or (not option.startswith("--") and set(option[1:]) <= _SHORT_FLAGS and not eq)
        ):
            value, i = inline, i + 1
        else:  # whether it takes a value is not known: the words after it are read for `--name` only
            unread.append(f"`docker run {option}` is an option this reader does not know")
            value, i, lost = inline, i + 1, True
        if option == "--name":
            name = value
        elif option in ("-e", "--env") and "=" in value:
            key, _, assigned = value.partition("=")
            env.append((key, assigned))
        elif option in ("-e", "--env"):
            unread.append(f"`docker run -e {value}` passes the runner's {value}")
        elif option == "--env-file":
            unread.append(f"`docker run --env-file {value}` is read at run time")
    if not name:
        return None  # an unnamed container is not the one a `docker exec NAME` reaches
    image = words[i] if i < len(words) and not lost else ""
    return ContainerStart(name=name, image=image, env=tuple(env), unread=tuple(unread))


def _build(words: Sequence[str], working: str) -> list[ImageBuild]:
    tags: list[str] = []
    dockerfile: str | None = None
    target: str | None = None
    rest: list[str] = []
    i = 0
    while i < len(words):
        option, eq, inline = words[i].partition("=")
        if option in _BUILD_VALUED and not eq:
            value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 2
        elif option.startswith("-"):
            value, i = inline, i + 1
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
    context = rest[0] if rest else "."
    path = _joined(working, dockerfile if dockerfile is not None else f"{context}/Dockerfile")
    return [ImageBuild(tag=tag, dockerfile=path, target=target) for tag in tags]


def _joined(working: str, path: str) -> str:
    import posixpath

    if path.startswith("/"):
        return path
    return posixpath.normpath(posixpath.join(working, path))


def container_of(
    marker: str, job: JobContainers, load: Callable[[str], str | None]
) -> tuple[tuple[tuple[str, str], ...], Container]:
    """The environment a `docker exec` command sees (image ENV, then `docker run -e`, then `docker exec -e`) and
    the container record saying what of it could not be read; `load` reads a repo-relative Dockerfile or None."""
    name, given, exec_unread = exec_marker(marker)
    unread = [exec_unread] if exec_unread else []
    notes: list[str] = []
    env: dict[str, str] = {}
    start = job.starts.get(name)
    if start is None:
        unread.append(f"no step of the job starts the container {name} with `docker run --name`")
    else:
        unread.extend(start.unread)
        build = job.builds.get(start.image)
        if build is None:
            unread.append(f"the image {start.image or '(unknown)'} is not built by the job from a Dockerfile")
        else:
            text = load(build.dockerfile)
            if text is None:
                unread.append(f"the Dockerfile {build.dockerfile} of the image {start.image} is not read")
            else:
                image_env, base = dockerfile_env(text, build.target)
                env.update(image_env)
                if base is None:
                    unread.append(f"{build.dockerfile} has no stage {build.target or '(final)'} to read")
                elif _official(base):
                    official = "a Docker Official Image (assumed to set no variable of the project)"
                    notes.append(f"{build.dockerfile} starts from {base}, {official}")
                else:
                    unread.append(f"{build.dockerfile} starts from {base}, whose environment is not read")
        env.update(start.env)
    env.update(given)
    return tuple(env.items()), Container(name=name, unread="; ".join(unread), notes=tuple(notes))


def _official(image: str) -> bool:
    """A Docker Official Image (`ubuntu:24.04`, `python:3.12-slim`, `library/debian`): no registry, no namespace."""
    repo = image.partition("@")[0].rpartition(":")[0] if ":" in image.partition("@")[0] else image.partition("@")[0]
    return "/" not in repo.removeprefix("library/") and repo not in ("", "scratch")


def dockerfile_env(text: str, target: str | None = None) -> tuple[dict[str, str], str | None]:
    """The ENV a Dockerfile's `target` stage (else its last) sets, inherited through `FROM stage`, and the external
    image that stage starts from (None when the stage is not there)."""
    stages: list[tuple[str, str, dict[str, str]]] = []  # (stage name, its FROM image, its env)
    for instruction, argument in instructions(text):
        if instruction == "FROM":
            words = argument.split()
            words = [w for w in words if not w.startswith("--")]
            if not words or len(stages) >= MAX_DOCKERFILE_STAGES:
                continue
            image = words[0]
            alias = words[2] if len(words) > 2 and words[1].lower() == "as" else ""
            parent = next((s for s in reversed(stages) if s[0] and s[0] == image.lower()), None)
            inherited = dict(parent[2]) if parent else {}
            base = parent[1] if parent else image
            stages.append((alias.lower(), base, inherited))
        elif instruction == "ENV" and stages:
            stages[-1][2].update(_env_pairs(argument))
    chosen = next((s for s in stages if s[0] == target.lower()), None) if target else (stages[-1] if stages else None)
    if chosen is None:
        return {}, None
    return chosen[2], chosen[1]


def instructions(text: str) -> Iterable[tuple[str, str]]:
    """(INSTRUCTION, argument) per logical line: comments dropped, `\\` continuations joined."""
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole, pending = pending + line, ""
        head, _, argument = whole.partition(" ")
        yield head.upper(), argument.strip()


def _env_pairs(argument: str) -> dict[str, str]:
    """`ENV A=1 B="two words"` or the older `ENV A value with spaces`."""
    try:
        words = shlex.split(argument, posix=True)
    except ValueError:
        return {}
    if words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    return {k: v for k, _, v in (w.partition("=") for w in words if "=" in w)}
