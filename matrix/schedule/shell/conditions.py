"""Whether a shell condition holds, from the variables known before the run; pure.

`[ "$X" = "1" ]`, `[[ $X == gpu* ]]`, `-z`/`-n`, `-eq`/`-ne`, `!`, `&&`/`||`/`-a`/`-o`, `true`/`false`, and `case`
patterns give True or False when every variable they read is known (the step's env, the script's literal
assignments), else None: the command under them is then conditional, and says so. File tests (`-f`, `-d`) and
commands used as conditions are known only at run time.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from matrix.schedule.shell.words import Variables, text, word

_NUMERIC = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__, "-gt": int.__gt__, "-ge": int.__ge__}
_NAME = re.compile(r"\$\{?([A-Za-z_]\w*)")


@dataclass(frozen=True, kw_only=True)
class Truth:
    """A condition's value (None: known only at run time), as written, with the known values it was read from."""

    value: bool | None
    shown: str
    read: tuple[str, ...] = ()

    def negated(self) -> Truth:
        return Truth(value=None if self.value is None else not self.value, shown=f"not {self.shown}", read=self.read)

    def assumption(self) -> str:
        """What a command under this condition rests on ("" when nothing: a literal `true`)."""
        if self.value is None:
            return f"runs only if {self.shown} (not known before the run)"
        if self.read:
            return f"{self.shown} is {'true' if self.value else 'false'}: {', '.join(self.read)}"
        return ""


def truth(node: Any, known: Variables) -> Truth:
    """The value of a condition node (a test command, `!`, a command, a list of them)."""
    shown = "`" + " ".join(text(node).split())[:80] + "`"
    names = tuple(dict.fromkeys(_NAME.findall(text(node))))
    read = tuple(f"{n}={known.value(n)}" for n in names if known.value(n) is not None)
    return Truth(value=_value(node, known), shown=shown, read=read)


def _value(node: Any, known: Variables) -> bool | None:
    kind = node.type
    if kind == "test_command":
        inner = node.named_children
        return _value(inner[0], known) if len(inner) == 1 else None
    if kind == "negated_command" or (kind == "unary_expression" and _operator(node) == "!"):
        found = _value(node.named_children[-1], known)
        return None if found is None else not found
    if kind == "parenthesized_expression":
        return _value(node.named_children[0], known) if node.named_child_count == 1 else None
    if kind == "command":
        name = node.child_by_field_name("name")
        written = text(name) if name is not None else ""
        if node.named_child_count == 1:
            return True if written in ("true", ":") else False if written == "false" else None
        return None
    if kind == "list" and node.child_count == 3:
        return _combine(_value(node.children[0], known), text(node.children[1]), _value(node.children[2], known))
    if kind == "binary_expression":
        return _binary(node, known)
    if kind == "unary_expression":
        operator = _operator(node)
        operand = _known_word(node.named_children[-1], known)
        if operand is None:
            return None
        if operator == "-z":
            return operand == ""
        if operator == "-n":
            return operand != ""
        return None  # -f, -d, -e, -x: the file system at run time
    if kind not in _WORDS:
        return None  # a pipeline, a subshell, a command with arguments: its status is known only at run time
    operand = _known_word(node, known)  # `[ "$X" ]`
    return None if operand is None else operand != ""


_WORDS = frozenset({"word", "string", "raw_string", "ansi_c_string", "concatenation", "simple_expansion", "expansion", "number"})


def _operator(node: Any) -> str:
    found = node.child_by_field_name("operator")
    return text(found) if found is not None else ""


def _binary(node: Any, known: Variables) -> bool | None:
    operator = _operator(node)
    left_node, right_node = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left_node is None or right_node is None:
        return None
    if operator in ("&&", "||", "-a", "-o"):
        return _combine(_value(left_node, known), "&&" if operator in ("&&", "-a") else "||", _value(right_node, known))
    left, right = _known_word(left_node, known), _known_word(right_node, known)
    if left is None or right is None:
        return None
    if operator in ("=", "=="):
        return _pattern(left, right, right_node)
    if operator == "!=":
        matched = _pattern(left, right, right_node)
        return None if matched is None else not matched
    if operator in _NUMERIC:
        try:
            return bool(_NUMERIC[operator](int(left), int(right)))
        except ValueError:
            return None
    return None  # =~, <, >: not read


def _pattern(left: str, right: str, right_node: Any) -> bool | None:
    # `[[ x == y* ]]` matches a pattern; a quoted right side (and `[ ]`'s `=`) compares text.
    if right_node.type in ("extglob_pattern", "regex") and any(c in right for c in "*?["):
        return fnmatch.fnmatchcase(left, right)
    return left == right


def _combine(left: bool | None, operator: str, right: bool | None) -> bool | None:
    if operator == "&&":
        if left is False or right is False:
            return False
        return True if left is True and right is True else None
    if operator == "||":
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    return None


def _known_word(node: Any, known: Variables) -> str | None:
    value = word(node, known)
    return None if "$" in value or "`" in value else value


def case_matches(subject: str, patterns: list[str]) -> bool | None:
    """Whether a `case` subject matches one of an item's patterns; None when the subject or a pattern is not
    known before the run."""
    if "$" in subject or "`" in subject:
        return None
    if any("$" in p or "`" in p for p in patterns):
        return None
    return any(fnmatch.fnmatchcase(subject, p) for p in patterns)
