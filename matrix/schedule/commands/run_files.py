"""The file a command runs when it is not named `*.sh`: `bash FILE` / `sh FILE` whatever the file's name
(`bash ci/run-tests`, `bash x.bash`), and `./FILE` or `dir/FILE` run by its shebang (a shell one: a shell script;
a Python one: a Python program; none: bash runs it as a shell script, POSIX "Command Search and Execution"); pure
apart from the loader.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
# Shell options that take the next word (`bash -o pipefail x`, `bash --rcfile f x`).
_SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_INTERPRETER = re.compile(r"^#!\s*(\S+)(?:\s+(?:-\S+\s+)*(\S+))?")
_PYTHON = re.compile(r"^python(?:[23](?:\.\d+)?)?$")


@dataclass(frozen=True, kw_only=True)
class RunFile:
    """A file a command runs: repository-relative (None when its path is known only at run time, `why` says so),
    as written, its arguments, and whether it is a Python program."""

    path: str | None
    written: str
    arguments: tuple[str, ...] = ()
    python: bool = False
    why: str = ""


def run_files(words: Sequence[str], working_dir: str, load: Callable[[str], str | None]) -> list[RunFile]:
    """The file `words` (prefixes taken off) run, when it is one of those the module docstring names."""
    if not words:
        return []
    head = posixpath.basename(words[0])
    if head in _SHELLS:
        i = 1
        while i < len(words) and words[i][:1] in ("-", "+") and words[i] not in ("-", "--"):
            flag = words[i]
            if not flag.startswith("--") and ("c" in flag[1:] or "s" in flag[1:]):
                return []  # `bash -c '...'` (the walk reads it) or a script on stdin
            # `-o NAME` and `-O NAME` take the next word, also in a group (`-eo pipefail`)
            i += 1 + (1 if flag in _SHELL_VALUED else 0 if flag.startswith("--") else sum(c in "oO" for c in flag[1:]))
        i += 1 if i < len(words) and words[i] == "--" else 0
        if i >= len(words):
            return []
        target = words[i]
        if target.endswith(".sh") and i == 1:
            return []  # `pytest_command.called_scripts` reads `bash x.sh`; after options (`bash -ex x.sh`), read here
        if "$" in target or "`" in target or "__UNRESOLVED_" in target:
            rooted = _rooted(target)
            if rooted is None:
                return [RunFile(path=None, written=target, why=f"runs the script {target[:80]}, known only at run time")]
            target = rooted
        return [RunFile(path=_relative(target, working_dir), written=words[i], arguments=tuple(words[i + 1 :]))]
    if "/" not in words[0] or words[0].endswith(".sh"):
        return []
    target = words[0]
    if "$" in target or "`" in target:
        rooted = _rooted(target)
        if rooted is None:
            return []  # `$CONDA/bin/python`: a program of the runner, not a file of the checkout
        target = rooted
    path = _relative(target, working_dir)
    if path.startswith(("/", "~", "../")):
        return []
    text = load(path)
    if text is None or "\x00" in text[:1024]:
        return []
    kind = _kind(text)
    if kind is None:
        return []
    return [RunFile(path=path, written=words[0], arguments=tuple(words[1:]), python=kind == "python")]


def _kind(text: str) -> str | None:
    """ "shell" or "python" by a file's shebang (no shebang: a shell script), None for another interpreter."""
    first = text.split("\n", 1)[0]
    found = _INTERPRETER.match(first)
    if not first.startswith("#!"):
        return "shell"
    if found is None:
        return None
    program = posixpath.basename(found.group(1))
    if program == "env" and found.group(2):
        program = posixpath.basename(found.group(2))
    if program in _SHELLS:
        return "shell"
    if _PYTHON.match(program):
        return "python"
    return None


def _rooted(path: str) -> str | None:
    from matrix.schedule.shell.tree import from_workspace

    return from_workspace(path)


def _relative(path: str, working_dir: str) -> str:
    joined = posixpath.normpath(posixpath.join(working_dir, path)) if not path.startswith("/") else path
    return joined.removeprefix("./")
