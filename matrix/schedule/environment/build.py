"""A job's environment folded from its install steps in order (`JobEnvironment`); the texts of the project files
and requirement files come from a loader (repository-relative path -> text or None), so this stays pure.

Rules: a fresh interpreter (setup-python, a slim image) starts from nothing; a base not known leaves everything
unknown but what the job installs itself. A distribution an install names is installed from then on (pip never
removes one); its version is the specifier of the last install that names it, and becomes unknown when a later
install that may pull it in as a dependency is not bounded. Requirement markers are evaluated only when they
decide without the runner (`extra == ...`); otherwise the requirement is only possible."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from matrix.schedule.environment.model import Base, Installed, InstallStep, JobEnvironment, StepKind, normalized
from matrix.schedule.environment.projects import Requirements, project_requirements

if TYPE_CHECKING:
    from packaging.requirements import Requirement

Loader = Callable[[str], str | None]
MAX_REQUIREMENT_DEPTH = 4
MAX_REQUIREMENT_LINES = 5_000


def environment_of(
    steps: Sequence[InstallStep], load: Loader, *, base: Base = Base.UNKNOWN, base_note: str = ""
) -> JobEnvironment:
    """The environment after `steps`, starting from `base`."""
    installed: dict[str, Installed] = {}
    maybe: list[str] | None = []
    unknown: list[str] = []
    commands: list[str] = []
    cpu = False
    note = base_note or JobEnvironment().base_note
    python = ""
    created: dict[str, str] = {}  # conda environments made by the job -> their Python version
    bare: set[str] = set()  # those of them made with no Python package but the interpreter's own (`_bare_conda`)
    local: list[str] = []
    for step in steps:
        if step.kind is StepKind.FRESH:
            base, note, installed, maybe, unknown, cpu, python = Base.FRESH, step.command, {}, [], [], False, step.python
            commands = [step.command]
            continue
        if step.kind is StepKind.UNKNOWN_BASE:
            # Its own account of why the base is not known names the step (`unread`), else the step itself.
            base, note, installed, maybe, unknown, cpu = Base.UNKNOWN, step.unread or step.command, {}, [], [step.unread], False
            # A conda environment made here is not yet the one the tests use: that takes its `conda activate`.
            python = step.python if not step.environment else ""
            if step.environment:
                created[step.environment] = step.python
                if _bare_conda(step.command):
                    bare.add(step.environment)
            commands = [step.command]
            continue
        if step.kind is StepKind.ACTIVATE:
            # The environment the job made itself has the Python it was made with; any other is not known.
            python = created.get(step.environment, "")
            if step.environment in bare:
                # Made here from the interpreter and C libraries alone: it holds what the job installs into it.
                base, installed, maybe, unknown, cpu = Base.FRESH, {}, [], [], False
                note = f"the conda environment {step.environment} this job made with only Python in it"
                commands = [step.command]
                continue
            commands.append(step.command)
            continue
        commands.append(step.command)
        if step.kind is StepKind.UNINSTALL:
            for text in step.requirements:
                installed.pop(normalized(text.split("==")[0]), None)
            continue
        if step.unread:
            unknown.append(f"{step.command[:120]}: {step.unread}")
            maybe = None
            for item in installed.values():
                installed[item.distribution] = Installed(
                    distribution=item.distribution, command=item.command, with_deps=item.with_deps
                )
            continue
        read = _requirements(step, load)
        unknown += read.unknown
        local += read.local
        cpu = cpu or step.cpu_torch
        if maybe is not None:
            maybe += [n for n in (_name(r) for r in read.maybe) if n is not None]
        named: set[str] = set()
        for text in read.surely:
            parsed = _parse(text)
            if parsed is None:
                unknown.append(f"{text[:80]}: not a requirement string")
                continue
            requirement, decided = parsed
            name = normalized(requirement.name)
            if not decided:
                if maybe is not None:
                    maybe.append(name)
                continue
            named.add(name)
            earlier = installed.get(name)
            installed[name] = Installed(
                distribution=name,
                specifier=str(requirement.specifier),
                command=step.command,
                with_deps=not step.no_deps or (earlier is not None and earlier.with_deps),
            )
        if not step.no_deps:
            # What this install pulls in as dependencies is not known here: an earlier version may be changed.
            for item in list(installed.values()):
                if item.distribution not in named and item.specifier:
                    installed[item.distribution] = Installed(
                        distribution=item.distribution, command=item.command, with_deps=item.with_deps
                    )
    return JobEnvironment(
        base=base,
        base_note=note,
        installed=tuple(installed.values()),
        maybe=None if maybe is None else tuple(dict.fromkeys(maybe)),
        unknown=tuple(dict.fromkeys(unknown)),
        cpu_torch=cpu,
        commands=tuple(commands),
        python=python,
        local=tuple(n for n in dict.fromkeys(local) if n in installed),
    )


# What `conda create` may name and still leave no Python package but the interpreter's own (pip, setuptools, wheel
# come with conda's python package: conda-forge feedstocks python-feedstock, pip-feedstock): the interpreter, the
# packaging tools, and C/C++ runtime and build tools, which install no importable module.
_BARE_CONDA = frozenset(
    {"python", "pip", "setuptools", "wheel", "libgcc-ng", "libstdcxx-ng", "libgcc", "libstdcxx", "libgomp", "gcc", "gxx"}
    | {"gcc_linux-64", "gxx_linux-64", "cmake", "ninja", "make", "git"}
)


def _bare_conda(command: str) -> bool:
    """Whether `conda create ...` names only packages of `_BARE_CONDA` (with versions), no channel file or clone."""
    words = command.split()
    if len(words) < 3 or words[1] != "create":
        return False
    index = 2
    while index < len(words):
        word = words[index]
        if word in ("-n", "--name", "-c", "--channel", "-p", "--prefix"):
            index += 2
            continue
        if word in ("--file", "--clone") or word.startswith(("--file=", "--clone=")):
            return False
        if not word.startswith("-") and word.split("=")[0].split("<")[0].split(">")[0].lower() not in _BARE_CONDA:
            return False
        index += 1
    return True


def _parse(text: str) -> tuple[Requirement, bool] | None:
    """The requirement, and whether it is certainly installed (no marker, or one decided without the runner)."""
    from packaging.requirements import InvalidRequirement, Requirement  # loaded when a job's installs are read

    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    if requirement.marker is None:
        return requirement, True
    try:
        # A marker that names only extras is decided (an install of the extra asked for it); one on the
        # platform or Python version is not, here.
        text_marker = str(requirement.marker)
        if "extra" in text_marker and not any(
            k in text_marker for k in ("python", "platform", "sys_", "os_name", "implementation")
        ):
            return requirement, True
    except ValueError:
        pass
    return requirement, False


def _name(text: str) -> str | None:
    parsed = _parse(text)
    return None if parsed is None else normalized(parsed[0].name)


def _requirements(step: InstallStep, load: Loader) -> Requirements:
    surely = list(step.requirements)
    maybe: list[str] = []
    unknown: list[str] = []
    for path in step.files:
        read = requirement_file(path, load)
        surely += read.surely
        unknown += read.unknown
    groups = dict(step.groups)
    local: list[str] = []
    for folder, extras in step.projects:
        if folder.startswith(("/", "..")):
            unknown.append(f"{folder}: a project outside the checkout")
            continue
        found = project_requirements(
            load(posixpath.join(folder, "pyproject.toml")),
            load(posixpath.join(folder, "setup.py")),
            extras,
            groups.get(folder, ()),
            folder,
        )
        surely += found.surely
        if found.name:
            surely.append(found.name)
            local.append(normalized(found.name))
        maybe += found.maybe
        unknown += found.unknown
    return Requirements(surely=tuple(surely), maybe=tuple(maybe), unknown=tuple(unknown), local=tuple(local))


def requirement_file(path: str, load: Loader, depth: int = 0, seen: tuple[str, ...] = ()) -> Requirements:
    """The requirement strings of a pip requirements file, `-r` files followed (`-c` constraints only bound versions,
    they install nothing), `MAX_REQUIREMENT_DEPTH` levels down."""
    if depth > MAX_REQUIREMENT_DEPTH or path in seen:
        return Requirements(unknown=(f"{path}: requirement files nested deeper than {MAX_REQUIREMENT_DEPTH} or in a cycle",))
    text = load(path)
    if text is None:
        return Requirements(unknown=(f"{path}: the requirement file is not in the checkout",))
    folder = posixpath.dirname(path)
    surely: list[str] = []
    unknown: list[str] = []
    for raw in text.splitlines()[:MAX_REQUIREMENT_LINES]:
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ", "-r", "--requirement=")):
            target = line.split(None, 1)[1] if " " in line else line.removeprefix("--requirement=").removeprefix("-r")
            inner = requirement_file(posixpath.normpath(posixpath.join(folder, target.strip())), load, depth + 1, (*seen, path))
            surely += inner.surely
            unknown += inner.unknown
        elif line.startswith(("-c", "--constraint", "--index-url", "--extra-index-url", "-i ", "-f ", "--find-links", "--pre")):
            continue
        elif line.startswith(("-e", "--editable", ".", "/", "git+")) or "://" in line or "$" in line:
            unknown.append(f"{path}: {line[:60]} is not read")
        else:
            surely.append(line)
    return Requirements(surely=tuple(surely), unknown=tuple(unknown))
