"""The syntax of a GitHub Actions `${{ }}` expression body: tokens, then a tree of nested tuples; pure.

A tree is read by `matrix.schedule.github.expressions`; parsing looks nothing up, so each distinct text is parsed once.
Bounded: `MAX_EXPRESSION` characters, `MAX_NESTING` levels of brackets and calls.
"""

from __future__ import annotations

import functools
import re
from typing import Any

MAX_EXPRESSION = 4096  # characters of one `${{ }}` body
MAX_NESTING = 32
_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\].,*])|(?P<name>[A-Za-z_][\w-]*))"
)
_SCAN = re.compile(_TOKEN.pattern[:-1] + r"|(?P<bad>\S))")  # a token after blanks, or what no token can be


class ExpressionError(ValueError):
    pass


# A parsed expression: nested tuples ("const", value), ("name", name), ("postfix", base, steps), ("||", a, b),
# ("&&", a, b), ("cmp", op, a, b), ("!", a), ("group", a), ("call", name, args).
Node = tuple[Any, ...]


_COMPARISONS = frozenset({"==", "!=", "<", ">", "<=", ">="})


class _Parser:
    """Recursive descent over the tokens into a `Node` tree; looks nothing up."""

    def __init__(self, text: str) -> None:
        if len(text) > MAX_EXPRESSION:
            raise ExpressionError("expression too long")
        self.tokens = _tokens(text)
        # Each token's text, and None past the last: what `peek` gives, read by index in the loops below.
        self.texts: list[str | None] = [*(token[1] for token in self.tokens), None]
        self.pos = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.texts[self.pos]

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.pos >= len(self.tokens):
            raise ExpressionError("unexpected end")
        token = self.tokens[self.pos]
        if expected is not None and token[1] != expected:
            raise ExpressionError(f"expected {expected!r}")
        self.pos += 1
        return token

    def parse(self) -> Node:
        node = self.or_()
        if self.pos != len(self.tokens):
            raise ExpressionError("trailing tokens")
        return node

    def _nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ExpressionError("nested too deeply")

    def or_(self) -> Node:
        node = self.and_()
        while self.texts[self.pos] == "||":
            self.pos += 1
            node = ("||", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.compare()
        while self.texts[self.pos] == "&&":
            self.pos += 1
            node = ("&&", node, self.compare())
        return node

    def compare(self) -> Node:
        node = self.unary()
        while self.texts[self.pos] in _COMPARISONS:
            op = self.take()[1]
            node = ("cmp", op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.texts[self.pos] == "!":
            self.pos += 1
            return ("!", self.unary())
        return self.postfix()

    def postfix(self) -> Node:
        base = self.primary()
        steps: list[tuple[bool, Any]] = []  # (a computed key, the property name or the key's node)
        while self.texts[self.pos] in (".", "["):
            if self.take()[1] == ".":
                kind, name = self.take()
                if not (kind == "name" or name == "*"):
                    raise ExpressionError("bad property")
                steps.append((False, name))
            else:
                self._nested()
                steps.append((True, self.or_()))
                self.depth -= 1
                self.take("]")
        return ("postfix", base, tuple(steps)) if steps else base

    def primary(self) -> Node:
        kind, text = self.take()
        if kind == "num":
            return ("const", float(text) if "." in text else int(text))
        if kind == "str":
            return ("const", text[1:-1].replace("''", "'"))
        if text == "(":
            self._nested()
            node = self.or_()
            self.depth -= 1
            self.take(")")
            return ("group", node)
        if kind != "name":
            raise ExpressionError(f"unexpected {text!r}")
        if text in ("true", "false"):
            return ("const", text == "true")
        if text == "null":
            return ("const", None)
        if self.peek() == "(":
            self.take()
            args: list[Node] = []
            self._nested()
            while self.peek() != ")":
                args.append(self.or_())
                if self.peek() == ",":
                    self.take()
            self.take(")")
            self.depth -= 1
            return ("call", text, tuple(args))
        return ("name", text)


@functools.lru_cache(maxsize=8192)
def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    # One scan: every character is a blank, part of a token, or `bad` (where a token cannot start).
    for match in _SCAN.finditer(text):
        kind = match.lastgroup or ""
        if kind == "bad":
            raise ExpressionError(f"unexpected {text[pos : pos + 10]!r}")
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


@functools.lru_cache(maxsize=8192)
def parse(text: str) -> Node | ExpressionError:
    """The parsed text, or the error that makes it unreadable (cached too: a bad text is refused once)."""
    try:
        return _Parser(text).parse()
    except ExpressionError as exc:
        return exc
    except RecursionError:
        return ExpressionError("nested too deeply")
