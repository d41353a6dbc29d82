"""The simple commands of a `run:` script or a shell script, read with a real shell parser (`shell_tree`, on
tree-sitter-bash): comments, arrays, `if`/`case`/`&&` branches with their conditions, `cd`, environment prefixes
(`IS_BLACKWELL=1 python3 ...`), functions and `bash -c "..."` as bash reads them; wrappers in front of a command
(`env X=1`, `timeout 60`, `sudo -E`, `nohup`, `docker exec C`) taken off; pure.
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping

from matrix.schedule.shell.tree import Command

MAX_SCRIPT = 256 * 1024
# Text a command handing work to another file holds (`bash x.sh`, `make test`, `modal run -m m::f`, `tox -e e`,
# `python tests/test_x.py`, `python -m unittest`, `python tools/run_ci.py`): a line with one of these is read when
# scripts are followed.
# A test file's name is matched with what stands before it, so a shell variable such as `test_file` does not count.
FOLLOWED = (".sh", "make", "modal", "tox", "nox", "unittest", "/test_", "python test_", "python3 test_", "_test.py", ".py")

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Words in front of a command that run it unchanged (their options taken off with them).
_PLAIN = frozenset({"exec", "time", "nohup", "command", "builtin", "nice", "stdbuf", "ionice", "chronic", "unbuffer"})


_SOURCES = re.compile(r"(?:^|[;&|\s])(?:source|\.)\s")
_NAMES = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def commands(
    script: str,
    working_dir: str = ".",
    keywords: tuple[str, ...] | None = None,
    env: Mapping[str, str] | None = None,
    load: Callable[[str], str | None] | None = None,
) -> tuple[Command, ...]:
    """Every simple command of `script`, in order, with the conditions its branch rests on; `env` is what the step
    sets before the script runs (it decides `if [ "$X" = 1 ]`). With `keywords`, simple statements holding none
    of them (and changing no folder or variable) are skipped, which keeps long scripts cheap. With `load`
    (repo-relative path -> text), `source FILE` is read into the script as bash reads it; a command from such a
    file names it (`Command.file`)."""
    text = script[:MAX_SCRIPT]
    names = _names(text) if load is None or not _sources(text) else None  # a sourced file may read any name
    known = tuple(sorted((k, v) for k, v in (env or {}).items() if names is None or k in names))
    return _commands(text, working_dir, keywords, known, load)


@functools.lru_cache(maxsize=512)
def _sources(script: str) -> bool:
    return _SOURCES.search(script) is not None


@functools.lru_cache(maxsize=512)
def _names(script: str) -> frozenset[str]:
    """The variable names a script reads: only those of the env can change what it runs."""
    return frozenset(_NAMES.findall(script))


@functools.lru_cache(maxsize=4096)
def _commands(
    script: str,
    working_dir: str,
    keywords: tuple[str, ...] | None,
    env: tuple[tuple[str, str], ...],
    load: Callable[[str], str | None] | None,
) -> tuple[Command, ...]:
    from matrix.schedule.shell.tree import walk  # the parser is loaded when a script is read
    from matrix.schedule.shell.words import known_from

    return tuple(walk(script, working_dir, known_from(dict(env)), keywords, unwrap, load=load))


def without_comments(script: str) -> str:
    """`script` with its shell comments blanked (same length, same lines): a commented-out
    `echo "X=1" >> $GITHUB_ENV` writes nothing. Parsed only when the text has a `#` at all."""
    if "#" not in script:
        return script
    from matrix.schedule.shell.tree import parse

    data = bytearray(script.encode("utf-8", "replace"))
    stack = [parse(script).root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment":
            data[node.start_byte : node.end_byte] = b" " * (node.end_byte - node.start_byte)
        else:
            stack.extend(node.children)
    return data.decode("utf-8", "replace")


def unwrap(words: list[str], env: list[tuple[str, str]]) -> tuple[list[str], str | None]:
    """Take off `env [-u X] X=1`, `timeout [-k N] N`, `sudo [-E]`, `docker exec [opts] C`,
    `time`, `nohup`, `exec` in front of the command; the assignments they make go to `env`. Also the folder a
    wrapper runs it in (`docker exec -w DIR`), else None."""
    folder: str | None = None
    for _ in range(8):
        if not words:
            return words, folder
        head = words[0]
        if head == "env":
            words = words[1:]
            while words and (_ASSIGN.match(words[0]) or words[0].startswith("-")):
                if _ASSIGN.match(words[0]):
                    name, _, value = words[0].partition("=")
                    env.append((name, value))
                    words = words[1:]
                elif words[0] in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                    words = words[2:]
                else:
                    words = words[1:]
        elif head == "timeout":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-k", "-s", "--kill-after", "--signal") else words[1:]
            words = words[1:]  # the duration
        elif head == "sudo":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U") else words[1:]
            while words and _ASSIGN.match(words[0]):
                name, _, value = words[0].partition("=")
                env.append((name, value))
                words = words[1:]
        elif head == "docker" and len(words) > 2 and words[1] == "exec":
            words, folder = _docker_exec(words[2:], env)
        elif head in _PLAIN:
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-n", "-c", "-o", "-e", "-i") else words[1:]
        else:
            return words, folder
    return words, folder


_DOCKER_VALUED = frozenset({"-e", "--env", "-w", "--workdir", "-u", "--user", "--env-file", "--detach-keys"})


# The pair `docker exec` leaves in a command's env: the runner's own environment stops there, and what reaches the
# command is the container's (`matrix.schedule.containers.docker`). Its value is `exec_marker`'s JSON: the container, the
# `-e X=1` pairs, and why the container may hold more than the readers can see ("" when nothing).
CONTAINER = "@container"
# `source FILE` in the command a container runs: a virtualenv's `bin/activate` sets no variable a test reads.
_CONTAINER_SOURCES = re.compile(r"(?:^|[;&|(])\s*(?:source|\.)\s+([^\s;&|)]+)")


def _docker_exec(words: list[str], env: list[tuple[str, str]]) -> tuple[list[str], str | None]:
    """`docker exec [options] CONTAINER command...` -> (command, its `-w` folder); the container and its
    `-e X=1` options go to `env` as one CONTAINER pair."""
    folder: str | None = None
    given: list[tuple[str, str]] = []
    unread: list[str] = []
    i = 0
    while i < len(words) and words[i].startswith("-"):
        option, eq, inline = words[i].partition("=")
        if option in _DOCKER_VALUED and not eq:
            value = words[i + 1] if i + 1 < len(words) else ""
            i += 2
        else:
            value = inline
            i += 1
        if option in ("-e", "--env") and _ASSIGN.match(value):
            name, _, assigned = value.partition("=")
            given.append((name, assigned))
        elif option in ("-e", "--env"):
            unread.append(f"`docker exec -e {value}` passes the runner's {value}")
        elif option == "--env-file":
            unread.append(f"`docker exec --env-file {value}` is read at run time")
        elif option in ("-w", "--workdir"):
            folder = value
    command = words[i + 1 :]
    if len(command) > 2 and command[1] == "-c" and posixpath.basename(command[0]) in ("bash", "sh", "zsh", "dash"):
        for path in _CONTAINER_SOURCES.findall(command[2]):
            if not path.endswith("/bin/activate"):
                unread.append(f"`source {path}` in the container may set variables")
    container = words[i] if i < len(words) else ""
    env.append((CONTAINER, json.dumps([container, given, "; ".join(unread)])))
    return command, folder  # past the container


def exec_marker(value: str) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """A CONTAINER pair's value: (the container, the `docker exec -e` pairs, why more may be set or "")."""
    name, given, unread = json.loads(value)
    return str(name), tuple((str(k), str(v)) for k, v in given), str(unread)


def split_words(text: str) -> tuple[str, ...]:
    """shlex words of one command line (a malformed one gives none)."""
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return ()
