"""Which cells a run and each test cover: `--matrix-select` (with `@FILE`) and `@pytest.mark.matrix(select=...)`."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence

from matrix.core.errors import SelectorError, UsageError
from matrix.core.model import Cell
from matrix.core.selectors import Selector

_GLOB_CHARS = frozenset("*?[")


def expand_select_args(raw: Sequence[str], read_text: Callable[[str], str]) -> tuple[str, ...]:
    """`@FILE` becomes one selector made of the file's lines (alternatives); `#` comments and blank lines drop."""
    out: list[str] = []
    for arg in raw:
        if not arg.startswith("@"):
            out.append(arg)
            continue
        path = arg[1:]
        try:
            text = read_text(path)
        except OSError as exc:
            raise UsageError(f"--matrix-select {arg}: cannot read {path}: {exc.strerror}") from None
        words = [line.split("#", 1)[0].strip() for line in text.splitlines()]
        joined = " ".join(w for w in words if w)
        if not joined:
            raise UsageError(f"--matrix-select {arg}: {path} lists no selector")
        out.append(joined)
    return tuple(out)


def _is_glob(pattern: str) -> bool:
    return not _GLOB_CHARS.isdisjoint(pattern)


class CellChooser:
    """Evaluates selectors over one matrix's cells; exact ids are set lookups, so 5,000-id shard files stay fast."""

    def __init__(self, cells: Sequence[Cell]) -> None:
        self._cells = tuple(cells)
        self._ids = tuple(c.id for c in cells)
        self._id_set = frozenset(self._ids)
        self._cache: dict[str, frozenset[str]] = {}

    def _matching(self, pattern: str) -> Sequence[str]:
        if not _is_glob(pattern):
            return (pattern,) if pattern in self._id_set else ()
        regex = re.compile(fnmatch.translate(pattern))
        return [i for i in self._ids if regex.match(i)]

    def chosen(self, text: str) -> frozenset[str]:
        """Ids one selector keeps; an include word matching no cell raises the selector's own error with a hint."""
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        selector = Selector.parse(text)
        keep: set[str] = set()
        for word, patterns in selector.include:
            hit = False
            for pattern in patterns:
                found = self._matching(pattern)
                if found:
                    hit = True
                    keep.update(found)
            if not hit:
                Selector.parse(word).filter(self._cells)  # raises SelectorError with the nearest ids
        for pattern in selector.exclude:
            keep.difference_update(self._matching(pattern))
        if not keep:
            # Its includes match, its excludes remove them all: a selector that keeps nothing is a mistake, not an empty run.
            raise SelectorError(f"selector {text!r} excludes every cell it includes")
        result = frozenset(keep)
        self._cache[text] = result
        return result

    def chosen_all(self, texts: Sequence[str]) -> frozenset[str]:
        """Ids kept by every selector in turn (none given: every cell)."""
        result = self._id_set
        for number, text in enumerate(texts):
            result = result & self.chosen(text)
            if not result:
                earlier = ", ".join(repr(t) for t in texts[:number])
                raise SelectorError(f"selectors contradict: {text!r} keeps no cell that {earlier} keep(s)")
        return result

    def in_order(self, ids: frozenset[str]) -> tuple[Cell, ...]:
        """The chosen cells in matrix order, so ids and reports are stable."""
        if len(ids) == len(self._ids):
            return self._cells
        return tuple(c for c in self._cells if c.id in ids)
