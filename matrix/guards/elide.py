"""Parse a test file without the function bodies that cannot hold a skip: the audit's biggest saving.

Most of a test file is test bodies, and a body with no skip-related line (no "skip", no import alias of a skip,
no bare `return`) yields no guard: the audit reads it only to throw it away. Such a body is blanked before the
parse, one placeholder `...` on its first line and empty lines after, so every other line keeps its number and
columns, and the parser builds perhaps half the nodes.

Blanking is done on text, so it is only trusted when the parse proves it:

- a body is only blanked when its text ends outside any string, comment or backslash continuation (the whole
  region is matched by one tokenising pattern; tabs and form feeds, which change indentation rules, refuse it);
  a bracket left open would leave unmatched closers after the region, which the parser rejects;
- after the parse, every blanked `def` must be a function whose body is exactly the placeholder (a `def` line
  inside a string is not), else the file is parsed whole.

Module-level functions not named `test*` keep their bodies (guards call such helpers and factories); so does
every function with a marked line. What is lost: a syntax error inside a blanked body is not reported as
`unparsable` (the file's own run fails loudly on it; the audit's verdicts on guards are unchanged).
"""

from __future__ import annotations

import ast
import bisect
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

# A one-line `def` header (no comment after it); the line's indentation is checked apart.
_DEF = re.compile(r"def[ ]+(\w+)[^\n#]*:[ ]*\r?\n")
# The whole region, token by token: plain text, comments, backslash continuations and complete string literals.
_CLEAN = re.compile(
    r"(?:[^\"'#\\]++"
    r"|#[^\r\n]*+"
    r"|\\\r?\n(?!\Z)"  # a continuation whose next line is still in the region
    r'|"""(?:[^"\\]++|\\[\s\S]|"(?!""))*+"""'
    r"|'''(?:[^'\\]++|\\[\s\S]|'(?!''))*+'''"
    r'|"(?:[^"\\\r\n]++|\\[\s\S])*+"'
    r"|'(?:[^'\\\r\n]++|\\[\s\S])*+'"
    r")*+"
)
# Since Python 3.12 an f-string may nest its own quotes (PEP 701), which the pattern above does not model.
_FSTRING = re.compile(r"(?<!\w)(?:[rRbB]?[fF]|[fF][rRbB])[\"']")
_NESTED_QUOTES = sys.version_info >= (3, 12)
_STATEMENT = re.compile(r"^[ ]*[^ \r\n#]", re.M)
_ENDS: dict[int, re.Pattern[str]] = {}
PLACEHOLDER = "..."


@dataclass(frozen=True)
class Elision:
    """The text the parser sees, and the line of each `def` whose body it blanked."""

    text: str
    defs: tuple[int, ...]
    # The 1-based line spans (def line, last blanked line) of each blanked function.
    spans: tuple[tuple[int, int], ...]


def _end_of_body(indent: int) -> re.Pattern[str]:
    """The first line that starts a statement at `indent` columns or fewer (blank and comment lines do not)."""
    found = _ENDS.get(indent)
    if found is None:
        found = _ENDS[indent] = re.compile(rf"^[ ]{{0,{indent}}}[^ \r\n#]", re.M)
    return found


def clean_region(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether `text[start:end]` (a body) ends outside any string and continuation, so the next line starts a
    statement. Tabs and form feeds need no check: a line they indent either stays in the body or ends the
    region early, and then the parse or the proof fails."""
    stop = len(text) if end is None else end
    if _NESTED_QUOTES and _FSTRING.search(text, start, stop) is not None:
        return False
    return _CLEAN.fullmatch(text, start, stop) is not None


def elide(text: str, marked: Sequence[int]) -> Elision | None:
    """`text` with the unmarked function bodies blanked, or None when there is none to blank.

    `marked` is the sorted list of 1-based lines that mention a skip (see `SourceText.mark_lines`)."""
    pieces: list[str] = []
    defs: list[int] = []
    spans: list[tuple[int, int]] = []
    copied = 0  # text[:copied] is in pieces already
    line, counted = 1, 0  # line number of offset `counted`
    for match in _DEF.finditer(text):
        start = match.start()
        if start < copied:
            continue  # inside a body blanked already
        line_start = text.rfind("\n", 0, start) + 1
        indent = start - line_start
        if indent and text[line_start:start].strip(" "):
            rest = text[line_start:start].lstrip(" ")
            if not (rest.startswith("async ") and not rest[6:].strip(" ")):
                continue  # `def` not at the start of a statement line
            indent -= len(rest)
        if indent == 0 and not match.group(1).startswith("test"):
            continue  # a module-level helper: guards may call it
        body_start = match.end()
        found = _end_of_body(indent).search(text, body_start)
        body_end = found.start() if found is not None else len(text)
        line += text.count("\n", counted, start)
        counted = start
        newlines = text.count("\n", body_start, body_end)
        last = line + newlines  # the region's last line
        at = bisect.bisect_left(marked, line)
        if at < len(marked) and marked[at] <= last:
            continue
        if _STATEMENT.search(text, body_start, body_end) is None or not clean_region(text, body_start, body_end):
            continue
        pieces.append(text[copied:body_start])
        pieces.append(" " * (indent + 1) + PLACEHOLDER + "\n" * max(newlines, 1))
        copied = body_end
        defs.append(line)
        spans.append((line, last))
    if not defs:
        return None
    pieces.append(text[copied:])
    return Elision(text="".join(pieces), defs=tuple(defs), spans=tuple(spans))


_Def = ast.FunctionDef | ast.AsyncFunctionDef


def _find_def(body: Sequence[ast.stmt], line: int) -> _Def | None:
    """The function defined on `line`, descending through the statements that contain it."""
    for _ in range(200):  # nesting is bounded by the parser; this bounds the loop too
        starts = [s.lineno for s in body]
        index = bisect.bisect_right(starts, line) - 1
        if index < 0:
            return None
        stmt = body[index]
        if isinstance(stmt, _Def) and stmt.lineno == line:
            return stmt
        if (stmt.end_lineno or stmt.lineno) < line:
            return None
        inner = _inner_body(stmt, line)
        if inner is None:
            return None
        body = inner
    return None


def _inner_body(stmt: ast.stmt, line: int) -> Sequence[ast.stmt] | None:
    blocks: list[Sequence[ast.stmt]] = []
    if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef | ast.With | ast.AsyncWith):
        blocks = [stmt.body]
    elif isinstance(stmt, ast.If | ast.For | ast.AsyncFor | ast.While):
        blocks = [stmt.body, stmt.orelse]
    elif isinstance(stmt, ast.Try | ast.TryStar):
        blocks = [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    elif isinstance(stmt, ast.Match):
        blocks = [case.body for case in stmt.cases]
    for block in blocks:
        if block and block[0].lineno <= line <= (block[-1].end_lineno or block[-1].lineno):
            return block
    return None


def proven(tree: ast.Module, elision: Elision) -> bool:
    """Whether every blanked `def` parsed as a function whose whole body is the placeholder."""
    for line in elision.defs:
        node = _find_def(tree.body, line)
        if node is None or len(node.body) != 1:
            return False
        only = node.body[0]
        if not (
            isinstance(only, ast.Expr)
            and isinstance(only.value, ast.Constant)
            and only.value.value is Ellipsis
            and only.lineno == line + 1
        ):
            return False
    return True


def blanked_lines(elision: Elision, lines: Sequence[int]) -> bool:
    """Whether any of `lines` (sorted) falls inside a blanked function."""
    for first, last in elision.spans:
        at = bisect.bisect_left(lines, first)
        if at < len(lines) and lines[at] <= last:
            return True
    return False
