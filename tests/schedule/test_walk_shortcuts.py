"""Shortcuts of the workflow read, each against the rule it stands in for: a step's run facts, a text's expression
template, the callee's input defaults, expression tokens, YAML tags, and which documents count as aliased."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.core.errors import ConfigError
from matrix.core.loader import load_runners
from matrix.schedule import yamldoc
from matrix.schedule.github import expression_syntax, workflow_doc
from matrix.schedule.github.expression_syntax import ExpressionError
from matrix.schedule.github.expressions import EXPR, OneOf, Unknown, expand, placeholder
from matrix.schedule.load import load_schedule

from .test_github import repo

SETTINGS = settings(deadline=None, derandomize=True, database=None, max_examples=300)
RUNNERS = load_runners()
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# -- a step's run facts ------------------------------------------------------------------------------------


def run_facts_as_they_were(run: str) -> tuple[str, list[tuple[str, str]]]:
    first = run.strip().splitlines()[0] if run.strip() else "run:"
    env: list[tuple[str, str]] = []
    for match in workflow_doc.ENV_ECHO.finditer(run):
        env.append((match.group(1), match.group(2) if "$" not in match.group(2) else "${{ run time }}"))
    return first, env


@pytest.mark.parametrize(
    "run",
    [
        "",
        "   \n  ",
        "python3 run_suite.py --suite a",
        "\n\n  cd test\n  python3 run_suite.py --suite a\n",
        'echo "A=1" >> $GITHUB_ENV\necho B=$X >> "$GITHUB_ENV"\necho "A=2" >> ${GITHUB_ENV}',
        "first\rsecond\u2028third",
    ],
)
def test_run_facts_are_what_the_step_loop_found(run):
    first, echoes = workflow_doc.run_facts(run)
    expected_first, expected_env = run_facts_as_they_were(run)
    assert first == expected_first and list(echoes) == expected_env


def test_later_env_writes_win_as_before(tmp_path):
    workflow = """on: push
jobs:
  j:
    runs-on: 1-gpu-h100
    steps:
      - run: |
          echo "MODE=a" >> $GITHUB_ENV
          echo "MODE=b" >> $GITHUB_ENV
      - run: python3 run_suite.py --hw cuda --suite s
"""
    (entry,) = load_schedule(repo(tmp_path, {".github/workflows/w.yml": workflow}), RUNNERS).entries
    assert dict(entry.env)["MODE"] == "b"


# -- a callee's input defaults ---------------------------------------------------------------------------


def test_each_call_starts_from_the_callee_defaults(tmp_path):
    files = {
        ".github/workflows/caller.yml": (
            "on: push\njobs:\n  given:\n    uses: ./.github/workflows/_s.yml\n    with:\n      name: given-suite\n"
            "  default:\n    uses: ./.github/workflows/_s.yml\n"
        ),
        ".github/workflows/_s.yml": (
            "on:\n  workflow_call:\n    inputs:\n      name:\n        default: default-suite\n"
            "jobs:\n  s:\n    runs-on: 1-gpu-h100\n    steps:\n"
            "      - run: python3 run_suite.py --hw cuda --suite ${{ inputs.name }}\n"
        ),
    }
    schedule = load_schedule(repo(tmp_path, files), RUNNERS)
    assert sorted(e.selection.suite for e in schedule.entries) == ["default-suite", "given-suite"]  # type: ignore[union-attr]


# -- a text's expressions, found once --------------------------------------------------------------------


def expand_as_it_was(text: str, lookup: Any) -> tuple[Any, tuple[Unknown, ...]]:
    """`expand` before the template: the loop over EXPR's matches of the text itself."""
    from matrix.schedule.github.expressions import _text, evaluate

    if "${{" not in text:
        return text, ()
    whole = EXPR.fullmatch(text.strip())
    if whole is not None and "}}" not in whole.group(1):
        value = evaluate(whole.group(1), lookup)
        return value, ((value,) if isinstance(value, Unknown) else ())
    unknown: list[Unknown] = []
    pieces: list[tuple[str, ...]] = [("",)]
    last = 0
    for match in EXPR.finditer(text):
        pieces.append((text[last : match.start()],))
        value = evaluate(match.group(1), lookup)
        if isinstance(value, Unknown):
            unknown.append(value)
            pieces.append((placeholder(len(unknown) - 1),))
        elif isinstance(value, OneOf):
            pieces.append(tuple(_text(v) for v in value.values))
        else:
            pieces.append((_text(value),))
        last = match.end()
    pieces.append((text[last:],))
    options = [""]
    for choices in pieces:
        options = [o + c for o in options for c in choices][:16]
    if len(options) == 1:
        return options[0], tuple(unknown)
    return OneOf(values=tuple(dict.fromkeys(options)), why="a value known several ways"), tuple(unknown)


CONTEXT: dict[tuple[str, ...], Any] = {
    ("inputs", "a"): "x",
    ("inputs", "n"): 2,
    ("matrix", "r"): OneOf(values=("h100", "b200"), why="two"),
}


def lookup(path: tuple[str, ...]) -> Any:
    return CONTEXT.get(path, Unknown(text=".".join(path)))


PIECES = [
    "${{ inputs.a }}",
    "${{ inputs.n }}",
    "${{ matrix.r }}",
    "${{ secrets.X }}",
    "${{",
    "}}",
    "$",
    "{",
    " ",
    "\n",
    "run ",
    "--suite ",
    "${{ inputs.a == 'x' }}",
    "${{ }}",
    "${{ ) }}",
]


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=8).map("".join))
def test_expanding_through_the_template_is_the_loop(text):
    assert expand(text, lookup) == expand_as_it_was(text, lookup)


# -- expression tokens -----------------------------------------------------------------------------------


def tokens_as_they_were(text: str) -> list[tuple[str, str]] | str:
    """The token loop before the one-scan tokenizer: a blank rest ends it, else a token must match here."""
    blank_to_end = re.compile(r"\s*\Z")
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if blank_to_end.match(text, pos):
            break
        match = expression_syntax._TOKEN.match(text, pos)
        if match is None:
            return f"unexpected {text[pos : pos + 10]!r}"
        kind = match.lastgroup or ""
        out.append((kind, match.group(kind)))
        pos = match.end()
    return out


def tokens_now(text: str) -> list[tuple[str, str]] | str:
    try:
        return expression_syntax._tokens.__wrapped__(text)
    except ExpressionError as exc:
        return str(exc)


TOKEN_PIECES = [
    "a",
    "b-c",
    "_x",
    "1",
    "-2",
    "3.5",
    "'s'",
    "'it''s'",
    "'",
    "==",
    "!=",
    "<=",
    ">",
    "!",
    "&&",
    "||",
    "(",
    ")",
    "[",
    "]",
    ".",
    ",",
    "*",
    " ",
    "\t",
    "\n",
    "\u00a0",
    "$",
    "~",
    "é",
    "=",
    "&",
    "|",
]


@SETTINGS
@given(st.lists(st.sampled_from(TOKEN_PIECES), max_size=12).map("".join))
def test_tokens_are_what_the_token_loop_gave(text):
    assert tokens_now(text) == tokens_as_they_were(text)


# -- YAML tags -------------------------------------------------------------------------------------------


SCALARS = [
    "",
    "x",
    "true",
    "True",
    "yes",
    "no",
    "off",
    "~",
    "null",
    "1",
    "-1",
    "0x1f",
    "0o17",
    "1_000",
    "1.5",
    ".inf",
    ".NaN",
    "1:30",
    "2026-12-01",
    "2026-12-01 10:00:00",
    "=",
    "<<",
    "'1'",
    "a b",
]


@pytest.mark.parametrize("value", SCALARS)
@pytest.mark.parametrize("implicit", [(True, False), (False, True), (False, False), (True, True)])
def test_a_scalar_tag_is_the_resolvers(value, implicit):
    loader = yamldoc._loader_class()("")
    try:
        assert loader.resolve(yaml.ScalarNode, value, implicit) == LOADER.resolve(loader, yaml.ScalarNode, value, implicit)
        for kind in (yaml.SequenceNode, yaml.MappingNode):
            assert loader.resolve(kind, None, implicit) == LOADER.resolve(loader, kind, None, implicit)
    finally:
        loader.dispose()


def test_a_loader_with_a_path_resolver_is_pyyamls(monkeypatch):
    monkeypatch.setattr(LOADER, "yaml_path_resolvers", {("x",): None})
    loader = yamldoc._loader_class()("")
    try:
        seen: list[Any] = []
        monkeypatch.setattr(LOADER, "resolve", lambda self, *args: seen.append(args) or "tag:x")
        assert loader.resolve(yaml.ScalarNode, "v", (False, True)) == "tag:x" and seen
    finally:
        loader.dispose()


# -- which documents count as aliased ----------------------------------------------------------------------


def has_alias(text: str) -> bool:
    """Whether PyYAML's composed graph reaches some node twice (what an alias makes)."""
    loader = LOADER(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()
    seen: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
    return False


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: &x 1\nb: *x\n", True),
        ("a: &long-name_1 [1]\nb: [*long-name_1]\n", True),
        ("a: &x\n  k: v\nb:\n  - *x\n", True),
        ("run: |\n  case $x in\n    *) echo no ;;\n  esac\n", False),
        ("run: |\n  for w in dist/*.whl; do echo $w; done\n", False),
        ("a: *x\n", False),  # no anchor: PyYAML refuses it either way
        ("a: '&x'\nb: *x\n", True),  # the anchor's text anywhere is enough to count
    ],
)
def test_a_document_counts_as_aliased_when_an_alias_has_an_anchor(text, expected):
    assert yamldoc._may_alias(text) == expected


def test_every_document_with_an_alias_counts_as_aliased_on_seeded_texts():
    rng = random.Random(5)
    names = ["a", "b-1", "c_d", "X9"]
    checked = with_alias = 0
    for _ in range(3000):
        anchor = rng.choice(names)
        lines = [rng.choice([f"k: &{anchor} 0", f"k: &{anchor} [0]", f"k: &{anchor}\n  v: 0", "k: 0"])]
        for i in range(rng.randint(1, 4)):
            ref = rng.choice([anchor, anchor, rng.choice(names)])
            value = rng.choice([f"*{ref}", f"[*{ref}, {i}]", f"{{k: *{ref}}}", f"\n  - *{ref}", "'*x'", "x*y", "|\n  *) echo"])
            lines.append(f"k{i}: {value}")
        text = "\n".join(lines) + "\n"
        try:
            aliased = has_alias(text)
        except yaml.YAMLError:
            continue
        checked += 1
        if aliased:
            with_alias += 1
            assert yamldoc._may_alias(text), text
    assert checked > 400 and with_alias > 100, (checked, with_alias)


# -- run_suite.py among a command's words ----------------------------------------------------------------


@pytest.mark.parametrize(
    "word", ["run_suite.py", "test/run_suite.py", "/abs/run_suite.py", "xrun_suite.py", "run_suite.py/", "run_suite.pyc", "/"]
)
def test_the_script_is_found_by_its_base_name(word):
    import posixpath

    from matrix.schedule.commands.run_suite import RunSuiteReader
    from matrix.schedule.model import Origin, StepContext

    context = StepContext(working_dir=".", env={}, origin=Origin(file="w.yml", line=1, job="j"))
    found = list(RunSuiteReader().selections(("python3", word, "--suite", "s"), context))
    assert bool(found) == (posixpath.basename(word) == "run_suite.py")


# -- YAML values: a str scalar read in place -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a: !!str {b: 1}\n",
        "- !!str [1]\n",
        "a: [!!str {b: 1}]\n",
        "a: {b: !!str [1]}\n",
        "a: x\nb: [y, 'z', 1]\n",
        "? !!str [1]\n: v\n",
    ],
)
def test_a_collection_tagged_str_reads_or_fails_as_in_pyyaml(text):
    def outcome(read: Any) -> Any:
        try:
            return ("value", repr(read(text)))
        except (yaml.YAMLError, ConfigError):
            return ("error",)

    assert outcome(lambda t: yamldoc.load_yaml(t, "w.yml")) == outcome(lambda t: yaml.load(t, Loader=LOADER))
