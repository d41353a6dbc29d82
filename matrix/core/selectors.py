"""Cell selectors: glob patterns with brace expansion, parsed here (never eval'd)."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from matrix.core.errors import SelectorError

if TYPE_CHECKING:  # annotations only: runner lookup (`nearest_hint`) uses this module without any cell
    from matrix.core.model import Cell

MAX_SELECTOR_CHARS = 4 * 1024 * 1024  # a 20,000-id shard file (`--matrix-select=@FILE`) is about 1 MiB
MAX_BRACE_DEPTH = 16
MAX_EXPANSIONS = 10_000  # per brace pattern
MAX_PATTERNS = 100_000  # per selector, all words together


def _check_braces(pattern: str) -> None:
    """Balanced and at most MAX_BRACE_DEPTH deep, in one linear pass (expansion then recurses at most that deep)."""
    depth = 0
    for i, ch in enumerate(pattern):
        if ch == "{":
            depth += 1
            if depth > MAX_BRACE_DEPTH:
                raise SelectorError(f"selector {_clip(pattern)}: braces nested more than {MAX_BRACE_DEPTH} deep")
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"selector {_clip(pattern)}: '}}' without '{{' at position {i}")
    if depth:
        raise SelectorError(f"selector {_clip(pattern)}: '{{' is never closed")


def _clip(pattern: str, width: int = 80) -> str:
    return repr(pattern if len(pattern) <= width else pattern[:width] + "...")


def expand_braces(pattern: str, limit: int = MAX_EXPANSIONS) -> list[str]:
    """`a{b,c{d,e}}f` -> [abf, acdf, acef]; unbalanced braces, or more than `limit` results, are an error."""
    _check_braces(pattern)
    return _expand(pattern, pattern, limit)


def _expand(text: str, whole: str, limit: int) -> list[str]:
    results = [""]
    i = 0
    while i < len(text):
        if text[i] != "{":
            nxt = text.find("{", i)
            nxt = len(text) if nxt < 0 else nxt
            chunk = text[i:nxt]
            results = [r + chunk for r in results]
            i = nxt
            continue
        close = _closing(text, i)
        options: list[str] = []
        for option in _split_top_level(text[i + 1 : close]):
            options.extend(_expand(option, whole, limit))
            _check_count(len(options), whole, limit)
        _check_count(len(results) * len(options), whole, limit)
        results = [r + o for r in results for o in options]
        i = close + 1
    return results


def _check_count(count: int, whole: str, limit: int) -> None:
    if count > limit:
        raise SelectorError(f"selector {_clip(whole)} expands to more than {limit:,} patterns; narrow it or use a glob")


def _closing(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "{"
        depth -= text[i] == "}"
        if depth == 0:
            return i
    raise SelectorError(f"selector {_clip(text)}: '{{' is never closed")  # unreachable after _check_braces


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
        if len(text) > MAX_SELECTOR_CHARS:
            raise SelectorError(f"selector of {len(text):,} characters; at most {MAX_SELECTOR_CHARS:,} (use a shard file)")
        words = text.split()
        if not words:
            raise SelectorError("empty selector")
        total = 0
        for word in words:
            if word.startswith("!"):
                if len(word) == 1:
                    raise SelectorError("selector '!' excludes nothing")
                patterns = expand_braces(word[1:])
                exclude.extend(patterns)
            else:
                patterns = expand_braces(word)
                include.append((word, tuple(patterns)))
            total += len(patterns)
            _check_count(total, text, MAX_PATTERNS)
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
                raise SelectorError(f"selector {_clip(word)} matches no cell{nearest_hint(word, ids)}")
        kept = [c for c in cells if self.matches(c.id)]
        if not kept:
            raise SelectorError(f"selector {_clip(self.text)} excludes every cell")
        return kept


NEAREST_CUTOFF = 0.4


def nearest(probe: str, candidates: Iterable[str], *, n: int = 3) -> list[str]:
    """The `n` candidates closest to `probe`: most of its `-`-separated parts kept whole first, then similarity.

    Plain similarity ranks `draft-fa3-topk8-page1` above the longer `draft-fa3-topk1-page1-...` for the probe
    `draft-fa3-topk1`; an id part such as `topk1` is a value the user named, so it weighs first.
    """
    parts = [p for p in probe.split("-") if p]
    scored: list[tuple[int, float, str]] = []
    for candidate in candidates:
        own = set(candidate.split("-"))
        shared = sum(p in own for p in parts)
        ratio = difflib.SequenceMatcher(None, probe, candidate).ratio()
        if ratio >= NEAREST_CUTOFF or shared:
            scored.append((shared, ratio, candidate))
    scored.sort(key=lambda t: (-t[0], -t[1], t[2]))
    return [c for _, _, c in scored[:n]]


def nearest_hint(word: str, candidates: Iterable[str], *, noun: str = "ids", listing: str = "`specmatrix cells`") -> str:
    """`; nearest ids: a, b` for an error message, or where to look when nothing is close."""
    probe = word.replace("*", "").replace("?", "").replace("{", "").replace("}", "")
    close = nearest(probe, candidates)
    return f"; nearest {noun}: {', '.join(close)}" if close else f"; {listing} lists the {noun}"


def select(cells: Sequence[Cell], selectors: Sequence[str]) -> list[Cell]:
    """Cells matched by every selector in turn (none given: all cells)."""
    chosen = list(cells)
    for text in selectors:
        chosen = Selector.parse(text).filter(chosen)
    return chosen
