"""Read one CI YAML document from untrusted text, bounded: size, alias expansion, nesting, cycles.

PyYAML's composer resolves an alias to the node its anchor names, so a 500-byte "billion laughs" document is a
small graph that only explodes when it is walked as a tree. The expanded size of every node is counted over the
composed graph (each distinct node once, memoised) before anything is constructed, and a document whose tree
would exceed `MAX_NODES` (or nest deeper than `MAX_DEPTH`, or refer to itself) is refused with one line.

The composed graph is turned into values by `_build` when it holds only plain mappings, sequences and the scalar
types of YAML's core schema (what CI files hold): the same values PyYAML's safe constructor makes, at a third of
its cost. Anything else (merge keys, `!!set`, a complex key, a custom tag, a value a scalar constructor refuses,
nesting past `_BUILD_DEPTH`) is left to PyYAML's constructor, so its values and its errors are unchanged.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

from matrix.core.errors import ConfigError

MAX_BYTES = 1024 * 1024  # sglang's largest workflow (July 2026) is 104 KB
MAX_NODES = 200_000  # the whole July sglang tree (94 workflow files) expands to about 60,000 nodes
MAX_DEPTH = 64
# An alias is a node of its own: `*name` after a line start, `- `, `: `, `? `, `[`, `{` or `,` (blanks between).
# Scripts' globs (`rm dist/*`) rarely look like that; a false match only costs the check. The regex finds each
# `*name`; what comes before it is looked at by hand (`_aliased`), which is far cheaper than a regex that tries
# every position of a 100 KB file for the line-start alternative.
_STAR = re.compile(r"\*[^\s,\]}*]")
_BEFORE_ALIAS = frozenset("\n[{,?:-")
_ANCHOR_NAME = re.compile(r"[0-9A-Za-z_-]+")


# Where a scalar value of one of these keys is written (`run:` and `uses:` of a step, `script:` of an external call's
# `with:`):
# `Marks` maps (id of the mapping holding it, the key) to its line and YAML style, so a finding can cite the line of
# the command it is about, not the first line that has the same text.
MARKED_KEYS = frozenset({"run", "uses", "script"})
Marks = dict[tuple[int | str, str], tuple[int, str]]


def load_yaml(text: str, name: str, marks: Marks | None = None) -> Any:
    """The document's Python value (safe types only); a malformed or hostile document is one ConfigError line.
    With `marks`, the line (1-based) and style (`|`, `>`, `'`, `"` or "" for plain) of each `MARKED_KEYS` scalar
    are put there, and `("jobs", ID)` the line of each key of the top-level `jobs:` mapping; a document that
    PyYAML's own constructor builds (merge keys, custom tags) gives none."""
    import yaml  # only workflow reading needs it; the audit's start-up stays short without

    if len(text) > MAX_BYTES:
        raise ConfigError(f"{name}: larger than {MAX_BYTES} bytes")
    aliased = _may_alias(text)
    if not aliased and _separators(text) > MAX_NODES:
        # Without an alias the tree is the text itself: each node needs a `:`, `,` or `- `, so this many
        # separators is refused before the parser builds a node per entry (100,000 matrix entries, ...).
        raise ConfigError(f"{name}: more than {MAX_NODES:,} YAML nodes; refusing to read it")
    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if aliased:
            _check_expansion(node, name)
        try:
            built = _build(node, loader, {} if aliased else None, 0, marks)
        except _Unplain:
            if marks is not None:
                marks.clear()
            return loader.construct_document(node)
        if marks is not None:
            _job_lines(node, marks)
        return built
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "parse error"
        raise ConfigError(f"{name}{where}: malformed YAML ({problem})") from None
    except (RecursionError, ValueError, TypeError, KeyError) as exc:  # odd scalars: a huge int, a bad date, `!!bool x`
        raise ConfigError(f"{name}: malformed YAML ({type(exc).__name__})") from None
    finally:
        loader.dispose()


def _aliased(text: str) -> bool:
    """Whether `text` may hold an alias: a `*name` with only blanks between it and a line start or one of
    `[{,?:-` (the one judge of it; tests compare it with a regex of the same rule)."""
    return next(_alias_starts(text), None) is not None


def _alias_starts(text: str) -> Iterator[int]:
    """Where each `*` `_aliased` counts stands."""
    if "*" not in text:
        return
    for match in _STAR.finditer(text):
        before = match.start() - 1
        while before >= 0 and text[before] in " \t":
            before -= 1
        if before < 0 or text[before] in _BEFORE_ALIAS:
            yield match.start()


def _may_alias(text: str) -> bool:
    """Whether `text` may hold an alias PyYAML resolves: one `_aliased` counts whose name is anchored somewhere.
    Both PyYAML scanners read an alias or anchor name as the longest run of ASCII letters, digits, `_` and `-`,
    and the composer refuses an alias whose anchor is missing, so a document with an alias holds `&name` too;
    a shell `case` arm (`*)`) or a glob (`*.whl`) in a script is not one."""
    for start in _alias_starts(text):
        name = _ANCHOR_NAME.match(text, start + 1)
        if name is not None and "&" + name.group() in text:
            return True
    return False


@functools.cache
def _loader_class() -> Any:
    """CSafeLoader (SafeLoader without libyaml) whose plain-scalar tag resolution is memoised: the composer asks
    for the tag of every scalar, and CI files repeat the same few thousand values."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    scalar, sequence, mapping = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode
    resolved: dict[str, str] = {}

    def resolve(self: Any, kind: Any, value: Any, implicit: Any) -> Any:
        if self.yaml_path_resolvers:  # the safe loader has none; with one, every tag is PyYAML's to find
            return base.resolve(self, kind, value, implicit)
        # Without path resolvers `BaseResolver.resolve` gives a collection its default tag, a quoted or block
        # scalar the str tag, and a plain scalar the first implicit resolver that matches its text (else str):
        # a function of the text alone.
        if kind is scalar:
            if not implicit[0]:
                return base.DEFAULT_SCALAR_TAG
            tag = resolved.get(value)
            if tag is None:
                tag = base.resolve(self, kind, value, implicit)
                if len(resolved) < _RESOLVED_MAX:
                    resolved[value] = tag
            return tag
        if kind is mapping:
            return base.DEFAULT_MAPPING_TAG
        if kind is sequence:
            return base.DEFAULT_SEQUENCE_TAG
        return base.resolve(self, kind, value, implicit)

    methods: dict[str, Any] = {"resolve": resolve}
    if not base.yaml_path_resolvers:
        # The composer calls these for every node, and without path resolvers they return at once: a builtin
        # that takes the same arguments and keeps nothing (`slice(node, index)`, `tuple()`) saves two Python
        # calls a node.
        methods["descend_resolver"] = staticmethod(slice)
        methods["ascend_resolver"] = staticmethod(tuple)
    return type("_MemoLoader", (base,), methods)


_RESOLVED_MAX = 65_536


def _separators(text: str) -> int:
    return text.count(":") + text.count(",") + text.count("- ")


def _check_expansion(root: Any, name: str) -> None:
    """Refuse a graph whose tree expansion is over the node budget, too deep, or cyclic; iterative, memoised."""
    import yaml

    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node, yaml)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            depths[key] = 1 + max((depths[id(c)] for c in children), default=0)
            if sizes[key] > MAX_NODES:
                raise ConfigError(f"{name}: YAML aliases expand to more than {MAX_NODES:,} nodes; refusing to read it")
            if depths[key] > MAX_DEPTH:
                raise ConfigError(f"{name}: YAML nested deeper than {MAX_DEPTH} levels; refusing to read it")
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise ConfigError(f"{name}: a YAML alias refers to its own anchor (a cycle); refusing to read it")
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                raise ConfigError(f"{name}: a YAML alias refers to its own anchor (a cycle); refusing to read it")
            if id(child) not in sizes:
                stack.append((child, False))


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


_TAG = "tag:yaml.org,2002:"
_MAP, _SEQ, _STR = _TAG + "map", _TAG + "seq", _TAG + "str"
# Scalar tags whose PyYAML safe constructor is a pure function of the node (called as is, so the values match).
_SCALARS = {_TAG + name: f"construct_yaml_{name}" for name in ("null", "bool", "int", "float", "binary", "timestamp")}
_INT = _TAG + "int"
# Decimal digits with no leading zero (YAML 1.1 reads `012` as octal): matrix values such as `[0, 1, ..., 15]`.
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,17}")
_BUILD_DEPTH = 100  # deeper documents go to PyYAML's constructor, which does not recurse


class _Unplain(Exception):
    """The document holds something `_build` leaves to PyYAML's constructor."""


def _job_lines(root: Any, marks: Marks) -> None:
    """The line of each job key under the document's top-level `jobs:` mapping."""
    if root.id != "mapping":
        return
    for key_node, value_node in root.value:
        if key_node.id == "scalar" and key_node.value == "jobs" and value_node.id == "mapping":
            for job_key, _ in value_node.value:
                if job_key.id == "scalar":
                    marks.setdefault(("jobs", str(job_key.value)), (job_key.start_mark.line + 1, ""))


def _build(node: Any, loader: Any, shared: dict[int, Any] | None, depth: int = 0, marks: Marks | None = None) -> Any:
    """The value of a composed node of plain maps, sequences and core-schema scalars, else `_Unplain`. With
    `shared` (a document with aliases) a node reached twice gives the same object, as PyYAML's constructor does."""
    if shared is not None and id(node) in shared:
        return shared[id(node)]
    tag = node.tag
    if tag == _STR and node.id == "scalar":
        return node.value
    if depth > _BUILD_DEPTH:
        raise _Unplain
    kind = node.id
    value: Any
    # A str scalar is its text (what `_build` gives it first thing, never kept in `shared`): read here, not
    # through another call, as most keys and values are.
    if kind == "mapping" and tag == _MAP:
        value = {}
        for key_node, value_node in node.value:
            if key_node.id != "scalar" or key_node.tag not in _KEY_TAGS:
                raise _Unplain  # merge keys, `=`, complex or unhashable keys: PyYAML's rules and errors
            if value_node.tag == _STR and value_node.id == "scalar":
                item = value_node.value
                if marks is not None and key_node.value in MARKED_KEYS:
                    marks[(id(value), key_node.value)] = (value_node.start_mark.line + 1, value_node.style or "")
            else:
                item = _build(value_node, loader, shared, depth + 1, marks)
            value[key_node.value if key_node.tag == _STR else _build(key_node, loader, None, depth + 1)] = item
    elif kind == "sequence" and tag == _SEQ:
        value = [
            item.value if item.tag == _STR and item.id == "scalar" else _build(item, loader, shared, depth + 1, marks)
            for item in node.value
        ]
    elif kind == "scalar" and tag == _INT and _DECIMAL.fullmatch(node.value):
        value = int(node.value)  # what construct_yaml_int gives a plain decimal (no sign, base, `_` or `:`)
    elif kind == "scalar" and tag in _SCALARS:
        try:
            value = getattr(loader, _SCALARS[tag])(node)
        except Exception:  # PyYAML's constructor meets the same value and says what it says
            raise _Unplain from None
    else:
        raise _Unplain
    if shared is not None:
        shared[id(node)] = value
    return value


_KEY_TAGS = frozenset({_STR, *_SCALARS})
