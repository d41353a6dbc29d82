"""A `make` command line: the folder make runs in, its Makefiles, goals, command-line variables and options, with
the variables a parent make hands down through MAKEFLAGS; pure.

Options follow GNU make 4.3's `main.c` switch table (`make --help`): `-C`/`-f`/`-I`/`-o`/`-W` take a value (joined
or the next word), `-j`/`-l` an optional number, short flags combine (`-ksj4`). Options that change which commands
run beyond the subset (`-n`, `-q`, `-t`, `-e`, `-o`, `-W`, `--eval`, `-p`...) make the call unread, named.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAKE_PROGRAMS = frozenset({"make", "gmake", "$(MAKE)", "${MAKE}"})
_VALUED_SHORT = frozenset("CfIoW")
_OPTIONAL_SHORT = frozenset("jlO")
_FLAG_SHORT = frozenset("bmikKsSrRBwLd")
_LONG_VALUED = frozenset(
    {"--directory", "--file", "--makefile", "--include-dir", "--old-file", "--assume-old", "--new-file", "--assume-new",
     "--what-if", "--eval"}
)  # fmt: skip
_LONG_FREE = frozenset(
    {"--keep-going", "--no-keep-going", "--stop", "--silent", "--quiet", "--no-silent", "--ignore-errors",
     "--no-builtin-rules", "--no-builtin-variables", "--always-make", "--print-directory", "--no-print-directory",
     "--check-symlink-times", "--warn-undefined-variables", "--trace", "--debug", "--jobs", "--load-average",
     "--max-load", "--output-sync"}
)  # fmt: skip
# What make does instead of running the goals' recipes, or how it reads variables, outside the subset.
_UNREAD_SHORT = {"n": "-n (a dry run)", "q": "-q (question mode)", "t": "-t (touch)", "e": "-e (environment overrides)",
                 "p": "-p (print the database)", "v": "-v", "h": "-h", "E": "-E (--eval)", "o": "-o", "W": "-W"}  # fmt: skip
_UNREAD_LONG = {"--just-print": "-n", "--dry-run": "-n", "--recon": "-n", "--question": "-q", "--touch": "-t",
                "--environment-overrides": "-e", "--print-data-base": "-p", "--version": "--version", "--help": "--help",
                "--eval": "--eval", "--old-file": "-o", "--assume-old": "-o", "--new-file": "-W", "--assume-new": "-W",
                "--what-if": "-W"}  # fmt: skip
_ASSIGNMENT = re.compile(r"^([^\s=:+?!]+)(::=|:=|\+=|\?=|!=|=)(.*)$", re.DOTALL)


@dataclass(frozen=True, kw_only=True)
class MakeCall:
    """`make [OPTION...] [NAME=value...] [GOAL...]` as make reads it: the folder it runs in (repository-relative),
    the Makefiles named with `-f` (none: make's default names), goals, command-line variables as
    (name, operator, value), the flags that change what runs, and the first option outside the subset ("" if
    none). `program` is how the command names make (`$(MAKE)` in a recipe is that text)."""

    folder: str
    makefiles: tuple[str, ...] = ()
    goals: tuple[str, ...] = ()
    variables: tuple[tuple[str, str, str], ...] = ()
    always_make: bool = False
    no_builtin_variables: bool = False
    no_builtin_rules: bool = False
    unread: str = ""
    program: str = "make"


def is_make(word: str) -> bool:
    return word in MAKE_PROGRAMS or posixpath.basename(word) in ("make", "gmake")


def make_call(words: Sequence[str], working_dir: str, env: Mapping[str, str] | None = None) -> MakeCall | None:
    """The make invocation `words` are (`$(MAKE)` and `gmake` count), else None; `env` may carry a parent make's
    MAKEFLAGS (its command-line variables, which a sub-make takes as its own)."""
    if not words or not is_make(words[0]):
        return None
    folder = working_dir
    makefiles: list[str] = []
    goals: list[str] = []
    variables: list[tuple[str, str, str]] = []
    state = {"always": False, "no_variables": False, "no_rules": False}
    unread: list[str] = []
    inherited, inherited_flags = _makeflags((env or {}).get("MAKEFLAGS", ""))
    for flag in inherited_flags:
        _short(flag, [], 0, state, unread)
    variables.extend(inherited)
    i, options = 1, True
    while i < len(words):
        word = words[i]
        i += 1
        if options and word == "--":
            options = False
            continue
        if options and word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in _UNREAD_LONG:
                unread.append(_UNREAD_LONG[name])
            elif name in ("--directory", "--file", "--makefile", "--include-dir"):
                if not eq:
                    value = words[i] if i < len(words) else ""
                    i += 1
                if name == "--directory":
                    folder = _join(folder, value)
                elif name != "--include-dir":
                    makefiles.append(value)
            elif name in ("--always-make",):
                state["always"] = True
            elif name in ("--no-builtin-variables",):
                state["no_variables"] = state["no_rules"] = True
            elif name in ("--no-builtin-rules",):
                state["no_rules"] = True
            elif name in ("--jobs", "--load-average", "--max-load") and not eq and i < len(words) and words[i].isdigit():
                i += 1
            elif name not in _LONG_FREE:
                unread.append(name)
            continue
        if options and word.startswith("-") and len(word) > 1:
            i = _options(word, words, i, state, unread, makefiles, folders := [folder])
            folder = folders[-1]
            continue
        assignment = _ASSIGNMENT.match(word)
        if assignment:
            variables = [v for v in variables if v[0] != assignment.group(1)]
            variables.append((assignment.group(1), assignment.group(2), assignment.group(3)))
        else:
            goals.append(word)
    for name, operator, _ in variables:
        if operator not in ("=", ":=", "::="):
            unread.append(f"{name}{operator} on the command line")
    return MakeCall(
        folder=folder,
        makefiles=tuple(makefiles),
        goals=tuple(goals),
        variables=tuple(variables),
        always_make=state["always"],
        no_builtin_variables=state["no_variables"],
        no_builtin_rules=state["no_rules"],
        unread=unread[0] if unread else "",
        program=words[0],
    )


def _options(
    word: str, words: Sequence[str], i: int, state: dict[str, bool], unread: list[str], makefiles: list[str], folders: list[str]
) -> int:
    """Combined short options (`-ks`, `-C dir`, `-fFILE`, `-j4`, `-j 4`); the index of the next word."""
    at = 1
    while at < len(word):
        flag = word[at]
        at += 1
        if flag in _VALUED_SHORT:
            value = word[at:]
            if not value:
                value = words[i] if i < len(words) else ""
                i += 1
            if flag == "C":
                folders.append(_join(folders[-1], value))
            elif flag == "f":
                makefiles.append(value)
            elif flag in _UNREAD_SHORT:
                unread.append(_UNREAD_SHORT[flag])
            return i
        if flag in _OPTIONAL_SHORT:
            rest = word[at:]
            if not rest and flag in "jl" and i < len(words) and words[i].isdigit():
                i += 1
            return i
        i = _short(flag, words, i, state, unread)
    return i


def _short(flag: str, words: Sequence[str], i: int, state: dict[str, bool], unread: list[str]) -> int:
    if flag == "B":
        state["always"] = True
    elif flag == "R":
        state["no_variables"] = state["no_rules"] = True
    elif flag == "r":
        state["no_rules"] = True
    elif flag in _UNREAD_SHORT:
        unread.append(_UNREAD_SHORT[flag])
    elif flag not in _FLAG_SHORT and flag not in _OPTIONAL_SHORT:
        unread.append(f"-{flag}")
    return i


def _makeflags(value: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(command-line variables, single-letter flags) a parent make wrote into MAKEFLAGS (` -ks -- X=1 Y=a\\ b`)."""
    words = _escaped_words(value)
    variables: list[tuple[str, str, str]] = []
    flags: list[str] = []
    if "--" in words:
        cut = words.index("--")
        for word in words[cut + 1 :]:
            assignment = _ASSIGNMENT.match(word)
            if assignment:
                variables.append((assignment.group(1), assignment.group(2), assignment.group(3)))
        words = words[:cut]
    for n, word in enumerate(words):
        if word.startswith("--"):
            continue
        if n == 0 and not word.startswith("-") and "=" not in word:
            flags.extend(word)
        elif word.startswith("-"):
            flags.extend(c for c in word[1:] if c.isalpha())
    return variables, flags


def _escaped_words(text: str) -> list[str]:
    out: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            current.append(text[i + 1])
            i += 2
            continue
        if char in " \t":
            if current:
                out.append("".join(current))
                current = []
        else:
            current.append(char)
        i += 1
    if current:
        out.append("".join(current))
    return out


def makeflags(variables: Sequence[tuple[str, str, str]]) -> str:
    """MAKEFLAGS as make 4.3 writes it for its recipes: ` -- NAME=value ...` with blanks escaped (`main.c`
    define_makeflags), empty when there is nothing to hand down."""
    if not variables:
        return ""
    return " -- " + " ".join(f"{name}{operator}{_escape(value)}" for name, operator, value in variables)


def _escape(value: str) -> str:
    return re.sub(r"([\s\\])", r"\\\1", value)


def _join(folder: str, path: str) -> str:
    return path if path.startswith("/") else posixpath.normpath(posixpath.join(folder, path))
