"""The words of a bash syntax tree (tree-sitter-bash nodes) under a set of known variables; pure.

A word is expanded the way bash would expand it when every variable it names has a value known before the run
(the step's env, the script's own literal assignments); a variable whose value is not known stays as written
(`$NAME`), so a command reader can say which name it could not resolve instead of guessing. Quotes are removed.
Arrays (`NAME=(a b)`, `"${NAME[@]}"`) and the positional parameters of a function (`"$@"`) expand to several words.
An unquoted word holding `*`, `?` or `[` is a pathname pattern: it expands to the files it matches (through the
`Glob` the walk is given), stays as written when it matches none (bash's default, `nullglob` off), and is a run-time
word when no listing of the checkout is at hand. A variable `unset` in the script expands to nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.schedule.shell.subset import Outside

# A variable set in the script to something only the run knows (`X=$(nproc)`): its references stay as written and
# its value shows what it is.
RUN_TIME = "\x00"
_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_IN_DOUBLE_QUOTES = re.compile(r'\\([$`"\\\n])')
_GLOB_CHARS = re.compile(r"(?<!\\)[*?\[]")
# `{a,b}` and `{1..3}`: brace expansion, outside what the reader models.
_BRACES = re.compile(r"(?<![\\$]){[^{}\s]*(?:,|\.\.)[^{}\s]*}")

# A pathname pattern (bash's, from the command's folder) -> the paths it matches, sorted as bash sorts them
# (empty when none), or None when no listing of the checkout is at hand.
Glob = Callable[[str], Sequence[str] | None]


class NoMatch(tuple[str, ...]):
    """What a `Glob` gives for a pattern that matches nothing under `shopt -s nullglob`: the word is gone."""


# A value longer than this is kept as a run-time one: `A=$A$A` sixty times would double to exabytes.
MAX_VALUE = 64 * 1024


def bounded(value: str | None) -> str | None:
    """`value`, or None (known only at run time) when it is longer than MAX_VALUE."""
    return None if value is None or len(value) > MAX_VALUE else value


def run_time(shown: str) -> str:
    """An environment value known only at run time, as the schedule writes one (`${{ ... }}`: every reader of an
    entry's env, the guard engine included, takes such a value as unknown)."""
    return "${{ run time: " + " ".join(shown.split())[:120] + " }}"


def is_run_time(value: str) -> bool:
    return "${{" in value or RUN_TIME in value or "__UNRESOLVED_" in value


@dataclass(kw_only=True)
class Variables:
    """What the walk knows at one point of a script: scalars (None: set to a run-time value), arrays, the names
    `unset` in the script (they expand to nothing), and the positional parameters of the function being walked.
    Mutable: a walk owns one per scope."""

    scalars: dict[str, str | None] = field(default_factory=dict)
    arrays: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    unset: set[str] = field(default_factory=set)
    positional: tuple[str, ...] | None = None

    def copy(self) -> Variables:
        return Variables(scalars=dict(self.scalars), arrays=dict(self.arrays), unset=set(self.unset), positional=self.positional)

    def value(self, name: str) -> str | None:
        """The known value of `$name`, or None when it is not known before the run."""
        if name in self.unset:
            return ""
        if name in self.arrays:
            items = self.arrays[name]
            return items[0] if items else (None if items is None else "")
        found = self.scalars.get(name)
        if found is None or is_run_time(found):
            return None
        return found

    def set(self, name: str, value: str | None) -> None:
        self.unset.discard(name)
        self.arrays.pop(name, None)
        self.scalars[name] = bounded(value)

    def remove(self, name: str) -> None:
        self.scalars.pop(name, None)
        self.arrays.pop(name, None)
        self.unset.add(name)


def text(node: Any) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def words(node: Any, known: Variables, glob: Glob | None = None) -> list[str]:
    """The words one argument node expands to (an array or `"$@"` gives several, an empty array none, a pattern
    the files it matches)."""
    many = _many(node, known)
    if many is not None:
        return list(many)
    if node.type in ("simple_expansion", "expansion"):  # unquoted: split on blanks, nothing when empty
        value = _expansion(node, known)
        if not value.startswith("$") and (value == "" or any(c in value for c in " \t\n")):
            return [] if not value.strip() else value.split()
    pattern = _pattern(node, known)
    if pattern is not None:
        if _BRACES.search(pattern):
            raise Outside(f"brace expansion `{text(node)[:60]}`")
        if _GLOB_CHARS.search(pattern) and "$" not in pattern and "`" not in pattern:
            return _globbed(pattern, node, known, glob)
    return [word(node, known)]


def _globbed(pattern: str, node: Any, known: Variables, glob: Glob | None) -> list[str]:
    found = glob(pattern) if glob is not None else None
    if found:
        return list(found)
    if isinstance(found, NoMatch):
        return []  # nullglob: a pattern matching nothing expands to nothing
    written = word(node, known)
    if found is not None:
        return [written]  # no match: bash leaves the word as written (nullglob off)
    head = pattern[: _GLOB_CHARS.search(pattern).start()]  # type: ignore[union-attr]
    folder = head.rpartition("/")[0]
    rest = written[len(folder) + 1 :] if folder else written
    return [f"{folder}/$(glob {rest})" if folder else f"$(glob {rest})"]


def _pattern(node: Any, known: Variables) -> str | None:
    """The word as a pathname pattern (quoted parts escaped), or None when it has no unquoted part that may hold
    one (a quoted word, a command substitution)."""
    kind = node.type
    if kind == "word":
        return text(node)
    if kind == "concatenation":
        parts = [_part(child, known) for child in node.children]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
    if kind in ("simple_expansion", "expansion"):
        value = _expansion(node, known)
        return None if value.startswith("$") else value
    return None


def _part(node: Any, known: Variables) -> str | None:
    kind = node.type
    if kind == "word":
        return text(node)
    if kind in ("string", "raw_string", "ansi_c_string"):
        return re.sub(r"([*?\[\]\\{}])", r"\\\1", word(node, known))
    if kind in ("simple_expansion", "expansion"):
        return _expansion(node, known)  # unquoted: its value is part of the pattern
    return None


def _many(node: Any, known: Variables) -> Sequence[str] | None:
    """`"${A[@]}"`, `${A[*]}`, `"$@"`: the known items, else None (a single word)."""
    inner = node
    if node.type == "string" and node.named_child_count == 1 and text(node).startswith(('"${', '"$@', '"$*')):
        inner = node.named_children[0]
    written = text(inner)
    if inner.type == "expansion":
        match = re.fullmatch(r"\$\{([A-Za-z_]\w*)\[[@*]\]\}", written)
        if match and match.group(1) in known.unset:
            return ()
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
_DEFAULT = re.compile(r"\$\{([A-Za-z_]\w*)(:?[-=+])(.*)\}", re.DOTALL)
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
        name, operator, operand = default.groups()
        return _with_operator(written, name, operator, operand, known)
    return written


def _with_operator(written: str, name: str, operator: str, operand: str, known: Variables) -> str:
    """`${X-w}`, `${X:-w}`, `${X=w}`, `${X:=w}` and `${X+w}`, `${X:+w}` (bash manual, "Shell Parameter
    Expansion"): the value, the word, or as written when which one is not known."""
    # A name the walk was never given counts as unset here, as a step's env lists what the job sets.
    present = name not in known.unset and (name in known.scalars or name in known.arrays)
    found = known.value(name) if present else None
    if present and found is None:
        return written  # set to a run-time value: whether it is empty is not known
    colon = operator.startswith(":")
    taken = present and not (colon and found == "")  # whether bash takes the value over the word
    word_value = operand if "$" not in operand and "`" not in operand else written
    if operator.endswith("+"):
        return word_value if taken else ""
    return found if taken and found is not None else word_value


def assigned(node: Any, known: Variables, glob: Glob | None = None) -> tuple[str, str | None, tuple[str, ...] | None] | None:
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
            items.extend(words(child, known, glob))
        if any(_unknown(i) for i in items):
            return name, None, None
        return name, None, tuple(items)
    result = word(value, known)
    return name, (None if _unknown(result) else result), None


def _unknown(value: str) -> bool:
    return "$" in value or "`" in value


def env_value(node: Any, known: Variables) -> str:
    """The value an environment prefix (`FOO=1 cmd`) hands the command: the expanded text, a run-time marker when it
    is not known."""
    value = node.child_by_field_name("value")
    if value is None:
        return ""
    found = word(value, known)
    return run_time(text(value)) if _unknown(found) else found


def known_from(env: Mapping[str, str]) -> Variables:
    """The variables a step's env gives a script before it runs."""
    return Variables(scalars=dict(env))
