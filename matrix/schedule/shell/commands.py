"""The simple commands of a `run:` script or a shell script, read with a real shell parser (`shell_tree`, on
tree-sitter-bash): comments, arrays, `if`/`case`/`&&` branches with their conditions, `cd`, environment prefixes
(`IS_BLACKWELL=1 python3 ...`), functions and `bash -c "..."` as bash reads them; wrappers in front of a command
(`env X=1`, `timeout 60`, `sudo -E`, `nohup`, `docker exec C`) taken off; pure.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Callable, Mapping

from matrix.schedule.shell.globs import Folders
from matrix.schedule.shell.scope import CLEAR_OP, CONTAINER, EXEC_OP, UNSET_OP, Command, environment, inside
from matrix.schedule.shell.subset import Outside

__all__ = [
    "CONTAINER",
    "FOLLOWED",
    "Command",
    "commands",
    "environment",
    "exec_marker",
    "inside",
    "split_words",
    "unwrap",
    "without_comments",
]

MAX_SCRIPT = 256 * 1024
# Text a command handing work to another file holds (`bash x.sh`, `bash ci/run-tests`, `./ci/run`, `make test`,
# `modal run -m m::f`, `tox -e e`, `python tests/test_x.py`, `python -m unittest`, `python tools/run_ci.py`,
# `python -c "..."`, a hand-off to another CI service): a line with one of these is read when scripts are followed.
# A test file's name is matched with what stands before it, so a shell variable such as `test_file` does not count.
FOLLOWED = (
    ".sh",
    "make",
    "modal",
    "tox",
    "nox",
    "unittest",
    "/test_",
    "python test_",
    "python3 test_",
    "_test.py",
    ".py",
    "bash ",
    "sh ",
    "./",
    "python -c",
    "python3 -c",
    "blossom-ci",
)

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Words in front of a command that run it unchanged (their options taken off with them).
_PLAIN = frozenset({"exec", "time", "nohup", "command", "builtin", "nice", "stdbuf", "ionice", "chronic", "unbuffer"})


_SOURCES = re.compile(r"(?:^|[;&|\s])(?:source|\.)\s")
_NAMES = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def commands(
    script: str,
    working_dir: str = ".",
    keywords: tuple[str, ...] | None = None,
    env: Mapping[str, str] | None = None,
    load: Callable[[str], str | None] | None = None,
    *,
    folders: Folders | None = None,
) -> tuple[Command, ...]:
    """Every simple command of `script`, in order, with the conditions its branch rests on; `env` is what the step
    sets before the script runs (it decides `if [ "$X" = 1 ]`). With `keywords`, simple statements holding none
    of them (and changing no folder or variable) are skipped, which keeps long scripts cheap. With `load`
    (repo-relative path -> text), `source FILE` is read into the script as bash reads it; a command from such a
    file names it (`Command.file`). Pathname patterns expand over `folders` (by default the loader's, when it
    lists folders: `TreeLoader.entries`); without any, a pattern is a run-time word."""
    text = script[:MAX_SCRIPT]
    names = _names(text) if load is None or not _sources(text) else None  # a sourced file may read any name
    known = tuple(sorted((k, v) for k, v in (env or {}).items() if names is None or k in names))
    listing = folders if folders is not None else folders_of(load)
    return _commands(text, working_dir, keywords, known, load, folders=listing)  # type: ignore[arg-type]


def folders_of(load: object) -> Folders | None:
    """The folder listing a script loader offers (the tree it reads from), if any."""
    owner = getattr(load, "__wrapped__", load)
    return owner if callable(getattr(owner, "entries", None)) else None  # type: ignore[return-value]


@functools.lru_cache(maxsize=512)
def _sources(script: str) -> bool:
    return _SOURCES.search(script) is not None


@functools.lru_cache(maxsize=512)
def _names(script: str) -> frozenset[str]:
    """The names a script mentions: only those of the env can change what it runs (by reading, assigning or
    unsetting them)."""
    return frozenset(_NAMES.findall(script))


@functools.lru_cache(maxsize=4096)
def _commands(
    script: str,
    working_dir: str,
    keywords: tuple[str, ...] | None,
    env: tuple[tuple[str, str], ...],
    load: Callable[[str], str | None] | None,
    *,
    folders: Folders | None,
) -> tuple[Command, ...]:
    from matrix.schedule.shell.tree import walk  # the parser is loaded when a script is read
    from matrix.schedule.shell.words import known_from

    return tuple(walk(script, working_dir, known_from(dict(env)), keywords, unwrap, load=load, folders=folders))


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
    """Take off `env [-u X] [-i] X=1`, `timeout [-k N] N`, `sudo [-E]`, `docker exec [opts] C` (and `docker run`,
    `podman`, `docker compose run`), `time`, `nohup`, `exec` in front of the command; what they do to its
    environment goes to `env` (assignments, and `shell.scope`'s operations: UNSET_OP, CLEAR_OP, EXEC_OP, CONTAINER).
    Also the folder a wrapper runs it in (`docker exec -w DIR`, `env -C DIR`), else None."""
    folder: str | None = None
    for _ in range(8):
        if not words:
            return words, folder
        head = words[0]
        if head in ("env", "/usr/bin/env", "/bin/env"):
            words, moved = _env(words[1:], env)
            folder = moved if moved is not None else folder
        elif head == "timeout":
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-k", "-s", "--kill-after", "--signal") else words[1:]
            words = words[1:]  # the duration
        elif head == "sudo":
            words = words[1:]
            kept = False  # sudo resets the environment (sudoers `env_reset`) unless told to keep it
            while words and words[0].startswith("-"):
                kept = kept or words[0] in ("-E", "--preserve-env")  # `--preserve-env=LIST` keeps only the list
                kept = kept or (not words[0].startswith("--") and "E" in words[0])
                words = words[2:] if words[0] in ("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U") else words[1:]
            if not kept and not _installs(words):
                raise Outside("`sudo` without -E (the environment the runner's sudoers policy keeps is not read)", later=False)
            while words and _ASSIGN.match(words[0]):
                name, _, value = words[0].partition("=")
                env.append((name, value))
                words = words[1:]
        elif head in _CONTAINER_TOOLS:
            from matrix.schedule.containers.calls import container_call, marker

            found = container_call(words)
            if found is None:
                return words, folder
            words, inside_folder, call = found
            env.append((CONTAINER, marker(call)))
            folder = inside_folder
        elif head in _PLAIN:
            if head == "exec":
                env.append((EXEC_OP, ""))
            words = words[1:]
            while words and words[0].startswith("-"):
                words = words[2:] if words[0] in ("-n", "-c", "-o", "-e", "-i", "-a") else words[1:]
        else:
            return words, folder
    return words, folder


def _installs(words: list[str]) -> bool:
    """Whether a command installs packages (`apt-get install`, `pip install`, `python -m pip`): what it installs does
    not depend on the environment sudo keeps."""
    head = words[0].rsplit("/", 1)[-1] if words else ""
    return head in _INSTALLERS or (head.startswith("python") and words[1:3] == ["-m", "pip"])


_INSTALLERS = frozenset({"apt", "apt-get", "dpkg", "yum", "dnf", "apk", "pip", "pip3", "conda", "mamba", "micromamba"})
_CONTAINER_TOOLS = frozenset({"docker", "podman", "nerdctl", "docker-compose", "podman-compose"})


def _env(words: list[str], env: list[tuple[str, str]]) -> tuple[list[str], str | None]:
    """`env [-i] [-u NAME] [-C DIR] [NAME=V]... COMMAND` (GNU coreutils 9 `env`): the command, its folder."""
    folder: str | None = None
    while words and (_ASSIGN.match(words[0]) or (words[0].startswith("-") and words[0] != "-")):
        word = words[0]
        if _ASSIGN.match(word):
            name, _, value = word.partition("=")
            env.append((name, value))
        elif word in ("-i", "--ignore-environment"):
            env.append((CLEAR_OP, ""))
        elif word in ("-u", "--unset") and len(words) > 1:
            env.append((UNSET_OP, words[1]))
            words = words[1:]
        elif word.startswith("--unset="):
            env.append((UNSET_OP, word.partition("=")[2]))
        elif word.startswith("-u") and len(word) > 2:
            env.append((UNSET_OP, word[2:]))
        elif word in ("-C", "--chdir") and len(words) > 1:
            folder = words[1]
            words = words[1:]
        elif word.startswith("--chdir="):
            folder = word.partition("=")[2]
        elif word.startswith("-C") and len(word) > 2:
            folder = word[2:]
        elif word in ("-S", "--split-string") or word.startswith("-S"):
            raise Outside("`env -S` (a command line env splits itself)", later=False)
        elif word == "--":
            words = words[1:]
            break
        words = words[1:]
    if words and words[0] == "-":  # `env - CMD` is `env -i CMD`
        env.append((CLEAR_OP, ""))
        words = words[1:]
    return words, folder


def exec_marker(value: str) -> tuple[str, tuple[tuple[str, str], ...], str]:
    """A CONTAINER pair's value: (the container's name as reports give it, its `-e` pairs, why more may be set or "")."""
    from matrix.schedule.containers.calls import container_name, read_marker

    call = read_marker(value)
    return container_name(call), call.env, "; ".join((*call.unread, *call.notes))


def split_words(text: str) -> tuple[str, ...]:
    """shlex words of one command line (a malformed one gives none)."""
    try:
        return tuple(shlex.split(text))
    except ValueError:
        return ()
