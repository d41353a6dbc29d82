"""What a test file says at module level, read without importing it: its text, its names, its registrations.

A file's lines are split once (`SourceText`); the bodies that cannot hold a skip are blanked before the parse
(`elide`, proven by the parse, else the file is parsed whole); module-level names are resolved once
(`collect_module_names`); `register_*_ci(...)` calls are read from the tree (`read_registrations`).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from matrix.guards.model import Bindings, ModuleNames, Platform, Registration, dotted
from matrix.guards.rebinding import rebound

# --- source text ------------------------------------------------------------------------------------------------------
# Source text of a node, as `ast.get_source_segment` gives it, without re-splitting the file per call.

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
# Breaks str.splitlines() honours but the parser does not; without them splitlines() gives the parser's lines.
_OTHER_BREAKS = re.compile("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


_ASCII_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def _other_breaks(text: str) -> bool:
    """Whether `text` holds a break only str.splitlines() honours (ASCII text can hold only the ASCII ones)."""
    if text.isascii():
        return any(b in text for b in _ASCII_BREAKS)
    return _OTHER_BREAKS.search(text) is not None


class SourceText:
    """A file's lines, split once; `segment(node)` slices them by the node's byte offsets."""

    def __init__(self, text: str):
        # The same line breaks the parser counts (\r\n, \r, \n), not str.splitlines()'s extra ones; the
        # regex's last (empty) match is kept, so both ways give the same list.
        if not _other_breaks(text):
            self.lines = [*text.splitlines(keepends=True), ""]
        else:
            self.lines = [m.group() for m in _LINE.finditer(text)]
        self.text = text
        self._marked: list[int] = []

    def mark_lines(self, words: Iterable[str], exact: Iterable[str] = (), lowered: str | None = None) -> None:
        """Remember which lines mention any of `words` (any case) or hold an `exact` text, for `mentions`.

        `lowered` is `text.lower()` when the caller has it already."""
        unique = [w for w in dict.fromkeys(words) if w]
        text = self.text
        starts = list(itertools.accumulate(map(len, self.lines), initial=0))
        # Each hit is mapped to its line by the line start offsets.
        hits: list[int] = []
        if text.isascii() and all(w.isascii() for w in unique):
            # ASCII text keeps its offsets when lowered, and ASCII words match it case-blind exactly as
            # re.IGNORECASE would (the non-ASCII folds, such as the Kelvin sign, need non-ASCII text): str.find
            # over the lowered text is several times cheaper than the regex.
            lowered = text.lower() if lowered is None else lowered
            for word in unique:
                _find_all(lowered, word.lower(), hits)
        elif unique and all(w.isascii() for w in unique):
            # Non-ASCII text: an ASCII-only match is found as above in a copy with each non-ASCII character
            # replaced by "?" (offsets kept); a match through a non-ASCII case fold (the long s, the Kelvin
            # sign) holds a non-ASCII character, so only the lines that have one need the case-blind regex.
            lowered = text.encode("ascii", "replace").decode("ascii").lower()
            for word in unique:
                _find_all(lowered, word.lower(), hits)
            pattern = re.compile("|".join(re.escape(w) for w in unique), re.IGNORECASE)
            for start, line in zip(starts, self.lines, strict=False):
                if not line.isascii():
                    hits.extend(start + m.start() for m in pattern.finditer(line))
        elif unique:
            pattern = re.compile("|".join(re.escape(w) for w in unique), re.IGNORECASE)
            hits = [m.start() for m in pattern.finditer(text)]
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


# --- blanking the bodies that cannot hold a skip ----------------------------------------------------------------------
# Parse a test file without the function bodies that cannot hold a skip: the audit's biggest saving.
#
# Most of a test file is test bodies, and a body with no skip-related line (no "skip", no import alias of a skip,
# no bare `return`) yields no guard: the audit reads it only to throw it away. Such a body is blanked before the
# parse, one placeholder `...` on its first line and empty lines after, so every other line keeps its number and
# columns, and the parser builds perhaps half the nodes.
#
# Blanking is done on text, so it is only trusted when the parse proves it:
#
# - a body is only blanked when its text ends outside any string, comment or backslash continuation (the whole
#   region is matched by one tokenising pattern; tabs and form feeds, which change indentation rules, refuse it);
#   a bracket left open would leave unmatched closers after the region, which the parser rejects;
# - after the parse, every blanked `def` must be a function whose body is exactly the placeholder (a `def` line
#   inside a string is not), else the file is parsed whole.
#
# Module-level functions not named `test*` keep their bodies while anything left in the parse names them (guards
# call such helpers and factories, and helpers call each other); one that only blanked test bodies call is
# blanked too (in ASCII files; see `_unnamed_helpers`). Every function with a marked line keeps its body. What is
# lost: a syntax error inside a blanked body is not reported as `unparsable` (the file's own run fails loudly on
# it; the audit's verdicts on guards are unchanged).

# A one-line `def` header (no comment after it); the line's indentation is checked apart.
_DEF = re.compile(r"def[ ]+(\w+)[^\n#]*:[ ]*\r?\n")
# The whole region, token by token: plain text, comments, backslash continuations and complete string literals.
# Each token has one reading only (the tokens start with different characters, a plain run must end where plain text
# does, a string's body is unrolled), and the lookahead makes each special token atomic: the region is read exactly
# once, in linear time, with no possessive quantifier or atomic group (CPython 3.11.2 evaluates `*+` inside
# repeated groups differently from 3.11.7: a trailing continuation matched, a triple-quoted string did not).
_SPECIAL = (
    r"#[^\r\n]*"
    r"|\\\r?\n(?!\Z)"  # a continuation whose next line is still in the region
    r'|"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""'
    r"|'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''"
    r'|"[^"\\\r\n]*(?:\\[\s\S][^"\\\r\n]*)*"'
    r"|'[^'\\\r\n]*(?:\\[\s\S][^'\\\r\n]*)*'"
)
_CLEAN = re.compile(rf"(?:[^\"'#\\]+(?![^\"'#\\])|(?=({_SPECIAL}))\1)*")
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
    """The newline before the first line that starts a statement at `indent` columns or fewer (blank and comment
    lines do not). Led by a literal newline, the search skips ahead to each one, where `^` in multiline mode
    would be tried at every character."""
    found = _ENDS.get(indent)
    if found is None:
        found = _ENDS[indent] = re.compile(rf"\n[ ]{{0,{indent}}}[^ \r\n#]")
    return found


def clean_region(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether `text[start:end]` (a body) ends outside any string and continuation, so the next line starts a
    statement. Tabs and form feeds need no check: a line they indent either stays in the body or ends the
    region early, and then the parse or the proof fails."""
    stop = len(text) if end is None else end
    if _NESTED_QUOTES and _FSTRING.search(text, start, stop) is not None:
        return False
    return _CLEAN.fullmatch(text, start, stop) is not None


class _Body(NamedTuple):
    """A function body that holds no marked line and may be blanked: offsets, lines, indentation (a tuple: a
    file has one per def, and a frozen dataclass costs several times more to build)."""

    start: int
    end: int
    line: int  # the def line
    last: int  # the body's last line
    indent: int
    newlines: int
    name: str = ""  # a module-level helper's name, and the offset of that name on its def line
    name_at: int = -1


def elide(text: str, marked: Sequence[int]) -> Elision | None:
    """`text` with the unmarked function bodies blanked, or None when there is none to blank.

    `marked` is the sorted list of 1-based lines that mention a skip (see `SourceText.mark_lines`)."""
    bodies: list[_Body] = []
    helpers: list[_Body] = []
    blanked_until = 0  # a def before this offset is inside a body blanked already
    line, counted = 1, 0  # line number of offset `counted`
    for match in _DEF.finditer(text):
        start = match.start()
        if start < blanked_until:
            continue
        line_start = text.rfind("\n", 0, start) + 1
        indent = start - line_start
        if indent and text[line_start:start].strip(" "):
            rest = text[line_start:start].lstrip(" ")
            if not (rest.startswith("async ") and not rest[6:].strip(" ")):
                continue  # `def` not at the start of a statement line
            indent -= len(rest)
        body_start = match.end()
        # body_start follows the header's newline, so the search starts on that newline.
        found = _end_of_body(indent).search(text, body_start - 1)
        body_end = found.start() + 1 if found is not None else len(text)
        line += text.count("\n", counted, start)
        counted = start
        newlines = text.count("\n", body_start, body_end)
        last = line + newlines  # the region's last line
        at = bisect.bisect_left(marked, line)
        if at < len(marked) and marked[at] <= last:
            continue
        if _STATEMENT.search(text, body_start, body_end) is None or not clean_region(text, body_start, body_end):
            continue
        if indent == 0 and not match.group(1).startswith("test"):
            # A module-level helper: guards may call it, so it is blanked only if nothing left names it; the defs
            # inside it are still looked at, in case it stays.
            helpers.append(_Body._make((body_start, body_end, line, last, 0, newlines, match.group(1), match.start(1))))
            continue
        # _make builds the tuple in C (the keyword constructor is a Python function): one per def of the file.
        bodies.append(_Body._make((body_start, body_end, line, last, indent, newlines, "", -1)))
        blanked_until = body_end
    unnamed = _unnamed_helpers(text, bodies, helpers) if helpers else []
    if unnamed:
        # The bodies blanked inside a blanked helper go with it.
        starts = [h.start for h in unnamed]
        inside = [bisect.bisect_right(starts, b.start) - 1 for b in bodies]
        bodies = [b for b, i in zip(bodies, inside, strict=True) if i < 0 or b.start >= unnamed[i].end]
        bodies = sorted([*bodies, *unnamed])  # by start offset, the tuples' first field
    if not bodies:
        return None
    pieces: list[str] = []
    copied = 0  # text[:copied] is in pieces already
    for body in bodies:
        pieces.append(text[copied : body.start])
        pieces.append(" " * (body.indent + 1) + PLACEHOLDER + "\n" * max(body.newlines, 1))
        copied = body.end
    pieces.append(text[copied:])
    return Elision(text="".join(pieces), defs=tuple(b.line for b in bodies), spans=tuple((b.line, b.last) for b in bodies))


# Past these, a file's helpers all keep their bodies: the judgement stays linear in the file, whatever it holds.
MAX_JUDGED_HELPERS = 64
MAX_HITS = 1024


def _unnamed_helpers(text: str, bodies: Sequence[_Body], helpers: Sequence[_Body]) -> list[_Body]:
    """The module-level helpers whose names nothing that stays in the parse mentions (none in a non-ASCII file).

    What stays is the text less the blanked test bodies and the helpers' own bodies; a helper named there
    (anywhere: code, strings, comments, other than on its own def line) stays, and what its body names stays
    in turn. The rest cannot be reached by any guard, so their bodies are blanked too. Only ASCII text is
    judged: Python folds non-ASCII identifiers (NFKC), which a text search would not."""
    if not text.isascii() or len(helpers) > MAX_JUDGED_HELPERS:
        return []
    blank_starts = [b.start for b in bodies]
    helper_starts = [h.start for h in helpers]
    own = {h.name_at for h in helpers}
    named: set[str] = set()  # names mentioned where the parse keeps the text: outside every body
    within: dict[str, set[int]] = {}  # names mentioned (unblanked) only inside helpers' bodies: which helpers
    for h in helpers:
        if h.name in named or h.name in within:
            continue
        callers: set[int] = set()
        at = text.find(h.name)
        hits = 0
        while at >= 0:
            after = at + len(h.name)
            hits += 1
            if hits > MAX_HITS:
                named.add(h.name)  # found that often (perhaps inside other words): kept, without judging each
                break
            if not (_word(text, at - 1) or _word(text, after) or at in own):
                i = bisect.bisect_right(blank_starts, at) - 1
                if i < 0 or at >= bodies[i].end:  # not in a blanked body
                    j = bisect.bisect_right(helper_starts, at) - 1
                    if j < 0 or at >= helpers[j].end:
                        named.add(h.name)  # the first mention that stays decides
                        break
                    callers.add(j)
            at = text.find(h.name, after)
        if h.name not in named:
            within[h.name] = callers
    # A helper named inside a helper that stays, stays too.
    changed = True
    while changed:
        changed = False
        for name, callers in within.items():
            if name not in named and any(helpers[j].name in named for j in callers):
                named.add(name)
                changed = True
    return [h for h in helpers if h.name not in named]


def _word(text: str, at: int) -> bool:
    """Whether text[at] is an identifier character (False off either end)."""
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


_Def = ast.FunctionDef | ast.AsyncFunctionDef


def _find_def(body: Sequence[ast.stmt], line: int, starts_of: dict[int, list[int]]) -> _Def | None:
    """The function defined on `line`, descending through the statements that contain it.

    `starts_of` keeps each block's statement lines (by the block's identity) across calls on one tree."""
    for _ in range(200):  # nesting is bounded by the parser; this bounds the loop too
        starts = starts_of.get(id(body))
        if starts is None:
            starts = starts_of[id(body)] = [s.lineno for s in body]
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
    starts_of: dict[int, list[int]] = {}  # the tree is alive throughout, so block identities are not reused
    for line in elision.defs:
        node = _find_def(tree.body, line, starts_of)
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


# --- module names -----------------------------------------------------------------------------------------------------
# What a name in a test module stands for: imports, aliases bound once, local definitions.


def resolve(name: str, imports: dict[str, str]) -> str:
    """Rewrite the first component through the module's imports (`tc.x` -> `torch.cuda.x`)."""
    head, _, rest = name.partition(".")
    target = imports.get(head)
    if target is None:
        return name
    return f"{target}.{rest}" if rest else target


def collect_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted import target, for the imports at module level."""
    out: dict[str, str] = {}
    # Module-level imports (also inside if/try) bind the names guards read; imports inside defs do not.
    for node in straight_line(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    out.setdefault(head, head)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = alias.name
    return out


_LAST: list[tuple[Sequence[ast.stmt], list[ast.stmt]]] = []


def straight_line(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    """Statements of a block and of the if/try/with blocks inside it (not of nested defs), in source order.

    A module body is walked by several readers (imports, bindings, registrations, marks); the last result
    is kept, keyed by the body object itself, so it is walked once. Callers only read the list."""
    if _LAST and _LAST[0][0] is body:
        return _LAST[0][1]
    out = _straight_line(body)
    _LAST[:] = [(body, out)]
    return out


def _straight_line(body: Sequence[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    # An explicit stack: audited files are untrusted, so deep nesting must not exhaust Python's recursion.
    stack: list[Iterator[ast.stmt]] = [iter(body)]
    while stack:
        # The statements of the block on top, in order, until one opens a block of its own (entered first).
        for stmt in stack[-1]:
            out.append(stmt)
            # ast.parse builds these classes themselves (no subclasses): one set lookup a statement.
            if type(stmt) not in _BLOCK_STATEMENTS:
                continue
            inner: list[ast.stmt] = []
            if isinstance(stmt, ast.If | ast.For | ast.While | ast.AsyncFor):
                inner = [*stmt.body, *stmt.orelse]
            elif isinstance(stmt, ast.With | ast.AsyncWith):
                inner = stmt.body
            elif isinstance(stmt, ast.Try | ast.TryStar):
                inner = [*stmt.body, *(s for h in stmt.handlers for s in h.body), *stmt.orelse, *stmt.finalbody]
            if inner:
                stack.append(iter(inner))
                break
        else:
            stack.pop()
    return out


_BLOCK_STATEMENTS = frozenset({ast.If, ast.For, ast.While, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.TryStar})


def collect_bindings(body: Sequence[ast.stmt], *, module: bool = False) -> Bindings:
    """Names assigned in a block; a name bound more than once (an import counts) maps to None (ambiguous).

    Names bound only by imports are left to the import table; `try: from m import X` / `except ImportError:
    X = None` binds X twice, so X is unknown rather than always None.
    """
    seen: dict[str, ast.expr | None] = {}
    imported: set[str] = set()
    counts: dict[str, int] = {}

    def bind(name: str, value: ast.expr | None) -> None:
        counts[name] = counts.get(name, 0) + 1
        seen[name] = None if name in seen or name in imported else value

    for stmt in straight_line(body):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                _bind_target(target, stmt.value, bind)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            bind(stmt.target.id, stmt.value)
        elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
            seen[stmt.target.id] = None
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            for node in ast.walk(stmt.target):
                if isinstance(node, ast.Name):
                    seen[node.id] = None
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for name in _imported_names(stmt):
                if name in seen:
                    seen[name] = None
                imported.add(name)
    for name, value in _import_flags(body).items():
        if counts.get(name) == 2 and name not in imported:
            seen[name] = value
    for name, value in _guarded_values(body).items():
        if counts.get(name) == 2 and name not in imported:
            seen[name] = value
    containers = {name for name, value in seen.items() if value is not None and _is_container(value)}
    for name in _changed(body, containers, into_defs=not module) if containers else ():
        seen[name] = None
    for name in rebound(body, straight_line(body), {name for name, value in seen.items() if value is not None}):
        seen[name] = None  # also bound by `with as`, `except as`, `match`, `del`, `:=`, `def`, or `global` elsewhere
    return tuple(seen.items())


# A local list, dict or set a block fills (`ran = []`, then `ran.append(x)` in a loop) is not the empty value
# it was bound to: reading it flow-insensitively would call `if not ran: pytest.skip(...)` certain. Such a name
# is unknown wherever the block changes it in place or hands it to a call that may.
_CONTAINERS = frozenset({"list", "dict", "set", "bytearray", "deque", "defaultdict", "OrderedDict", "Counter"})
_READING_ATTRS = frozenset({"count", "index", "copy", "get", "keys", "values", "items"})
_READING_CALLS = frozenset(
    {"len", "bool", "any", "all", "sorted", "tuple", "list", "set", "frozenset", "sum", "min", "max", "str", "repr"}
    | {"print", "isinstance", "enumerate", "zip", "iter", "reversed", "dict", "hash", "id", "type", "format"}
)
_DEFS = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _is_container(value: ast.expr) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp | ast.SetComp):
        return True
    return isinstance(value, ast.Call) and (dotted(value.func) or "").rpartition(".")[2] in _CONTAINERS


def _changed(body: Sequence[ast.stmt], names: set[str], *, into_defs: bool) -> set[str]:
    """Names of `names` a block changes in place (a method call, an item assignment or `del`, `+=`, `global`)
    or passes to a call that may (any call but a few reading builtins). An explicit stack: the block is
    untrusted. A module body's own functions are not entered (they run only when called)."""
    out: set[str] = set()
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
            if node.attr not in _READING_ATTRS:
                out.add(node.value.id)
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in names:
            if not isinstance(node.ctx, ast.Load):
                out.add(node.value.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in names:
            out.add(node.target.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            out.update(n for n in node.names if n in names)
        elif isinstance(node, ast.Call) and (dotted(node.func) or "") not in _READING_CALLS:
            # `f(*xs)` / `f(**kw)` hand the callee copies: only a plain argument can be changed by it.
            for arg in [*node.args, *(k.value for k in node.keywords if k.arg is not None)]:
                if isinstance(arg, ast.Name) and arg.id in names:
                    out.add(arg.id)
        if not into_defs and isinstance(node, _DEFS):
            continue
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            # A literal's constants name nothing: a data table of a million of them is skipped in one pass.
            stack.extend(e for e in node.elts if not isinstance(e, ast.Constant))
            continue
        _push_children(node, stack)
    return out


# Fields of a node class that never hold a node the scan above matches: names and numbers, and `ctx` (a Load or
# Store singleton on every name, attribute and subscript, a third of the nodes `ast.iter_child_nodes` yields).
_LEAF_FIELDS = frozenset({"ctx", "id", "attr", "arg", "name", "module", "level", "kind", "conversion", "type_comment"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {ast.Constant: ()}


def _push_children(node: ast.AST, stack: list[ast.AST]) -> None:
    """`stack.extend(ast.iter_child_nodes(node))` without the nodes of `_LEAF_FIELDS`."""
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            stack.append(value)
        elif isinstance(value, list):
            stack.extend(v for v in value if isinstance(v, ast.AST))


IMPORTABLE = "__importable__"
# `__try_value__(e, h)`: `try: X = e` / `except ...: X = h`: X is e where e is known (it did not raise), else unknown.
TRY_VALUE = "__try_value__"
# `__version_below__("m", "1.2")`: whether the module's `__version__` is below importorskip's minversion, answered by
# the evaluator from the version the job installs (`matrix.guards.evaluate`).
VERSION_BELOW = "__version_below__"


def _import_flags(body: Sequence[ast.stmt]) -> dict[str, ast.expr]:
    """`try: import m; HAS_M = True` / `except ImportError: HAS_M = False` at the top of a block: HAS_M is
    whether m imports (`__importable__("m")`, which the evaluator answers from what is installed), or the one
    value both branches give."""
    out: dict[str, ast.expr] = {}
    for stmt in body:
        if not (isinstance(stmt, ast.Try) and len(stmt.handlers) == 1 and not stmt.orelse and not stmt.finalbody):
            continue
        handler = stmt.handlers[0]
        modules = tried_modules(stmt.body)
        if not catches_import_error(handler) or not modules:
            continue
        tried, handled = _constant_assignments(stmt.body), _constant_assignments(handler.body)
        if tried is None or handled is None:
            continue
        for name in tried.keys() & handled.keys():
            a, b = tried[name], handled[name]
            if type(a.value) is type(b.value) and a.value == b.value:
                out[name] = a
            else:
                test = ast.Call(
                    func=ast.Name(id=IMPORTABLE, ctx=ast.Load()), args=[ast.Constant(value=m) for m in modules], keywords=[]
                )
                out[name] = ast.copy_location(ast.IfExp(test=test, body=a, orelse=b), stmt)
    return out


# What a missing module raises (ImportError, ModuleNotFoundError) and the classes above it.
_IMPORT_ERROR_CATCHERS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def tried_modules(body: Sequence[ast.stmt], *, keep_relative: bool = False) -> list[str]:
    """The modules a `try` block's own imports need, in order; `from m import n` is `m:n` (the name must be bound in
    m: `importable` checks it for the checkout's own modules). Relative imports are left out, or with
    `keep_relative` read as their module's name alone (`from .m import n` is `m`)."""
    return [
        a.name
        if isinstance(s, ast.Import)
        else f"{s.module or ''}:{a.name}"
        if a.name != "*" and not s.level
        else (s.module or "")
        for s in body
        if isinstance(s, ast.Import | ast.ImportFrom) and (keep_relative or not (isinstance(s, ast.ImportFrom) and s.level))
        for a in s.names
    ]


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """Whether the handler runs when an import fails for a missing module: `except:`, `except ImportError`, `except
    Exception`, or a tuple holding one of them (`except (ImportError, OSError)`). An installed module is taken to
    import, as for `except ImportError`, so what else the handler catches does not change the reading."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(dotted(t) in _IMPORT_ERROR_CATCHERS for t in types)


def _guarded_values(body: Sequence[ast.stmt]) -> dict[str, ast.expr]:
    """`try: X = e` / `except ...: X = h` (one statement each, one handler, no else or finally): X is
    `__try_value__(e, h)`, which the evaluator answers with e's value where it computes one (the evaluator gives
    unknown wherever Python would raise), else unknown."""
    out: dict[str, ast.expr] = {}
    for stmt in straight_line(body):
        if not (isinstance(stmt, ast.Try) and len(stmt.handlers) == 1 and not stmt.orelse and not stmt.finalbody):
            continue
        tried, handled = stmt.body, stmt.handlers[0].body
        if len(tried) != 1 or len(handled) != 1 or stmt.handlers[0].name:
            continue
        first, second = tried[0], handled[0]
        if not (isinstance(first, ast.Assign) and isinstance(second, ast.Assign)):
            continue
        if len(first.targets) != 1 or len(second.targets) != 1:
            continue
        a, b = first.targets[0], second.targets[0]
        if isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.id == b.id:
            call = ast.Call(func=ast.Name(id=TRY_VALUE, ctx=ast.Load()), args=[first.value, second.value], keywords=[])
            out[a.id] = ast.copy_location(call, first)
    return out


def _constant_assignments(body: Sequence[ast.stmt]) -> dict[str, ast.Constant] | None:
    """Name -> literal of the plain `NAME = literal` lines of a block of imports and such lines; None otherwise."""
    out: dict[str, ast.Constant] = {}
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom | ast.Pass):
            continue
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
        ):
            out[stmt.targets[0].id] = stmt.value
            continue
        return None
    return out


def _imported_names(stmt: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [a.asname or a.name.split(".")[0] for a in stmt.names]
    return [a.asname or a.name for a in stmt.names if a.name != "*"]


def _import_targets(tree: ast.Module) -> dict[str, set[str]]:
    """Every last component each name is imported as, to spot `try: from a import X` / `except: from b import Y as X`."""
    out: dict[str, set[str]] = {}
    for stmt in straight_line(tree.body):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                if alias.name != "*":
                    local = alias.asname or (alias.name.split(".")[0] if isinstance(stmt, ast.Import) else alias.name)
                    # `import torch._inductor.config` binds `torch` to the package `torch`, as `import torch` does
                    whole = isinstance(stmt, ast.Import) and alias.asname is None
                    out.setdefault(local, set()).add(alias.name.split(".")[0] if whole else alias.name.rpartition(".")[2])
    return out


def module_functions(
    tree: ast.Module, blanked: frozenset[int] = frozenset()
) -> tuple[dict[str, ast.FunctionDef], set[str], set[str]]:
    """Module-level functions that decide their name, and names whose meaning depends on the path taken.

    A `def` in the module's own body after every import of that name shadows the import (a local
    redefinition of `is_sm100_supported`); an import after it wins back; a def inside `if`/`try`, or
    a name also assigned, is ambiguous. A function whose body was not parsed (its def line in `blanked`) is
    bound, but never stepped into.
    """
    functions: dict[str, ast.FunctionDef] = {}
    ambiguous: set[str] = set()
    top = set(map(id, tree.body))
    last_import: dict[str, int] = {}
    last_def: dict[str, int] = {}
    for index, stmt in enumerate(straight_line(tree.body)):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            for name in _imported_names(stmt):
                last_import[name] = index
                if id(stmt) not in top and name in last_def:
                    ambiguous.add(name)
        elif isinstance(stmt, ast.FunctionDef):
            if id(stmt) not in top or stmt.name in last_def:
                ambiguous.add(stmt.name)
            last_def[stmt.name] = index
            if stmt.lineno in blanked:
                functions.pop(stmt.name, None)
            else:
                functions[stmt.name] = stmt
        elif isinstance(stmt, ast.AsyncFunctionDef | ast.ClassDef):
            ambiguous.add(stmt.name)
    reimported = {name for name, index in last_def.items() if last_import.get(name, -1) > index}
    for name in reimported | ambiguous:
        functions.pop(name, None)  # imported again after the def: the import is what guards see
    return functions, ambiguous, reimported - ambiguous


def _bind_target(target: ast.expr, value: ast.expr, bind: Callable[[str, ast.expr | None], None]) -> None:
    if isinstance(target, ast.Name):
        bind(target.id, value)
    elif isinstance(target, ast.Tuple | ast.List):
        # `major, minor = torch.cuda.get_device_capability()` binds each name to an item.
        for index, element in enumerate(target.elts):
            if isinstance(element, ast.Name):
                item = ast.Subscript(value=value, slice=ast.Constant(value=index), ctx=ast.Load())
                bind(element.id, item)
            elif isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
                bind(element.value.id, None)


def collect_module_names(tree: ast.Module, blanked: frozenset[int] = frozenset()) -> ModuleNames:
    """Imports, module-level aliases, functions and ambiguous names of a parsed file (`blanked`: see module_functions)."""
    functions, ambiguous, reimported = module_functions(tree, blanked)
    defined = frozenset(
        stmt.name
        for stmt in straight_line(tree.body)
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and stmt.name not in reimported
    )
    aliases = collect_bindings(tree.body, module=True)
    assigned = {name for name, _ in aliases}
    ambiguous |= {name for name in functions if name in assigned}
    ambiguous |= {name for name, targets in _import_targets(tree).items() if len(targets) > 1}
    return ModuleNames(
        imports=tuple(collect_imports(tree).items()),
        aliases=aliases,
        defined=defined,
        functions=tuple((n, f) for n, f in functions.items() if n not in ambiguous),
        ambiguous=frozenset(ambiguous),
        certain_imports=top_level_imports(tree.body),
    )


def top_level_imports(body: Sequence[ast.stmt]) -> tuple[str, ...]:
    """The absolute modules a block's own statements import (`import a.b`, `from a.b import c`: `a.b`) before any
    statement that may skip the module (`importorskip`, `pytest.skip(...)`, a `raise`), not those inside an `if`,
    `try` or function; relative imports are left out. An import after a module-level skip runs only where it did not
    skip, so it says nothing of a test that skips."""
    out: dict[str, None] = {}
    for stmt in body:
        if isinstance(stmt, ast.Import):
            out.update(dict.fromkeys(alias.name for alias in stmt.names))
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            out[stmt.module] = None
        elif may_skip_at_import(stmt):
            break
    return tuple(out)


_SKIPPING_CALLS = frozenset({"skip", "importorskip", "skipTest", "exit", "SkipTest"})


def may_skip_at_import(stmt: ast.stmt) -> bool:
    """Whether a module-level statement may end the module's import early: a `raise`, or a call named like a skip
    (`pytest.skip`, `importorskip`, `sys.exit`), outside function bodies."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call) and (dotted(node.func) or "").rpartition(".")[2] in _SKIPPING_CALLS:
            return True
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            stack.extend(node.decorator_list if not isinstance(node, ast.Lambda) else ())
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


# --- registrations ----------------------------------------------------------------------------------------------------
# Read sglang CI registrations (`register_cuda_ci(...)` and siblings) from a syntax tree.

# register_cuda_ci(est_time, suite=None, nightly=False, disabled=None, *, stage=None, runner_config=None)
POSITIONAL = ("est_time", "suite", "nightly", "disabled")
KEYWORDS = frozenset((*POSITIONAL, "stage", "runner_config"))
_REGISTER = re.compile(r"^register_([a-z0-9]+)_ci$")
_PLATFORM_ALIASES = {"rocm": Platform.AMD}


def platform_of(function: str) -> Platform | None:
    """The platform a registration function targets; None when the name is not one."""
    match = _REGISTER.match(function)
    if match is None:
        return None
    word = match.group(1)
    if word in _PLATFORM_ALIASES:
        return _PLATFORM_ALIASES[word]
    try:
        return Platform(word)
    except ValueError:
        return Platform.OTHER


def read_registrations(tree: ast.Module, text: str | SourceText) -> tuple[Registration, ...]:
    """Every module-level `register_*_ci(...)` statement, in file order."""
    source = text if isinstance(text, SourceText) else SourceText(text)
    out: list[Registration] = []
    for stmt in straight_line(tree.body):
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            continue
        name = dotted(stmt.value.func)
        function = name.rpartition(".")[2] if name else ""
        platform = platform_of(function)
        if platform is not None:
            out.append(_registration(stmt.value, function, platform, source))
    return tuple(out)


def _registration(call: ast.Call, function: str, platform: Platform, source: SourceText) -> Registration:
    text = source.segment(call) or ast.unparse(call)
    base = Registration(function=function, platform=platform, line=call.lineno, source=text)
    values, problem = _arguments(call, function)
    if problem is None:
        problem = _check_types(values, function)
    if problem is not None:
        return replace(base, problem=problem)
    suite, stage, runner_config = values.get("suite"), values.get("stage"), values.get("runner_config")
    if stage is not None or runner_config is not None:
        if suite is not None:
            problem = f"{function}: give either suite= or stage=/runner_config=, not both"
        elif stage is None or runner_config is None:
            problem = f"{function}: stage= and runner_config= go together"
        else:
            suite = f"{stage}-test-{runner_config}"
    elif suite is None and values.get("disabled") is None:
        problem = f"{function}: no suite (give suite= or stage= and runner_config=)"
    if "est_time" not in values and problem is None:
        problem = f"{function}: est_time is missing"
    return replace(
        base,
        suite=suite,
        stage=stage,
        runner_config=runner_config,
        nightly=bool(values.get("nightly", False)),
        disabled=values.get("disabled"),
        est_time=values.get("est_time"),
        problem=problem,
    )


def _arguments(call: ast.Call, function: str) -> tuple[dict[str, Any], str | None]:
    values: dict[str, Any] = {}
    if len(call.args) > len(POSITIONAL):
        return values, f"{function}: too many positional arguments"
    pairs: list[tuple[str | None, ast.expr]] = list(zip(POSITIONAL, call.args, strict=False))
    pairs.extend((kw.arg, kw.value) for kw in call.keywords)
    for key, node in pairs:
        if key is None or isinstance(node, ast.Starred):
            return values, f"{function}: *args/**kwargs cannot be read statically"
        if key not in KEYWORDS:
            return values, f"{function}: unknown argument {key!r}"
        if key in values:
            return values, f"{function}: argument {key!r} given twice"
        if not isinstance(node, ast.Constant):
            return values, f"{function}: {key} must be a literal, got `{ast.unparse(node)}`"
        values[key] = node.value
    return values, None


def _check_types(values: dict[str, Any], function: str) -> str | None:
    # sglang's own collector accepts `suite=""` together with `disabled=` (a registration kept for the record,
    # e.g. register_npu_ci(est_time=..., suite="", nightly=True, disabled="...")), so only then may it be empty.
    if values.get("suite") == "" and isinstance(values.get("disabled"), str):
        values = {k: v for k, v in values.items() if k != "suite"}
    for key in ("suite", "stage", "runner_config"):
        if values.get(key) is not None and not (isinstance(values[key], str) and values[key]):
            return f"{function}: {key} must be a non-empty string, got {values[key]!r}"
    est = values.get("est_time")
    if est is not None and (isinstance(est, bool) or not isinstance(est, int | float)):
        return f"{function}: est_time must be a number, got {est!r}"
    if not isinstance(values.get("nightly", False), bool):
        return f"{function}: nightly must be True or False, got {values['nightly']!r}"
    if values.get("disabled") is not None and not isinstance(values["disabled"], str):
        return f"{function}: disabled must be a reason string or None, got {values['disabled']!r}"
    return None
