"""The expression parser reads token texts by index instead of through `peek`: every text must give the tree, or
the error, that the parser gave before (kept here as the reference, over the same tokens)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.schedule.github.expression_syntax import MAX_EXPRESSION, MAX_NESTING, ExpressionError, Node, _Parser, _tokens

SETTINGS = settings(deadline=None, derandomize=True, database=None, max_examples=500)


class ParserAsItWas:
    """The parser before its loops read token texts by index (the reference)."""

    def __init__(self, text: str) -> None:
        if len(text) > MAX_EXPRESSION:
            raise ExpressionError("expression too long")
        self.tokens = _tokens(text)
        self.pos = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

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
        while self.peek() == "||":
            self.take()
            node = ("||", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.compare()
        while self.peek() == "&&":
            self.take()
            node = ("&&", node, self.compare())
        return node

    def compare(self) -> Node:
        node = self.unary()
        while self.peek() in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            node = ("cmp", op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek() == "!":
            self.take()
            return ("!", self.unary())
        return self.postfix()

    def postfix(self) -> Node:
        base = self.primary()
        steps: list[tuple[bool, Any]] = []  # (a computed key, the property name or the key's node)
        while self.peek() in (".", "["):
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


def outcome(parser: Any, text: str) -> Any:
    try:
        return parser(text).parse()
    except ExpressionError as exc:
        return ("error", str(exc))
    except RecursionError:
        return ("error", "recursion")


@pytest.mark.parametrize(
    "text",
    [
        "a || b && c == 'x'",
        "!a.b['c'][0].d",
        "fromJson(inputs.j).k[1] != 2.5",
        "contains(format(',{0},', inputs.a || inputs.b), ',x,')",
        "(a)[0] < 1 && !(b >= -2) || null == true",
        "f()",
        "f(a,)",
        "f(a b)",
        "a.",
        "a.*",
        "a.1",
        "a[",
        "a[b",
        "(a",
        "a)",
        "!",
        "a == == b",
        "",
        "'x''y'",
        "[" * 40 + "a" + "]" * 40,
        "a" + "[a" * 40 + "]" * 40,
        " || ".join(["x"] * 500),
        "!" * 900 + "a",
    ],
)
def test_written_texts_parse_as_before(text):
    assert outcome(_Parser, text) == outcome(ParserAsItWas, text)


PIECES = [
    "a",
    "b.c",
    "'s'",
    "1",
    "2.5",
    "-3",
    "true",
    "null",
    "f(",
    "g(",
    ")",
    "(",
    "[",
    "]",
    ".",
    ",",
    "*",
    "||",
    "&&",
    "==",
    "!=",
    "<",
    ">=",
    "!",
    " ",
]


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=14).map(" ".join))
def test_generated_texts_parse_as_before(text):
    assert outcome(_Parser, text) == outcome(ParserAsItWas, text)
