"""Which schedule entries select a test: paths, --ignore, --deselect, -k and -m, as pytest applies them.

`-k` and `-m` are parsed with pytest's grammar (`not`, `and`, `or`, parentheses, identifiers; never eval).
`-k NAME` matches case-insensitively as a substring of the test's name, its class, its module and folder names
and its markers; `-m NAME` matches a marker exactly. An expression the parser cannot read selects the test,
with that assumption stated, so a finding never rests on a guess that a test was deselected.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from matrix.schedule.model import PytestSelection, ScheduleEntry

_TOKEN = re.compile(r"\s*(\(|\)|[^\s()]+)")
MAX_EXPRESSION = 2_000
Ident = Callable[[str], bool]


class _BadExpression(ValueError):
    pass


def _tokens(text: str) -> list[str]:
    if len(text) > MAX_EXPRESSION:
        raise _BadExpression("too long")
    out: list[str] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            break
        out.append(match.group(1))
        pos = match.end()
    return out


def matches_expression(text: str, *, keyword: bool, names: Iterable[str]) -> bool | None:
    """Evaluate a -k (keyword) or -m expression; None when it does not parse."""
    pool = [n.lower() for n in names] if keyword else list(names)

    def ident(word: str) -> bool:
        if keyword:
            return any(word.lower() in n for n in pool)
        return word in pool

    try:
        tokens = _tokens(text)
        value, rest = _or(tokens, ident, 0)
    except (_BadExpression, IndexError, RecursionError):
        return None
    return value if not rest else None


def _or(tokens: list[str], ident: Ident, depth: int) -> tuple[bool, list[str]]:
    value, tokens = _and(tokens, ident, depth)
    while tokens and tokens[0] == "or":
        right, tokens = _and(tokens[1:], ident, depth)
        value = value or right
    return value, tokens


def _and(tokens: list[str], ident: Ident, depth: int) -> tuple[bool, list[str]]:
    value, tokens = _not(tokens, ident, depth)
    while tokens and tokens[0] == "and":
        right, tokens = _not(tokens[1:], ident, depth)
        value = value and right
    return value, tokens


def _not(tokens: list[str], ident: Ident, depth: int) -> tuple[bool, list[str]]:
    if depth > 50:
        raise _BadExpression("nested too deeply")
    if not tokens:
        raise _BadExpression("ends early")
    head = tokens[0]
    if head == "not":
        value, rest = _not(tokens[1:], ident, depth + 1)
        return not value, rest
    if head == "(":
        value, rest = _or(tokens[1:], ident, depth + 1)
        if not rest or rest[0] != ")":
            raise _BadExpression("unbalanced")
        return value, rest[1:]
    if head in (")", "and", "or") or not re.fullmatch(r"[\w:+\-.\[\]\\/]+", head):
        raise _BadExpression(f"unexpected {head!r}")
    return bool(ident(head)), tokens[1:]


@dataclass(frozen=True, kw_only=True)
class Selected:
    """An entry that runs a test, with the assumptions taken to say so."""

    entry: ScheduleEntry
    assumptions: tuple[str, ...] = ()


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/")
    return prefix in (".", "") or path == prefix or path.startswith(prefix + "/") or fnmatch.fnmatch(path, prefix)


def file_selected(path: str, selection: PytestSelection) -> bool:
    """The file is under a path argument and not under an --ignore."""
    if not any(_under(path, p.split("::")[0]) for p in selection.paths):
        return False
    return not any(_under(path, i) for i in selection.ignore)


def _within(nodeid: str, prefix: str) -> bool:
    """The node is `prefix` or under it: a class's test, or a case of a parametrized test (`test_f[x]`)."""
    return nodeid == prefix or nodeid.startswith((prefix + "::", prefix + "["))


def selects(entry: ScheduleEntry, nodeid: str, markers: Iterable[str]) -> Selected | None:
    """Whether an entry's pytest selection runs this test; None when it does not."""
    selection = entry.selection
    if not isinstance(selection, PytestSelection):
        return None
    path, _, rest = nodeid.partition("::")
    if not file_selected(path, selection):
        return None
    node_args = [p for p in selection.paths if "::" in p]
    whole_file = any(_under(path, p) for p in selection.paths if "::" not in p)
    if node_args and not whole_file and not any(_within(nodeid, p) for p in node_args):
        return None
    if any(_within(nodeid, d) for d in selection.deselect):
        return None
    assumptions: list[str] = []
    marks = list(markers)
    if selection.keyword:
        parts = [*rest.split("::"), *path.removesuffix(".py").split("/"), path.rpartition("/")[2], *marks]
        verdict = matches_expression(selection.keyword, keyword=True, names=parts)
        if verdict is False:
            return None
        if verdict is None:
            assumptions.append(f"-k {selection.keyword!r} not read; assumed to select the test")
    if selection.markexpr:
        verdict = matches_expression(selection.markexpr, keyword=False, names=marks)
        if verdict is False:
            return None
        if verdict is None:
            assumptions.append(f"-m {selection.markexpr!r} not read; assumed to select the test")
    if any(d.startswith(nodeid + "[") for d in selection.deselect):
        assumptions.append("some parametrized cases are deselected")
    return Selected(entry=entry, assumptions=tuple(assumptions))
