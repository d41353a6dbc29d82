"""Source text of a node, as `ast.get_source_segment` gives it, without re-splitting the file per call."""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from collections.abc import Iterable

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


class SourceText:
    """A file's lines, split once; `segment(node)` slices them by the node's byte offsets."""

    def __init__(self, text: str):
        # The same line breaks the parser counts (\r\n, \r, \n), not str.splitlines()'s extra ones.
        self.lines = [m.group() for m in _LINE.finditer(text)]
        self._marked: list[int] = []

    def mark_lines(self, words: Iterable[str], exact: Iterable[str] = ()) -> None:
        """Remember which lines mention any of `words` (any case) or hold an `exact` text, for `mentions`."""
        pattern = "|".join(re.escape(w) for w in dict.fromkeys(words) if w)
        text = "".join(self.lines)
        starts = list(itertools.accumulate((len(line) for line in self.lines), initial=0))
        # One scan of the text; each hit is mapped to its line by the line start offsets.
        hits = [m.start() for m in re.finditer(pattern, text, re.IGNORECASE)] if pattern else []
        for literal in exact:  # str.find is much cheaper than another alternative in the pattern
            at = text.find(literal)
            while at >= 0:
                hits.append(at)
                at = text.find(literal, at + 1)
        self._marked = sorted({bisect.bisect_right(starts, at) for at in hits})

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
