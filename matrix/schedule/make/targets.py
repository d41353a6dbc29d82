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
from dataclasses import dataclass, field

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
    state = _Parse(words=words, folder=working_dir)
    inherited, inherited_flags = _makeflags((env or {}).get("MAKEFLAGS", ""))
    for flag in inherited_flags:
        state.flag(flag)
    state.variables.extend(inherited)
    options = True
    while state.at < len(words):
        word = state.next()
        if options and word == "--":
            options = False
        elif options and word.startswith("--"):
            state.long(word)
        elif options and word.startswith("-") and len(word) > 1:
            state.short(word)
        elif assignment := _ASSIGNMENT.match(word):
            state.variables = [v for v in state.variables if v[0] != assignment.group(1)]
            state.variables.append((assignment.group(1), assignment.group(2), assignment.group(3)))
        else:
            state.goals.append(word)
    state.unread += [f"{n}{o} on the command line" for n, o, _ in state.variables if o not in ("=", ":=", "::=")]
    return MakeCall(
        folder=state.folder,
        makefiles=tuple(state.makefiles),
        goals=tuple(state.goals),
        variables=tuple(state.variables),
        always_make=state.always,
        no_builtin_variables=state.no_variables,
        no_builtin_rules=state.no_rules,
        unread=state.unread[0] if state.unread else "",
        program=words[0],
    )


@dataclass(kw_only=True)
class _Parse:
    """What the options read so far say. Mutable: one per command line."""

    words: Sequence[str]
    folder: str
    at: int = 1
    makefiles: list[str] = field(default_factory=list)
    goals: list[str] = field(default_factory=list)
    variables: list[tuple[str, str, str]] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    always: bool = False
    no_variables: bool = False
    no_rules: bool = False

    def next(self) -> str:
        self.at += 1
        return self.words[self.at - 1] if self.at - 1 < len(self.words) else ""

    def long(self, word: str) -> None:
        name, eq, value = word.partition("=")
        if name in _UNREAD_LONG:
            self.unread.append(_UNREAD_LONG[name])
        elif name in ("--directory", "--file", "--makefile", "--include-dir"):
            value = value if eq else self.next()
            if name == "--directory":
                self.folder = _join(self.folder, value)
            elif name != "--include-dir":
                self.makefiles.append(value)
        elif name == "--always-make":
            self.always = True
        elif name in ("--no-builtin-variables", "--no-builtin-rules"):
            self.no_rules = True
            self.no_variables = self.no_variables or name == "--no-builtin-variables"
        elif name in ("--jobs", "--load-average", "--max-load") and not eq and self._number_follows():
            self.next()
        elif name not in _LONG_FREE:
            self.unread.append(name)

    def short(self, word: str) -> None:
        """Combined short options (`-ks`, `-C dir`, `-fFILE`, `-j4`, `-j 4`)."""
        for at in range(1, len(word)):
            flag = word[at]
            if flag in _VALUED_SHORT:
                value = word[at + 1 :] or self.next()
                if flag == "C":
                    self.folder = _join(self.folder, value)
                elif flag == "f":
                    self.makefiles.append(value)
                elif flag in _UNREAD_SHORT:
                    self.unread.append(_UNREAD_SHORT[flag])
                return
            if flag in _OPTIONAL_SHORT:
                if not word[at + 1 :] and flag in "jl" and self._number_follows():
                    self.next()
                return
            self.flag(flag)

    def flag(self, flag: str) -> None:
        if flag == "B":
            self.always = True
        elif flag in "Rr":
            self.no_rules = True
            self.no_variables = self.no_variables or flag == "R"
        elif flag in _UNREAD_SHORT:
            self.unread.append(_UNREAD_SHORT[flag])
        elif flag not in _FLAG_SHORT and flag not in _OPTIONAL_SHORT:
            self.unread.append(f"-{flag}")

    def _number_follows(self) -> bool:
        return self.at < len(self.words) and self.words[self.at].isdigit()


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
        assignment = None if word.startswith("-") else _ASSIGNMENT.match(word)
        if assignment:  # make takes a definition anywhere in MAKEFLAGS (`MAKEFLAGS=X=1 make`), `--` or not
            variables.append((assignment.group(1), assignment.group(2), assignment.group(3)))
            continue
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
