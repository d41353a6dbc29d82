"""The text of recipe lines as GNU make 4.3's `job.c` handles it once expanded: backslash-newline inside a reference
collapsed, an expanded line split into commands at unescaped newlines, make's `@`/`-`/`+` prefixes taken off,
and a command that is a sub-make (`[cd DIR &&] make ARGS`) recognised; pure.
"""

from __future__ import annotations

import posixpath
import shlex

from matrix.schedule.make.targets import is_make

_OPERATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", "<", ">", ">>"})


def collapse_in_references(text: str) -> str:
    """job.c new_job: backslash-newline inside a variable reference is taken out before expansion."""
    if "\\\n" not in text or "$" not in text:
        return text
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        if text.startswith("$(", i) or text.startswith("${", i):
            depth += 1
            out.append(text[i : i + 2])
            i += 2
            continue
        if text[i] in ")}" and depth:
            depth -= 1
        if depth and text.startswith("\\\n", i):
            out.append(" ")
            i += 2
            while i < len(text) and text[i] in " \t":
                i += 1
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def commands(text: str) -> list[str]:
    """The commands of an expanded recipe line: it splits at newlines not escaped by a backslash (a canned
    recipe from `define` gives several)."""
    out: list[str] = []
    start = 0
    for at, char in enumerate(text):
        if char == "\n" and (at == 0 or text[at - 1] != "\\"):
            out.append(text[start:at])
            start = at + 1
    out.append(text[start:])
    return out


def prefixes(command: str) -> tuple[str, bool]:
    """The command without make's `@`, `-`, `+` in front, and whether `+` was among them."""
    at = 0
    plus = False
    while at < len(command) and command[at] in "@-+ \t":
        plus = plus or command[at] == "+"
        at += 1
    return command[at:], plus


def sub_make_words(body: str, folder: str, program: str) -> tuple[str, list[str]] | None:
    """(the folder it runs in, its words) when `body` is `[cd DIR &&]... make ARGS` with nothing the shell would
    change (no variable, glob or quote left to read); None for any other shell form (the shell reader reads
    those, and follows a `make` inside)."""
    if any(c in body for c in "$`*?[~"):
        return None
    try:
        lexer = shlex.shlex(body, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        words = list(lexer)
    except ValueError:
        return None
    while len(words) >= 3 and words[0] == "cd" and words[2] in ("&&", ";"):
        folder = posixpath.normpath(posixpath.join(folder, words[1]))
        words = words[3:]
    if not words or (not is_make(words[0]) and words[0] != program):
        return None
    if any(w in _OPERATORS or w.startswith((">", "<")) for w in words):
        return None
    return folder, words
