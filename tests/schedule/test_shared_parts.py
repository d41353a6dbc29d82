"""Job conditions read through `evaluate_shared`: every text, read after any others with the same parts table,
has the value the tree interpreter gives it alone; tables are read again; constants that compare equal but read
differently (`1`, `true`, `1.0`; `0.0`, `-0.0`) are never taken for each other. And the walker keeps one parts
table per walk and event, so a condition that reads the event or a callee's inputs is read again where they differ."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.core.loader import load_runners
from matrix.schedule.github import expressions
from matrix.schedule.github.expression_syntax import ExpressionError, parse
from matrix.schedule.github.expressions import OneOf, Unknown, evaluate, evaluate_shared
from matrix.schedule.load import load_schedule
from matrix.schedule.model import Gate

from .test_github import repo

SETTINGS = settings(deadline=None, derandomize=True, database=None, max_examples=200)
RUNNERS = load_runners()

CONTEXT: dict[tuple[str, ...], Any] = {
    ("inputs",): {"a": "x", "n": 2, "t": True, "j": '{"k": [1, "two"]}', "empty": ""},
    ("inputs", "a"): "x",
    ("inputs", "n"): 2,
    ("inputs", "t"): True,
    ("inputs", "j"): '{"k": [1, "two"]}',
    ("inputs", "empty"): "",
    ("inputs", "filter"): "all",
    ("matrix", "runner"): OneOf(values=("1-gpu-h100", "4-gpu-b200"), why="echoed two ways"),
    ("github", "event_name"): "pull_request",
    ("needs", "j", "outputs"): {"table": {"small": "1-gpu-5090"}},
    ("needs", "j", "outputs", "table"): {"small": "1-gpu-5090"},
}


def lookup(path: tuple[str, ...]) -> Any:
    return CONTEXT.get(path, Unknown(text=".".join(path)))


def alone(text: str) -> Any:
    node = parse(text)
    if isinstance(node, ExpressionError):
        return Unknown(text=text.strip())
    try:
        return expressions._value(node, lookup)
    except RecursionError:
        return Unknown(text=text.strip())


# sglang's shape: the same clauses job after job, one name changed; and constants equal as Python values.
TEXTS = [
    "(github.repository == 'o/r' || github.event_name == 'pull_request') && (!inputs.filter || inputs.filter == 'all')",
    "(github.repository == 'o/r' || github.event_name == 'pull_request') && contains(format(',{0},', inputs.a), ',x,')",
    "(github.repository == 'o/r' || github.event_name == 'pull_request') && contains(format(',{0},', inputs.a), ',y,')",
    "format('{0}', 1)",
    "format('{0}', true)",
    "format('{0}', 1.0)",
    "format('{0}', 0.0)",
    "format('{0}', -0.0)",
    "inputs.n == 2",
    "inputs.n == 2.0",
    "inputs.t == true",
    "inputs.t == 1",
    "fromJson(inputs.j).k[1] == 'two'",
    "fromJson(inputs.j).k[0] == 1",
    "needs.j.outputs.table['small']",
    "fromJson(needs.j.outputs.table)['small'] == '1-gpu-5090'",
    "matrix.runner == '1-gpu-h100' || matrix.runner",
    "startsWith(github.event_name, 'pull') && !cancelled() && always()",
    "secrets.TOKEN != '' && inputs.a",
    "(inputs.a)[0]",
    "inputs['a'] == 'x'",
    " || ".join(["inputs.empty"] * 80),  # deeper than CLOSURE_DEPTH: read by `evaluate` itself
    "inputs.a ==",
]


def test_each_text_has_its_own_value_after_the_others():
    parts: dict[int, Any] = {}
    for _ in range(2):  # the second round reads every clause from the table
        for text in TEXTS:
            assert evaluate_shared(text, lookup, parts) == alone(text), text
    assert parts, "nothing was shared"


def test_the_order_of_the_texts_does_not_matter():
    parts: dict[int, Any] = {}
    for text in reversed(TEXTS):
        assert evaluate_shared(text, lookup, parts) == alone(text), text


ATOMS = st.sampled_from(
    [
        "inputs.a",
        "inputs.n",
        "inputs.t",
        "inputs.empty",
        "inputs.filter",
        "matrix.runner",
        "github.event_name",
        "secrets.X",
        "'x'",
        "'all'",
        "1",
        "2",
        "1.0",
        "0.0",
        "-0.0",
        "true",
        "false",
        "null",
        "inputs",
    ]
)


def combine(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from(["||", "&&", "==", "!=", "<", ">="]), inner).map(" ".join),
        inner.map(lambda x: f"!({x})"),
        st.tuples(inner, inner).map(lambda p: f"format('{{0}}-{{1}}', {p[0]}, {p[1]})"),
        st.tuples(inner, inner).map(lambda p: f"contains({p[0]}, {p[1]})"),
        inner.map(lambda x: f"toJson({x})"),
    )


@SETTINGS
@given(st.lists(st.recursive(ATOMS, combine, max_leaves=8), min_size=1, max_size=6))
def test_generated_texts_read_one_after_another_have_their_own_values(texts):
    parts: dict[int, Any] = {}
    for text in texts + texts:
        assert evaluate_shared(text, lookup, parts) == alone(text), text


def test_a_table_is_looked_up_again_every_time():
    table = {"small": "1-gpu-5090"}
    looked: list[tuple[str, ...]] = []

    def resolve(path: tuple[str, ...]) -> Any:
        looked.append(path)
        return table if path == ("needs", "j", "outputs") else Unknown(text=".".join(path))

    parts: dict[int, Any] = {}
    for _ in range(3):
        assert evaluate_shared("fromJson(needs.j.outputs)", resolve, parts) is table
        assert evaluate_shared("fromJson(needs.j.outputs)['small'] == '1-gpu-5090'", resolve, parts) is True
    assert looked.count(("needs", "j", "outputs")) == 4  # three tables, and the comparison's first reading
    assert all(value is not table for value in parts.values())


def test_a_value_holding_a_table_is_not_kept():
    assert not expressions._lasting({"a": 1})
    assert not expressions._lasting([1])
    assert not expressions._lasting(OneOf(values=("a", {"b": 1}), why="x"))
    assert expressions._lasting(OneOf(values=("a", Unknown(text="x")), why="x"))
    assert all(expressions._lasting(v) for v in ("a", 1, 1.5, True, None, Unknown(text="x")))


@pytest.mark.parametrize("text", ["1 == 1", "true", "format('{0}', -0.0)", "inputs.a == 'x'"])
def test_a_text_has_one_number_for_each_distinct_part(text):
    first, second = expressions._shared_form(text), expressions._shared_form(text + " ")
    assert first is not None and second is not None
    assert first[1] == second[1] if first[0] not in ("const", "name") else first == second


def test_equal_looking_constants_get_different_numbers():
    texts = ["format('{0}', 1)", "format('{0}', true)", "format('{0}', 1.0)", "format('{0}', 0.0)", "format('{0}', -0.0)"]
    numbers = set()
    for text in texts:
        node = expressions._shared_form(text)
        assert node is not None
        numbers.add(node[1])
    assert len(numbers) == len(texts)


# -- the walker: one parts table per walk and event ---------------------------------------------------------

CALLER = """on:
  pull_request:
  schedule:
    - cron: '1 2 * * *'
jobs:
  a:
    uses: ./.github/workflows/_stage.yml
    with:
      name: suite-a
  b:
    uses: ./.github/workflows/_stage.yml
    with:
      name: suite-b
"""
CALLEE = """on:
  workflow_call:
    inputs:
      name:
        type: string
jobs:
  only-a:
    if: inputs.name == 'suite-a' && github.event_name == 'pull_request'
    runs-on: 1-gpu-h100
    steps:
      - run: python3 run_suite.py --hw cuda --suite ${{ inputs.name }}-pr
  nightly:
    if: (inputs.name == 'suite-a' || inputs.name == 'suite-b') && github.event_name == 'schedule'
    runs-on: 1-gpu-h100
    steps:
      - if: inputs.name == 'suite-b'
        run: python3 run_suite.py --hw cuda --suite ${{ inputs.name }}-nightly --nightly
"""


def test_conditions_are_read_again_for_each_event_and_each_call(tmp_path):
    files = {".github/workflows/caller.yml": CALLER, ".github/workflows/_stage.yml": CALLEE}
    schedule = load_schedule(repo(tmp_path, files), RUNNERS)
    found = sorted((e.selection.suite, tuple(e.gates)) for e in schedule.entries)  # type: ignore[union-attr]
    assert found == [("suite-a-pr", (Gate.ALWAYS,)), ("suite-b-nightly", (Gate.SCHEDULE,))]


def test_a_step_condition_in_every_matrix_job_is_read_once_per_walk_and_event(tmp_path, monkeypatch):
    workflow = """on: [push, workflow_dispatch]
jobs:
  m:
    runs-on: 1-gpu-h100
    strategy:
      matrix:
        part: [0, 1, 2, 3]
    steps:
      - if: github.event_name == 'push'
        run: python3 run_suite.py --hw cuda --suite s-${{ matrix.part }}
"""
    calls: list[str] = []
    real = expressions.evaluate_shared

    def counted(body: str, resolve: Any, parts: dict[int, Any]) -> Any:
        calls.append(body)
        return real(body, resolve, parts)

    monkeypatch.setattr("matrix.schedule.github.values.evaluate_shared", counted)
    schedule = load_schedule(repo(tmp_path, {".github/workflows/m.yml": workflow}), RUNNERS)
    assert sorted(e.selection.suite for e in schedule.entries) == ["s-0", "s-1", "s-2", "s-3"]  # type: ignore[union-attr]
    assert all(e.gates == (Gate.ALWAYS, Gate.MANUAL) for e in schedule.entries)
    assert calls == ["github.event_name == 'push'"]  # read for the job's first event, once for the four jobs


def test_a_deep_text_is_read_as_evaluate_reads_it():
    text = " || ".join(["inputs.empty"] * 3000)
    assert evaluate_shared(text, lookup, {}) == evaluate(text, lookup)


def test_either_side_of_an_unknown_or_may_be_a_table():
    value = evaluate("matrix.runner || inputs", lookup)
    assert isinstance(value, OneOf) and value.values == ("1-gpu-h100", "4-gpu-b200", CONTEXT[("inputs",)])
    assert evaluate("matrix.runner || matrix.runner", lookup).values == ("1-gpu-h100", "4-gpu-b200")


def test_a_runner_label_echoed_two_ways_or_a_table_is_read_not_a_traceback(tmp_path):
    workflow = """on: push
jobs:
  x:
    runs-on: ubuntu-latest
    steps:
      - run: echo "r=a" >> $GITHUB_OUTPUT
      - run: echo "r=b" >> $GITHUB_OUTPUT
  m:
    runs-on: ${{ needs.x.outputs.r || inputs }}
    steps:
      - run: python3 run_suite.py --hw cuda --suite s
"""
    schedule = load_schedule(repo(tmp_path, {".github/workflows/a.yml": workflow}), RUNNERS)
    assert sorted(e.labels for e in schedule.entries) == [("a",), ("b",), ("{}",)]


@pytest.mark.parametrize("text", [t for t in TEXTS if len(t) < 200])
def test_a_text_reads_alike_before_and_after_it_runs_as_closures(text):
    def traced() -> tuple[Any, list[tuple[str, ...]]]:
        seen: list[tuple[str, ...]] = []

        def record(path: tuple[str, ...]) -> Any:
            seen.append(path)
            return lookup(path)

        return evaluate(text + " " * 7, record), seen  # a text of its own: counted from its first evaluation

    node = parse(text)
    expected: list[tuple[str, ...]] = []
    if not isinstance(node, ExpressionError):
        expressions._value(node, lambda path: expected.append(path) or lookup(path))
    readings = [traced() for _ in range(expressions.COMPILE_AFTER + 2)]
    assert all(reading == (alone(text), expected) for reading in readings), readings
