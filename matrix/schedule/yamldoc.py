"""Read one CI YAML document from untrusted text, bounded: size, alias expansion, nesting, cycles.

PyYAML's composer resolves an alias to the node its anchor names, so a 500-byte "billion laughs" document is a
small graph that only explodes when it is walked as a tree. The expanded size of every node is counted over the
composed graph (each distinct node once, memoised) before anything is constructed, and a document whose tree
would exceed `MAX_NODES` (or nest deeper than `MAX_DEPTH`, or refer to itself) is refused with one line.
"""

from __future__ import annotations

import re
from typing import Any

from matrix.core.errors import ConfigError

MAX_BYTES = 1024 * 1024  # sglang's largest workflow (July 2026) is 104 KB
MAX_NODES = 200_000  # the whole July sglang tree (94 workflow files) expands to about 60,000 nodes
MAX_DEPTH = 64
# An alias is a node of its own: after a line start, `- `, `: `, `? `, `[` or `,`. Scripts' globs (`rm dist/*`)
# rarely look like that; a false match only costs the check.
_ALIAS = re.compile(r"(?m)(?:^|[\[{,?:-])[ \t]*\*[^\s,\]}*]")


def load_yaml(text: str, name: str) -> Any:
    """The document's Python value (safe types only); a malformed or hostile document is one ConfigError line."""
    import yaml  # only workflow reading needs it; the audit's start-up stays short without

    if len(text) > MAX_BYTES:
        raise ConfigError(f"{name}: larger than {MAX_BYTES} bytes")
    aliased = _ALIAS.search(text) is not None
    if not aliased and _separators(text) > MAX_NODES:
        # Without an alias the tree is the text itself: each node needs a `:`, `,` or `- `, so this many
        # separators is refused before the parser builds a node per entry (100,000 matrix entries, ...).
        raise ConfigError(f"{name}: more than {MAX_NODES:,} YAML nodes; refusing to read it")
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if aliased:
            _check_expansion(node, name)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "parse error"
        raise ConfigError(f"{name}{where}: malformed YAML ({problem})") from None
    except (RecursionError, ValueError, TypeError) as exc:  # the constructor on odd scalars (a huge int, a bad date)
        raise ConfigError(f"{name}: malformed YAML ({type(exc).__name__})") from None
    finally:
        loader.dispose()


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
