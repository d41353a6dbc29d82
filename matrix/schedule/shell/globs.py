"""Pathname expansion as bash does it (GNU Bash Reference Manual, "Filename Expansion" and "Pattern Matching",
bash 5.2), over the checkout's folders; pure over a `Folders` listing.

`*`, `?` and `[...]` (`!` or `^` negates) match within one path component; a name starting with a dot is matched
only by a pattern starting with one (unless `dotglob`), and `.`/`..` never (`globskipdots`, on by default in 5.2);
with `globstar` a `**` component matches zero or more folders (a last `**` every file and folder below); a trailing
`/` matches folders only. Matches are sorted by their bytes (what bash gives in the C locale; the order pytest
runs them in is not what the audit reads). A pattern outside the checkout, a POSIX class (`[[:alpha:]]`) or more
than `MAX_MATCHES` matches gives None: not known before the run; so does a `**` that meets a link to a folder
(bash follows some and not others).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

MAX_MATCHES = 4096
MAX_FOLDERS = 2048  # folders one expansion may list


FOLDER = "d"  # an entry that is a folder
LINKED_FOLDER = "l"  # a link to a folder: matched as one, but `**` does not descend into it (bash 4.3 and later)
FILE = "f"  # anything else


class Folders(Protocol):
    """The checkout's folders: (name, kind: FOLDER, LINKED_FOLDER or FILE) of each entry of a repository-relative
    folder, None when it is no folder of the checkout."""

    def entries(self, folder: str) -> Sequence[tuple[str, str]] | None: ...


@dataclass(frozen=True, kw_only=True)
class GlobOptions:
    """The shell options that change pathname expansion (`shopt -s globstar`, `dotglob`, `nullglob`)."""

    globstar: bool = False
    dotglob: bool = False
    nullglob: bool = False


class _TooMany(Exception):
    pass


def has_pattern(word: str) -> bool:
    """Whether a word (quoted parts escaped) holds an unescaped `*`, `?` or `[`."""
    return re.search(r"(?<!\\)(?:\\\\)*[*?\[]", word) is not None


def expand(pattern: str, working_dir: str, folders: Folders, options: GlobOptions) -> list[str] | None:
    """The paths `pattern` (relative to `working_dir`, repository-relative) matches, written as bash writes them
    (relative to the command's folder, as the pattern is); [] when none; None when not known before the run."""
    if pattern.startswith(("/", "~")) or working_dir.startswith(("/", "~")) or "$" in working_dir:
        return None
    if "[[:" in pattern or "//" in pattern:
        return None
    parts = pattern.split("/")
    folders_only = parts[-1] == ""
    if folders_only:
        parts = parts[:-1]
    budget = [MAX_FOLDERS]
    try:
        found = _match(parts, "", working_dir, _Context(folders=folders, options=options, budget=budget))
    except _TooMany:
        return None
    if folders_only:
        found = [(p if p.endswith("/") else p + "/", FOLDER) for p, kind in found if kind != FILE]
    paths = sorted({p for p, _ in found}, key=lambda p: p.encode())
    return None if len(paths) > MAX_MATCHES else paths


@dataclass(frozen=True, kw_only=True)
class _Context:
    """What one expansion reads with: the folders, the options, and the folder listings it may still make."""

    folders: Folders
    options: GlobOptions
    budget: list[int]


def _match(parts: list[str], written: str, at: str, context: _Context) -> list[tuple[str, str]]:
    """(path as written, is a folder) for the components `parts` matched from folder `at` (repository-relative)."""
    if not parts:
        return [(written, FOLDER)]
    head, rest = parts[0], parts[1:]

    def join(name: str) -> str:
        return f"{written}/{name}" if written else name

    if context.options.globstar and head == "**":
        return _globstar(rest, written, at, context)
    if not has_pattern(head):
        name = re.sub(r"\\(.)", r"\1", head)
        inner = posixpath.normpath(posixpath.join(at, name))
        if inner.startswith("../") or inner == "..":
            raise _TooMany  # outside the checkout: not known
        listing = _list(at, context)
        if name in (".", ".."):
            return _match(rest, join(name), inner, context)
        hit = next((kind for entry, kind in listing if entry == name), None)
        if hit is None or (rest and hit == FILE):
            return []
        return _match(rest, join(name), inner, context) if rest else [(join(name), hit)]
    matcher = _compile(head)
    out: list[tuple[str, str]] = []
    for entry, kind in _list(at, context):
        if entry.startswith(".") and not head.startswith(".") and not context.options.dotglob:
            continue
        if not matcher.fullmatch(entry):
            continue
        if rest:
            if kind != FILE:
                out.extend(_match(rest, join(entry), posixpath.join(at, entry), context))
        else:
            out.append((join(entry), kind))
        if len(out) > MAX_MATCHES:
            raise _TooMany
    return out


def _globstar(rest: list[str], written: str, at: str, context: _Context) -> list[tuple[str, str]]:
    """`**`: zero or more folders, then `rest` (nothing after it: every file and folder below, the folder's own
    entries included)."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, str]] = [(written, at)]  # (as written, repository-relative)
    while stack:
        shown, folder = stack.pop()
        if rest:
            out.extend(_match(rest, shown, folder, context))
        for entry, kind in _list(folder, context):
            if entry.startswith(".") and not context.options.dotglob:
                continue
            if kind == LINKED_FOLDER:
                raise _TooMany  # bash's `**` treats links to folders unevenly across versions: not known
            path = f"{shown}/{entry}" if shown else entry
            if not rest:
                out.append((path, kind))
            if kind == FOLDER:
                stack.append((path, posixpath.join(folder, entry)))
        if len(out) > MAX_MATCHES:
            raise _TooMany
    if not rest and written:
        out.append((written + "/", FOLDER))  # `dir/**` also gives `dir/` itself
    return out


def _list(folder: str, context: _Context) -> Sequence[tuple[str, str]]:
    context.budget[0] -= 1
    if context.budget[0] < 0:
        raise _TooMany
    found = context.folders.entries(posixpath.normpath(folder))
    return found or ()


def _compile(pattern: str) -> re.Pattern[str]:
    """A bash pattern (one component) as a regular expression."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = _class_end(pattern, i)
            if end is None:
                out.append(re.escape(char))
            else:
                body = pattern[i + 1 : end]
                negate = body[:1] in ("!", "^")
                body = body[1:] if negate else body
                escaped = "".join("\\" + c if c in "\\^[]" else c for c in body)
                out.append(f"[{'^' if negate else ''}{escaped}]")
                i = end + 1
                continue
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _class_end(pattern: str, start: int) -> int | None:
    """Where a `[...]` that starts at `start` ends (a `]` right after `[`, `[!` or `[^` is a member)."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "]":
            return i
        i += 1
    return None
