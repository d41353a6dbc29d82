"""Cell selectors: glob patterns with brace expansion, parsed here (never eval'd)."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from matrix.core.errors import SelectorError
from matrix.core.model import Cell


def expand_braces(pattern: str) -> list[str]:
    """`a{b,c{d,e}}f` -> [abf, acdf, acef]; unbalanced braces are an error."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"selector {pattern!r}: '}}' without '{{' at position {i}")
            if depth == 0:
                inner = pattern[start + 1 : i]
                head, tail = pattern[:start], pattern[i + 1 :]
                out: list[str] = []
                for option in _split_top_level(inner):
                    for expanded in expand_braces(option):
                        out.extend(head + expanded + rest for rest in expand_braces(tail))
                return out
    if depth:
        raise SelectorError(f"selector {pattern!r}: '{{' is never closed")
    return [pattern]


def _split_top_level(inner: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += ch == "{"
        depth -= ch == "}"
        current.append(ch)
    parts.append("".join(current))
    return parts


@dataclass(frozen=True, kw_only=True)
class Selector:
    """Space-separated globs; a leading `!` excludes. Built from text once."""

    text: str
    include: tuple[tuple[str, tuple[str, ...]], ...]
    exclude: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Selector:
        include: list[tuple[str, tuple[str, ...]]] = []
        exclude: list[str] = []
        words = text.split()
        if not words:
            raise SelectorError("empty selector")
        for word in words:
            if word.startswith("!"):
                if len(word) == 1:
                    raise SelectorError("selector '!' excludes nothing")
                exclude.extend(expand_braces(word[1:]))
            else:
                include.append((word, tuple(expand_braces(word))))
        if not include:
            include.append(("*", ("*",)))
        return cls(text=text, include=tuple(include), exclude=tuple(exclude))

    def matches(self, cell_id: str) -> bool:
        if any(fnmatch.fnmatchcase(cell_id, p) for p in self.exclude):
            return False
        return any(fnmatch.fnmatchcase(cell_id, p) for _, pats in self.include for p in pats)

    def filter(self, cells: Sequence[Cell]) -> list[Cell]:
        """Cells matched; an include pattern that matches nothing is an error with a hint."""
        ids = [c.id for c in cells]
        for word, pats in self.include:
            if not any(fnmatch.fnmatchcase(i, p) for i in ids for p in pats):
                raise SelectorError(f"selector {word!r} matches no cell{nearest_hint(word, ids)}")
        return [c for c in cells if self.matches(c.id)]


def nearest_hint(word: str, candidates: Iterable[str], *, noun: str = "ids", listing: str = "`specmatrix cells`") -> str:
    """`; nearest ids: a, b` for an error message, or where to look when nothing is close."""
    probe = word.replace("*", "").replace("?", "").replace("{", "").replace("}", "")
    close = difflib.get_close_matches(probe, list(candidates), n=3, cutoff=0.4)
    return f"; nearest {noun}: {', '.join(close)}" if close else f"; {listing} lists the {noun}"


def select(cells: Sequence[Cell], selectors: Sequence[str]) -> list[Cell]:
    """Cells matched by every selector in turn (none given: all cells)."""
    chosen = list(cells)
    for text in selectors:
        chosen = Selector.parse(text).filter(chosen)
    return chosen
