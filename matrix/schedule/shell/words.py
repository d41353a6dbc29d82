"""The words of a bash syntax tree (tree-sitter-bash nodes) under a set of known variables; pure.

A word is expanded the way bash would expand it when every variable it names has a value known before the run
(the step's env, the script's own literal assignments); a variable whose value is not known stays as written
(`$NAME`), so a command reader can say which name it could not resolve instead of guessing. Quotes are removed.
Arrays (`NAME=(a b)`, `"${NAME[@]}"`) and the positional parameters of a function (`"$@"`) expand to several words.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# A variable set in the script to something only the run knows (`X=$(nproc)`): its references stay as written and
# its value shows what it is.
RUN_TIME = "\x00"
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_IN_DOUBLE_QUOTES = re.compile(r'\\([$`"\\\n])')


@dataclass(kw_only=True)
class Variables:
    """What the walk knows at one point of a script: scalars (None: set to a run-time value), arrays, and the
    positional parameters of the function being walked. Mutable: a walk owns one per scope."""

    scalars: dict[str, str | None] = field(default_factory=dict)
    arrays: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    positional: tuple[str, ...] | None = None

    def copy(self) -> Variables:
        return Variables(scalars=dict(self.scalars), arrays=dict(self.arrays), positional=self.positional)

    def value(self, name: str) -> str | None:
        """The known value of `$name`, or None when it is not known before the run."""
        if name in self.arrays:
            items = self.arrays[name]
            return items[0] if items else (None if items is None else "")
        found = self.scalars.get(name)
        if found is None or RUN_TIME in found or "${{" in found or "__UNRESOLVED_" in found:
            return None
        return found


def text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def words(node: Any, known: Variables) -> list[str]:
    """The words one argument node expands to (an array or `"$@"` gives several, an empty array none)."""
    many = _many(node, known)
    if many is not None:
        return list(many)
    return [word(node, known)]


def _many(node: Any, known: Variables) -> Sequence[str] | None:
    """`"${A[@]}"`, `${A[*]}`, `"$@"`: the known items, else None (a single word)."""
    inner = node
    if node.type == "string" and node.named_child_count == 1 and text(node).startswith(('"${', '"$@', '"$*')):
        inner = node.named_children[0]
    written = text(inner)
    if inner.type == "expansion":
        match = re.fullmatch(r"\$\{([A-Za-z_]\w*)\[[@*]\]\}", written)
        if match and known.arrays.get(match.group(1)) is not None:
            return known.arrays[match.group(1)]
    if inner.type == "simple_expansion" and written in ("$@", "$*") and known.positional is not None:
        return known.positional
    return None


def word(node: Any, known: Variables) -> str:
    """One word: quotes removed, known variables substituted, the rest as written."""
    kind = node.type
    if kind == "word":
        written = text(node)
        return _ESCAPED.sub(r"\1", written) if "\\" in written else written
    if kind == "raw_string":
        return text(node)[1:-1]
    if kind == "ansi_c_string":
        return text(node)[2:-1]
    if kind == "string":
        return "".join(_in_string(child, known) for child in node.children[1:-1])
    if kind == "concatenation":
        return "".join(word(child, known) for child in node.children)
    if kind in ("simple_expansion", "expansion"):
        return _expansion(node, known)
    return text(node)  # numbers, patterns, $(...), $((...)): as written


def _in_string(node: Any, known: Variables) -> str:
    if node.type == "string_content":
        written = text(node)
        return _IN_DOUBLE_QUOTES.sub(r"\1", written) if "\\" in written else written
    if node.type in ("simple_expansion", "expansion"):
        return _expansion(node, known)
    return text(node)


_SIMPLE = re.compile(r"\$\{?([A-Za-z_]\w*|[0-9@*#?])\}?")
_DEFAULT = re.compile(r"\$\{([A-Za-z_]\w*)(:?[-=])(.*)\}", re.DOTALL)
_POSITIONAL = re.compile(r"\$\{?([1-9])\}?")


def _expansion(node: Any, known: Variables) -> str:
    written = text(node)
    simple = _SIMPLE.fullmatch(written)
    if simple:
        name = simple.group(1)
        positional = _POSITIONAL.fullmatch(written)
        if positional and known.positional is not None:
            index = int(positional.group(1)) - 1
            return known.positional[index] if index < len(known.positional) else ""
        found = known.value(name)
        return written if found is None else found
    default = _DEFAULT.fullmatch(written)
    if default:
        name, operator, fallback = default.groups()
        found = known.value(name)
        present = name in known.scalars or name in known.arrays
        if found is not None and (found or operator[0] != ":"):
            return found
        if not present and "$" not in fallback and "`" not in fallback:
            return fallback
        if found == "" and operator[0] == ":" and "$" not in fallback:
            return fallback
    return written


def assigned(node: Any, known: Variables) -> tuple[str, str | None, tuple[str, ...] | None] | None:
    """(name, scalar value or None when run-time, array items) of a `variable_assignment` node."""
    name_node = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if name_node is None or name_node.type != "variable_name":
        return None
    name = text(name_node)
    if value is None:
        return name, "", None
    if value.type == "array":
        items: list[str] = []
        for child in value.named_children:
            items.extend(words(child, known))
        if any(_unknown(i) for i in items):
            return name, None, None
        return name, None, tuple(items)
    result = word(value, known)
    return name, (None if _unknown(result) else result), None


def _unknown(value: str) -> bool:
    return "$" in value or "`" in value


def env_value(node: Any, known: Variables) -> str:
    """The value an environment prefix (`FOO=1 cmd`) hands the command: the expanded text, as written if not known."""
    value = node.child_by_field_name("value")
    return "" if value is None else word(value, known)


def known_from(env: Mapping[str, str]) -> Variables:
    """The variables a step's env gives a script before it runs."""
    return Variables(scalars=dict(env))
