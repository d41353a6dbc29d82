"""The text of Makefile lines as GNU make 4.3's `read.c` cuts it: continuations, comments, the first character
outside variable references, a variable assignment (`parse_variable_definition`, `parse_var_assignment`) and the
two texts of an `ifeq`; pure.
"""

from __future__ import annotations

import re

from matrix.schedule.make.variables import MakeStops

CONDITIONALS = frozenset({"ifdef", "ifndef", "ifeq", "ifneq", "else", "endif"})
MODIFIERS = frozenset({"export", "unexport", "override", "private", "define", "undefine"})
OPERATORS = ("::=", ":=", "+=", "?=", "!=", "=")


def continued(line: str) -> bool:
    """Whether `line` ends in an odd number of backslashes (a continuation)."""
    count = len(line) - len(line.rstrip("\\"))
    return count % 2 == 1


def strip_comment(line: str) -> str:
    """The line before an unescaped `#` (`\\#` stays a `#`)."""
    if "#" not in line:
        return line
    out: list[str] = []
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\" and i + 1 < len(line) and line[i + 1] == "#":
            out.append("#")
            i += 2
            continue
        if char == "#":
            break
        out.append(char)
        i += 1
    return "".join(out)


def condensed(written: str) -> str:
    """A logical line's backslash-newlines, with the blanks around them, made one space each."""
    if "\\\n" not in written:
        return written[:-1] if continued(written) else written
    pieces = written.split("\n")
    out = [p[:-1].rstrip(" \t") if i < len(pieces) - 1 else p for i, p in enumerate(pieces)]
    joined = " ".join([out[0], *(p.lstrip(" \t") for p in out[1:])])
    return joined[:-1] if continued(joined) else joined


def top_level(text: str, chars: str) -> int:
    """The index of the first of `chars` outside variable references, or -1."""
    depth = 0
    i = 0
    while i < len(text):
        c = text[i]
        if c == "$" and i + 1 < len(text):
            if text[i + 1] in "({":
                depth += 1
                i += 2
                continue
            i += 2
            continue
        if c in ")}" and depth:
            depth -= 1
        elif c in chars and depth == 0:
            return i
        i += 1
    return -1


def parse_definition(text: str) -> tuple[str, str, str] | None:
    """`parse_variable_definition`: (name as written, operator, value) when `text` is one assignment: a name
    (one word, references allowed), optional blanks, an operator; a colon that starts no operator makes it a rule."""
    i = 0
    name_end = -1
    while i < len(text):
        c = text[i]
        if name_end >= 0 and c not in " \t":
            operator = next((o for o in OPERATORS if text.startswith(o, i)), None)
            return None if operator is None else (text[:name_end], operator, text[i + len(operator) :].lstrip(" \t"))
        if c == "#":
            return None
        if c == "$" and i + 1 < len(text) and text[i + 1] in "({":
            open_ = text[i + 1]
            close = ")" if open_ == "(" else "}"
            depth, i = 1, i + 2
            while i < len(text) and depth:
                depth += 1 if text[i] == open_ else -1 if text[i] == close else 0
                i += 1
            continue
        if c == "$":
            i += 2
            continue
        if c in " \t":
            name_end = i
            i += 1
            while i < len(text) and text[i] in " \t":
                i += 1
            continue
        operator = next((o for o in OPERATORS if text.startswith(o, i)), None)
        if operator is not None:
            return text[:i], operator, text[i + len(operator) :].lstrip(" \t")
        if c == ":":
            return None
        i += 1
    return None


def parse_assignment(line: str, *, target: bool) -> tuple[tuple[str, ...], str, tuple[str, str, str] | None]:
    """(modifiers, the text after them, the assignment or None) of a line (`parse_var_assignment`): leading
    `export`/`override`/... words are modifiers until the rest is an assignment; modifiers before a text that is
    none stay (`export NAME`)."""
    modifiers: list[str] = []
    rest = line
    while True:
        found = parse_definition(rest)
        if found is not None:
            return tuple(modifiers), rest, found
        parts = rest.split(None, 1)
        word = parts[0] if parts else ""
        after = parts[1] if len(parts) > 1 else ""
        if word in ("define", "undefine") and not target:
            return (*modifiers, word), after, None
        if word not in MODIFIERS or word in ("define", "undefine"):
            return tuple(modifiers), rest if modifiers else line, None
        modifiers.append(word)
        rest = after
        if not rest:
            return tuple(modifiers), "", None


def comparands(rest: str, where: str) -> tuple[str, str]:
    """The two texts of `ifeq (a,b)` / `ifeq "a" 'b'` as `conditional_line` cuts them."""
    if rest.startswith("("):
        depth = 0
        for i in range(1, len(rest)):
            c = rest[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "," and depth <= 0:
                first = rest[1:i].rstrip(" \t")
                tail = rest[i + 1 :].lstrip(" \t")
                depth2 = 0
                for j, d in enumerate(tail):
                    if d == "(":
                        depth2 += 1
                    elif d == ")":
                        if depth2 <= 0:
                            if tail[j + 1 :].strip():
                                raise MakeStops(f"{where}: extraneous text after conditional directive")
                            return first, tail[:j]
                        depth2 -= 1
                break
        raise MakeStops(f"{where}: invalid syntax in conditional")
    match = re.fullmatch(r"""(["'])(.*?)\1[ \t]*(["'])(.*?)\3[ \t]*""", rest)
    if match is None:
        raise MakeStops(f"{where}: invalid syntax in conditional")
    return match.group(2), match.group(4)
