"""What an image a job builds holds, read from its Dockerfile: the base it starts from (a slim official Python
image is a fresh interpreter; any other base is not known) and the installs of its `RUN` lines, stage by stage
(`FROM stage` inherits that stage's); pure."""

from __future__ import annotations

import re

from matrix.schedule.commands.pytest_command import commands_of, strip_prefixes
from matrix.schedule.containers.docker import instructions
from matrix.schedule.environment.installs import INSTALL_WORDS, fresh_python, install_step
from matrix.schedule.environment.model import InstallStep, StepKind

MAX_STAGES = 64
# Docker Official Images of Python (hub.docker.com/_/python): the interpreter, pip and setuptools/wheel only.
_PYTHON_IMAGE = re.compile(
    r"^(?:docker\.io/)?(?:library/)?python:[0-9][0-9.]*(?:-(?:slim|alpine)[\w.-]*|-(?:bookworm|bullseye|trixie))?$"
)


def dockerfile_steps(text: str, path: str, target: str | None = None) -> tuple[InstallStep, ...]:
    """The install steps of a Dockerfile's `target` stage (else its last): its base, then its `RUN` installs."""
    stages: list[tuple[str, list[InstallStep]]] = []
    for instruction, argument in instructions(text):
        if instruction == "FROM":
            words = [w for w in argument.split() if not w.startswith("--")]
            if not words or len(stages) >= MAX_STAGES:
                continue
            image = words[0]
            alias = words[2].lower() if len(words) > 2 and words[1].lower() == "as" else ""
            parent = next((s for s in reversed(stages) if s[0] and s[0] == image.lower()), None)
            if parent is not None:
                steps = list(parent[1])
            elif _PYTHON_IMAGE.match(image):
                tag = image.rpartition(":")[2].split("-")[0]  # `python:3.12-slim` has Python 3.12
                steps = [fresh_python(f"{path}: FROM {image} (an official Python image: only the interpreter and pip)", tag)]
            else:
                unread = f"{path} starts from {image}, whose installed packages are not read"
                steps = [InstallStep(kind=StepKind.UNKNOWN_BASE, command=f"{path}: FROM {image}", unread=unread)]
            stages.append((alias, steps))
        elif instruction == "RUN" and stages and any(w in argument for w in INSTALL_WORDS):
            split = commands_of(argument)
            if split is None:
                stages[-1][1].append(InstallStep(command=f"{path}: RUN {argument[:80]}", unread="the RUN line does not split"))
                continue
            for words in split:
                step = install_step(strip_prefixes(words))
                if step is not None:
                    stages[-1][1].append(step)
    chosen = next((s for s in stages if s[0] == target.lower()), None) if target else (stages[-1] if stages else None)
    if chosen is None:
        return (InstallStep(kind=StepKind.UNKNOWN_BASE, command=path, unread=f"{path} has no stage {target or '(final)'}"),)
    return tuple(chosen[1])
