"""The workflow YAML reader builds plain documents itself: the values must be PyYAML's safe constructor's, to the
type, and everything else (merge keys, tags, complex keys, odd scalars) must still go through PyYAML."""

from __future__ import annotations

import random
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.core.errors import ConfigError
from matrix.schedule import yamldoc
from matrix.schedule.yamldoc import load_yaml

SETTINGS = settings(deadline=None, derandomize=True, database=None, max_examples=200)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

WORKFLOW = """\
name: Stage tests
on:
  push:
    branches: [main]
  pull_request:
  schedule:
    - cron: '0 3 * * *'
env:
  STRICT: true
  RETRIES: 3
  RATIO: 0.5
  EMPTY:
  DATE: 2026-12-01
  HEX: 0x1f
  OCTAL: 0o17
  UNDERSCORED: 1_000
  SEXAGESIMAL: 1:30
  INF: .inf
  NAN: .nan
  TILDE: ~
  QUOTED_TRUE: 'true'
  YES: yes
  OFF: Off
jobs:
  stage-a:
    runs-on: [self-hosted, 1-gpu-h100]
    strategy:
      matrix:
        part: [0, 1, 2]
        include:
          - part: 3
            extra: "x"
    steps:
      - uses: actions/checkout@v4
      - run: |
          cd test
          python3 run_suite.py --hw cuda --suite stage-a --auto-partition-id ${{ matrix.part }}
      - name: folded
        run: >
          echo one
          echo two
"""


def pyyaml(text: str) -> object:
    return yaml.load(text, Loader=LOADER)  # the safe loader, named explicitly: the reference


def same(a: object, b: object) -> bool:
    """The same values with the same types all the way down, in the same order (1 == 1.0 == True, and {a, b} ==
    {b, a}, would hide a wrong scalar type or a reordered mapping)."""
    return repr(a) == repr(b)


def test_a_workflow_is_read_as_pyyaml_reads_it():
    assert same(load_yaml(WORKFLOW, "w.yml"), pyyaml(WORKFLOW))


def test_nan_and_types_are_kept():
    doc = load_yaml(WORKFLOW, "w.yml")
    env = doc["env"]
    assert env["STRICT"] is True and type(env["RETRIES"]) is int and type(env["RATIO"]) is float
    assert env["EMPTY"] is None and env["QUOTED_TRUE"] == "true" and env["HEX"] == 31 and env["SEXAGESIMAL"] == 90
    assert env["NAN"] != env["NAN"] and True in doc  # YAML 1.1: a bare `on` key is True


def outcome(text: str) -> tuple[str, str]:
    """What `load_yaml` gives: the value's repr, or the error's line."""
    try:
        return ("value", repr(load_yaml(text, "w.yml")))
    except ConfigError as exc:
        return ("error", str(exc))


def outcome_through_pyyaml(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The same with every document built by PyYAML's constructor (the reader before `_build`)."""

    def unplain(*args: object) -> object:
        raise yamldoc._Unplain

    with monkeypatch.context() as patch:
        patch.setattr(yamldoc, "_build", unplain)
        return outcome(text)


@pytest.mark.parametrize(
    "text",
    [
        "base: &b {a: 1, b: 2}\nderived:\n  <<: *b\n  b: 3\n",  # a merge key
        "s: !!set {x, y}\n",
        "o: !!omap [{a: 1}, {b: 2}]\n",
        "p: !!pairs [{a: 1}, {a: 2}]\n",
        "b: !!binary aGk=\n",
        "t: !!str 12\ni: !!int '12'\nf: !!float '1'\nn: !!null x\n",
        "? [a, b]\n: complex key\n",
        "=: value key\n",
        "k: =\n",
        "c: !custom x\n",
        "x: !!bool maybe\n",
        "x: !!int nope\n",
        "x: !!timestamp 2026-13-45\n",
        "big: " + "9" * 5000 + "\n",
        "deep: " + "[" * 150 + "]" * 150 + "\n",
        "dup: 1\ndup: 2\nother: 3\n",
        "1: int key\n2.5: float key\nnull: null key\ntrue: bool key\n2026-01-02: date key\n",
        "x: &a [1, 2]\ny: *a\nz: {k: *a}\n",
        "",
        "# only a comment\n",
        "- a\n- [b, {c: d}]\n",
        "just a scalar\n",
    ],
)
def test_everything_else_reads_as_pyyaml_reads_it_or_fails_the_same_way(text, monkeypatch):
    assert outcome(text) == outcome_through_pyyaml(text, monkeypatch)


def test_an_unknown_bool_value_is_one_line_not_a_traceback():
    with pytest.raises(ConfigError, match=r"w.yml: malformed YAML \(KeyError\)"):
        load_yaml("x: !!bool maybe\n", "w.yml")


def test_an_alias_gives_the_same_object_as_in_pyyaml():
    doc = load_yaml("x: &a [1, {k: v}]\ny: *a\n", "w.yml")
    assert doc["x"] is doc["y"]


def test_plain_documents_are_not_handed_to_pyyamls_constructor(monkeypatch):
    def refuse(self, node):
        raise AssertionError("the constructor was asked for a plain document")

    monkeypatch.setattr(LOADER, "construct_document", refuse)
    assert load_yaml(WORKFLOW, "w.yml")["jobs"]["stage-a"]["runs-on"] == ["self-hosted", "1-gpu-h100"]


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "on",
            "Off",
            "yes",
            "~",
            "null",
            "0x1f",
            "0o17",
            "017",
            "1_000",
            "1:30",
            ".inf",
            "-.INF",
            "2026-07-20",
            "2026-07-20 10:00:00",
            "=",
            "<<",
            "1e3",
            "+1",
            "0b101",
            "'q'",
            '"dq"',
            "a: b",
            "- x",
            "#c",
        ]
    ),
)
DOCS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(SCALARS.filter(lambda k: k is not None), inner, max_size=4),
    max_leaves=20,
)


@SETTINGS
@given(DOCS, st.booleans())
def test_generated_documents_read_as_pyyaml_reads_them(value, flow):
    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True)
    assert same(load_yaml(text, "w.yml"), pyyaml(text))


@SETTINGS
@given(
    st.lists(
        st.sampled_from(
            ["a", ": ", "- ", "\n", "  ", "[", "]", "{", "}", ", ", "'", "1", "~", "yes", "0x", "!!str ", "&a ", "*a"]
        ),
        max_size=30,
    ).map("".join)
)
def test_generated_texts_read_or_fail_as_through_pyyaml(text):
    with pytest.MonkeyPatch.context() as patch:
        assert outcome(text) == outcome_through_pyyaml(text, patch)


# The rule `_aliased` implements, as the regex it replaced: an alias is `*name` with only blanks between it and a
# line start or one of `[{,?:-`.
ALIAS_RULE = re.compile(r"(?m)(?:^|[\[{,?:-])[ \t]*\*[^\s,\]}*]")


@pytest.mark.parametrize(
    "text",
    ["a: *x", "- *x", "[*x, *y]", "{a: *x}", "? *x", "*x", "  \t*x", "rm dist/*", "echo **bold**", "a: '*x'", "x*y", "-*", "*"],
)
def test_the_alias_search_is_the_rule(text):
    assert yamldoc._aliased(text) == (ALIAS_RULE.search(text) is not None)


def test_the_alias_search_is_the_rule_on_many_seeded_texts():
    rng = random.Random(7)
    pieces = ["*", "*a", "a", " ", "\t", "\n", "\r\n", "[", "{", ",", "?", ":", "-", "]", "}", "x*", "'"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        assert yamldoc._aliased(text) == (ALIAS_RULE.search(text) is not None), text


@pytest.mark.parametrize(
    "scalar",
    ["0", "7", "15", "012", "0o17", "0x1f", "0b11", "1_000", "-3", "+3", "1:30", "00", "123456789012345678901234567890"],
)
def test_an_integer_scalar_is_the_value_pyyaml_gives_it(scalar):
    """Plain decimals take a shortcut past PyYAML's int constructor; every other spelling still goes through it."""
    text = f"a: [{scalar}, {scalar}]\nb: {scalar}\n"
    assert same(load_yaml(text, "w.yml"), pyyaml(text))


@given(st.from_regex(r"[-+]?[0-9_]{1,24}", fullmatch=True))
@settings(max_examples=200, deadline=None)
def test_any_digit_run_reads_as_pyyaml_reads_it(scalar):
    text = f"v: [{scalar}]\n"
    assert same(load_yaml(text, "w.yml"), pyyaml(text))
