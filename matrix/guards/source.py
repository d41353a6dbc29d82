"""Source text of a node, as `ast.get_source_segment` gives it, without re-splitting the file per call."""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections.abc import Iterable

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
# Breaks str.splitlines() honours but the parser does not; without them splitlines() gives the parser's lines.
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


class SourceText:
    """A file's lines, split once; `segment(node)` slices them by the node's byte offsets."""

    def __init__(self, text: str):
        # The same line breaks the parser counts (\r\n, \r, \n), not str.splitlines()'s extra ones; the
        # regex's last (empty) match is kept, so both ways give the same list.
        if _OTHER_BREAKS.search(text) is None:
            self.lines = [*text.splitlines(keepends=True), ""]
        else:
            self.lines = [m.group() for m in _LINE.finditer(text)]
        self.text = text
        self._marked: list[int] = []

    def mark_lines(self, words: Iterable[str], exact: Iterable[str] = ()) -> None:
        """Remember which lines mention any of `words` (any case) or hold an `exact` text, for `mentions`."""
        unique = [w for w in dict.fromkeys(words) if w]
        text = self.text
        starts = list(itertools.accumulate((len(line) for line in self.lines), initial=0))
        # Each hit is mapped to its line by the line start offsets.
        hits: list[int] = []
        if text.isascii() and all(w.isascii() for w in unique):
            # ASCII text keeps its offsets when lowered, and ASCII words match it case-blind exactly as
            # re.IGNORECASE would (the non-ASCII folds, such as the Kelvin sign, need non-ASCII text): str.find
            # over the lowered text is several times cheaper than the regex.
            lowered = text.lower()
            for word in unique:
                _find_all(lowered, word.lower(), hits)
        elif unique:
            pattern = "|".join(re.escape(w) for w in unique)
            hits = [m.start() for m in re.finditer(pattern, text, re.IGNORECASE)]
        for literal in exact:  # str.find is much cheaper than another alternative in the pattern
            _find_all(text, literal, hits)
        self._marked = sorted({bisect.bisect_right(starts, at) for at in hits})

    @property
    def marked(self) -> list[int]:
        """The marked lines (1-based, sorted)."""
        return self._marked

    @property
    def any_marked(self) -> bool:
        return bool(self._marked)

    def mentions(self, node: ast.AST) -> bool:
        """Whether a marked line lies inside the node's line range."""
        first: int = getattr(node, "lineno", 0)
        last: int = getattr(node, "end_lineno", None) or first
        i = bisect.bisect_left(self._marked, first)
        return i < len(self._marked) and self._marked[i] <= last

    def segment(self, node: ast.AST) -> str | None:
        lineno: int | None = getattr(node, "lineno", None)
        last: int | None = getattr(node, "end_lineno", None)
        start: int | None = getattr(node, "col_offset", None)
        end: int | None = getattr(node, "end_col_offset", None)
        if lineno is None or last is None or start is None or end is None or not 0 < lineno <= last <= len(self.lines):
            return None
        first = lineno - 1
        if first == last - 1:
            return self.lines[first].encode()[start:end].decode()
        head = self.lines[first].encode()[start:].decode()
        tail = self.lines[last - 1].encode()[:end].decode()
        return head + "".join(self.lines[first + 1 : last - 1]) + tail


def _find_all(text: str, word: str, into: list[int]) -> None:
    """Append the start of every occurrence of `word` in `text` (overlapping ones too, as the scan would)."""
    at = text.find(word)
    while at >= 0:
        into.append(at)
        at = text.find(word, at + 1)
