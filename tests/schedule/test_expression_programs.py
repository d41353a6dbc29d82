"""Expressions run as trees of closures (`_program`): the value and every context lookup, in order, must be what
the tree interpreter (`_value`) gives, on written and generated expressions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.schedule.github import expressions
from matrix.schedule.github.expression_syntax import ExpressionError, parse
from matrix.schedule.github.expressions import OneOf, Unknown, evaluate

SETTINGS = settings(deadline=None, derandomize=True, database=None, max_examples=300)

CONTEXT: dict[tuple[str, ...], Any] = {
    ("inputs",): {"a": "x", "n": 2, "t": True, "j": '{"k": [1, "two"]}', "empty": ""},
    ("inputs", "a"): "x",
    ("inputs", "n"): 2,
    ("inputs", "t"): True,
    ("inputs", "j"): '{"k": [1, "two"]}',
    ("inputs", "empty"): "",
    ("matrix", "runner"): OneOf(values=("1-gpu-h100", "4-gpu-b200"), why="echoed two ways"),
    ("github", "event_name"): "pull_request",
    ("needs", "j", "outputs"): {"table": {"small": "1-gpu-5090"}},
    ("needs", "j", "outputs", "table"): {"small": "1-gpu-5090"},
}


def run(program: Any, text: str) -> tuple[str, list[tuple[str, ...]]]:
    seen: list[tuple[str, ...]] = []

    def lookup(path: tuple[str, ...]) -> Any:
        seen.append(path)
        return CONTEXT.get(path, Unknown(text=".".join(path)))

    try:
        value = repr(program(lookup))
    except RecursionError:
        value = "RecursionError"
    return value, seen


def both(text: str) -> tuple[tuple[str, list[tuple[str, ...]]], tuple[str, list[tuple[str, ...]]]]:
    node = parse(text)
    program = expressions._program(text)
    if isinstance(node, ExpressionError):
        assert isinstance(program, ExpressionError)
        return ("error", []), ("error", [])
    assert not isinstance(program, ExpressionError)
    return run(program, text), run(lambda lookup: expressions._value(node, lookup), text)


@pytest.mark.parametrize(
    "text",
    [
        "inputs.a == 'X'",
        "inputs.n > 1 && inputs.t",
        "!inputs.empty || inputs.a",
        "fromJson(inputs.j).k[1]",
        "fromJson(needs.j.outputs.table)['small']",
        "needs.j.outputs.table[inputs.a]",
        "matrix.runner || 'none'",
        "contains(format(',{0},', inputs.a || inputs.b), ',x,')",
        "startsWith(github.event_name, 'pull') && !cancelled() && always()",
        "(inputs.a)[0]",
        "toJson(inputs)",
        "join(fromJson(inputs.j).k, '-')",
        "secrets.TOKEN != ''",
        "inputs['a']",
        "matrix.runner[0]",
        "1.5 < 2 && null == null",
    ],
)
def test_programs_do_what_the_interpreter_does(text):
    program, interpreted = both(text)
    assert program == interpreted


ATOMS = st.sampled_from(
    [
        "inputs.a",
        "inputs.n",
        "inputs.t",
        "inputs.j",
        "inputs.empty",
        "inputs.missing",
        "inputs",
        "matrix.runner",
        "github.event_name",
        "needs.j.outputs.table",
        "needs.j.outputs",
        "secrets.X",
        "'x'",
        "'X'",
        "''",
        "0",
        "2",
        "1.5",
        "true",
        "false",
        "null",
        "always()",
        "failure()",
    ]
)


def combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(["||", "&&", "==", "!=", "<", ">="]), inner).map(" ".join),
        inner.map(lambda x: f"!{x}"),
        inner.map(lambda x: f"({x})"),
        st.tuples(inner, inner).map(lambda p: f"{p[0]}[{p[1]}]"),
        st.tuples(st.sampled_from(["contains", "startsWith", "format", "join", "endsWith"]), inner, inner).map(
            lambda p: f"{p[0]}({p[1]}, {p[2]})"
        ),
        st.tuples(st.sampled_from(["fromJson", "toJson"]), inner).map(lambda p: f"{p[0]}({p[1]})"),
        inner.map(lambda x: f"({x}).k"),
    )


@SETTINGS
@given(st.recursive(ATOMS, combine, max_leaves=12))
def test_programs_do_what_the_interpreter_does_on_generated_expressions(text):
    program, interpreted = both(text)
    assert program == interpreted


@pytest.mark.parametrize("terms", [10, 60, 200, 3000])
def test_long_chains_give_what_they_gave(terms):
    text = " || ".join(["inputs.empty"] * terms)
    node = parse(text)
    if isinstance(node, ExpressionError):
        expected: Any = Unknown(text=text.strip())
    else:
        try:
            expected = expressions._value(node, lambda path: CONTEXT.get(path, Unknown(text=".".join(path))))
        except RecursionError:
            expected = Unknown(text=text.strip())
    assert evaluate(text, lambda path: CONTEXT.get(path, Unknown(text=".".join(path)))) == expected
