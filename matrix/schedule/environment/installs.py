"""Install commands read from their words: `pip install` (`pip3`, `python -m pip`, `uv pip install`), `uv sync`,
`conda`/`mamba`/`micromamba install`; pure. Anything outside this subset makes the step unread, with the construct
named: then the job may hold anything, never a guess."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from matrix.schedule.environment.model import InstallStep, StepKind

# Words a command line must hold to be an install this module reads (the walkers pass these lines on).
INSTALL_WORDS = ("pip", "uv ", "conda", "mamba", "venv", "virtualenv")
MAX_WORDS = 2_000

# pip / uv pip options that take a value; those that take none. Anything else is unread (it may take a value).
_PIP_VALUED = frozenset(
    {
        "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host", "--timeout", "--retries",
        "--progress-bar", "--index-strategy", "--cache-dir", "--log", "--proxy", "--only-binary",
        "--no-binary", "--platform", "--python-version", "--implementation", "--abi", "--keyring-provider",
        "--resolution", "--prerelease", "--exclude-newer", "--torch-backend", "--config-settings", "-C", "--index",
        "--default-index", "--upgrade-package", "-P", "--reinstall-package", "--link-mode", "--extra",
    }
)  # fmt: skip
_PIP_FLAGS = frozenset(
    {
        "-U", "--upgrade", "--system", "--pre", "-q", "--quiet", "-v", "--verbose", "--user", "--no-cache-dir",
        "--no-cache", "--force-reinstall", "--no-build-isolation", "--break-system-packages", "--no-input",
        "--disable-pip-version-check", "--ignore-installed", "-I", "--no-warn-script-location", "--compile",
        "--no-compile", "--prefer-binary", "--upgrade-strategy", "--require-hashes", "--no-clean", "--isolated",
        "--reinstall", "--refresh", "--strict", "--all-extras", "--no-color", "--color", "-qq", "-y", "--yes",
        "--no-build", "--only-binary=:all:", "--verify-hashes", "--seed", "--exact",
    }
)  # fmt: skip
# Options that put what is installed somewhere else than the job's interpreter (`--python`: an interpreter the
# tests may or may not use).
_ELSEWHERE = frozenset({"-t", "--target", "--prefix", "--root", "-p", "--python"})
_CONDA_VALUED = frozenset({"-c", "--channel", "-n", "--name", "-p", "--prefix", "--override-channels-file", "--file"})
_EXTRAS = re.compile(r"^(?P<path>[^\[]*)\[(?P<extras>[^\]]*)\]$")


def install_step(words: Sequence[str], working_dir: str = ".") -> InstallStep | None:
    """The install a command makes, or None when it is not an install command."""
    words = list(words)[:MAX_WORDS]
    head = posixpath.basename(words[0]) if words else ""
    if head in ("pip", "pip3") and len(words) > 1 and words[1] == "install":
        return _pip(words, 2, working_dir)
    if re.fullmatch(r"python[0-9.]*", head) and words[1:4] == ["-m", "pip", "install"]:
        return _pip(words, 4, working_dir)
    if head == "uv" and words[1:3] == ["pip", "install"]:
        return _pip(words, 3, working_dir)
    if head == "uv" and words[1:2] == ["sync"]:
        return _uv_sync(words, working_dir)
    if head in ("conda", "mamba", "micromamba") and words[1:2] == ["install"]:
        return _conda(words)
    if (head in ("pip", "pip3") and words[1:2] == ["uninstall"]) or (head == "uv" and words[1:3] == ["pip", "uninstall"]):
        names = tuple(w for w in words[2 if head != "uv" else 3 :] if not w.startswith("-"))
        return InstallStep(kind=StepKind.UNINSTALL, command=" ".join(words), requirements=names)
    if head in ("conda", "mamba", "micromamba") and words[1:2] == ["activate"] and len(words) == 3:
        return InstallStep(kind=StepKind.ACTIVATE, command=" ".join(words), environment=words[2])
    if _new_environment(words, head):
        # The tests may run in the environment made here, which holds none of the earlier installs.
        said = "a virtual environment made at run time: which interpreter the tests use is not read"
        python, name = _conda_created(words) if head in ("conda", "mamba", "micromamba") else ("", "")
        return InstallStep(kind=StepKind.UNKNOWN_BASE, command=" ".join(words), unread=said, python=python, environment=name)
    return None


def _new_environment(words: list[str], head: str) -> bool:
    """`python -m venv X`, `virtualenv X`, `uv venv`, `conda create` / `mamba create`: a new environment."""
    return (
        (re.fullmatch(r"python[0-9.]*", head) is not None and words[1:3] in (["-m", "venv"], ["-m", "virtualenv"]))
        or head == "virtualenv"
        or (head == "uv" and words[1:2] == ["venv"])
        or (head in ("conda", "mamba", "micromamba") and words[1:2] in (["create"], ["env"]))
    )


def _pip(words: list[str], start: int, working_dir: str) -> InstallStep:
    command = " ".join(words)
    requirements: list[str] = []
    projects: list[tuple[str, tuple[str, ...]]] = []
    files: list[str] = []
    no_deps = cpu = False
    i = start
    while i < len(words):
        word = words[i]
        name, eq, inline = word.partition("=")
        if "$" in word or "`" in word:
            return InstallStep(command=command, unread=f"{word[:60]} is known only at run time")
        if word.startswith("-"):
            option = name if word.startswith("--") else word[:2]
            value = inline if eq else (word[2:] if len(word) > 2 and not word.startswith("--") else None)
            if option in _ELSEWHERE:
                return InstallStep(command=command, unread=f"{option} installs outside the job's interpreter")
            if option in ("-e", "--editable", "-r", "--requirement", "-c", "--constraint") or option in _PIP_VALUED:
                if value is None:
                    i += 1
                    value = words[i] if i < len(words) else ""
                if option in ("-e", "--editable"):
                    projects.append(_project(value, working_dir))
                elif option in ("-r", "--requirement"):
                    files.append(posixpath.normpath(posixpath.join(working_dir, value)))
                elif option in ("-i", "--index-url", "--extra-index-url", "--index", "--default-index", "--torch-backend"):
                    cpu = cpu or value.rstrip("/").endswith("/cpu") or value == "cpu"
            elif word == "--no-deps":
                no_deps = True
            elif word not in _PIP_FLAGS and option not in _PIP_FLAGS:
                return InstallStep(command=command, unread=f"the option {word[:40]} is not read")
        elif word.startswith((".", "/")) or (_EXTRAS.match(word) and "/" in word.partition("[")[0]):
            projects.append(_project(word, working_dir))
        elif word.endswith(".whl"):
            requirements.append(posixpath.basename(word).split("-")[0])  # a wheel's file name starts with its name
        elif "://" in word or word.startswith("git+"):
            return InstallStep(command=command, unread=f"{word[:60]}: a distribution named by a URL")
        else:
            requirements.append(word)
        i += 1
    return InstallStep(
        command=command,
        requirements=tuple(requirements),
        projects=tuple(projects),
        files=tuple(files),
        no_deps=no_deps,
        cpu_torch=cpu,
    )


def _project(word: str, working_dir: str) -> tuple[str, tuple[str, ...]]:
    """(repository-relative folder, extras) of `.[dev,test]`, `./sub`, `/abs` (kept as written)."""
    found = _EXTRAS.match(word.strip("'\""))
    path, extras = (found.group("path"), found.group("extras")) if found else (word, "")
    folder = path if path.startswith("/") else posixpath.normpath(posixpath.join(working_dir, path or "."))
    return folder, tuple(e.strip() for e in extras.split(",") if e.strip())


def _uv_sync(words: list[str], working_dir: str) -> InstallStep:
    command = " ".join(words)
    extras: list[str] = []
    groups: list[str] = ["dev"]  # uv sync installs the `dev` group unless told not to (uv docs, "Dependency groups")
    i = 2
    while i < len(words):
        word = words[i]
        name, eq, inline = word.partition("=")
        if name in ("--extra", "--group", "--only-group", "--project", "--directory"):
            value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
            i += 0 if eq else 1
            if name == "--extra":
                extras.append(value)
            elif name in ("--group", "--only-group"):
                groups.append(value)
            else:
                working_dir = posixpath.normpath(posixpath.join(working_dir, value))
        elif word == "--all-extras":
            extras.append("*")
        elif word in ("--no-dev", "--only-dev"):
            groups = [g for g in groups if g != "dev"] if word == "--no-dev" else groups
        elif word == "--all-groups":
            groups.append("*")
        elif word.startswith("-") and word not in _PIP_FLAGS and word not in ("--frozen", "--locked", "--inexact"):
            if word in _PIP_VALUED:
                i += 1
            else:
                return InstallStep(command=command, unread=f"the option {word[:40]} of uv sync is not read")
        i += 1
    return InstallStep(command=command, projects=((working_dir, tuple(extras)),), groups=((working_dir, tuple(groups)),))


def _conda(words: list[str]) -> InstallStep:
    command = " ".join(words)
    names: list[str] = []
    i = 2
    while i < len(words):
        word = words[i]
        if word in _CONDA_VALUED:
            if word == "--file":
                return InstallStep(command=command, unread="conda install --file is not read")
            i += 2
            continue
        if word.startswith("-"):
            i += 1
            continue
        if "$" in word:
            return InstallStep(command=command, unread=f"{word[:60]} is known only at run time")
        # conda's `name=1.2` / `name==1.2` / `channel::name`
        name = word.split("::")[-1]
        base = re.split(r"=+", name, maxsplit=1)[0]
        pinned = re.search(r"=+([0-9][^=]*)$", name)
        names.append(base + (f"=={pinned.group(1)}" if pinned and "*" not in pinned.group(1) else ""))
        i += 1
    return InstallStep(command=command, requirements=tuple(names))


def fresh_python(command: str, python: str = "") -> InstallStep:
    """A fresh interpreter from here on (`actions/setup-python`, a slim Python image), of the Python version `python`
    when it is a literal `X.Y` or `X.Y.Z` ("" otherwise)."""
    return InstallStep(kind=StepKind.FRESH, command=command, python=python_version(python))


_PYTHON_VERSION = re.compile(r"[0-9]\.[0-9]{1,2}(?:\.[0-9]{1,2})?")


def python_version(text: str) -> str:
    """`text` when it names one Python minor version (`3.10`, `3.10.4`), else "" (`3.x`, `>=3.9`, `pypy3.10`)."""
    text = text.strip().strip("'\"")
    return text if _PYTHON_VERSION.fullmatch(text) else ""


def _conda_created(words: list[str]) -> tuple[str, str]:
    """(Python version, environment name) of `conda create -n NAME python=3.10 ...`; "" where not said."""
    name = python = ""
    for i, word in enumerate(words[2:], start=2):
        if word in ("-n", "--name") and i + 1 < len(words):
            name = words[i + 1]
        elif word.startswith("--name="):
            name = word.partition("=")[2]
        elif re.fullmatch(r"python=+[0-9.]+", word):
            python = python_version(word.removeprefix("python").lstrip("="))
    return python, name
