"""The walker's shortcuts give what the plain rules give: the capital-name search, the job-line index, the
dict fast path of context lookups, and call chains given to records once at the end instead of at each caller."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.files import CI_NAME
from matrix.schedule.github import context as github_context
from matrix.schedule.github import values as github_values
from matrix.schedule.github import walk as github
from matrix.schedule.github import workflow_doc
from matrix.schedule.github.expressions import OneOf, Unknown, expand
from matrix.schedule.load import load_schedule

from .test_github import repo

RUNNERS = load_runners()
NAME_RULE = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")  # the names the schedule lists: the regex CI_NAME is spelled from


@pytest.mark.parametrize(
    "text",
    ["RUN_X_E2E=1", "aRUN_X", "_RUN_X", "RUN_Xb", "ÉRUN_X", "X", "AB", "ABC", "A1_", "1ABC", "$SGLANG_IS_IN_CI", "x.IS_CI.y", ""],
)
def test_the_capital_name_search_is_the_word_rule(text):
    assert CI_NAME.findall(text) == NAME_RULE.findall(text)


def test_the_capital_name_search_is_the_word_rule_on_many_seeded_texts():
    rng = random.Random(11)
    pieces = ["A", "B", "Z", "1", "_", "a", "é", "É", " ", "\n", "$", "{", ".", "-", "=", "ABC", "aBC"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert CI_NAME.findall(text) == NAME_RULE.findall(text), text


LINES = ("jobs:", "  build:", "    steps:", "  test:", "  test: again", "#  lint:", "  lint :", "lint:x", "  a:b:", "  :", "")


@pytest.mark.parametrize("seed", range(40))
def test_the_job_line_index_finds_what_the_scan_finds(seed, tmp_path):
    rng = random.Random(seed)
    lines = tuple(rng.choice(LINES) for _ in range(rng.randint(0, 12)))
    walker = github.Walker(repo=tmp_path, workflows={}, readers=(), runners=RUNNERS)
    workflow = github_context.Workflow(name="w.yml", doc={}, lines=lines)
    for needle in ("jobs:", "build:", "test:", "lint:", ":", "missing:", "steps:", " test: "):
        assert walker.line_of(workflow, needle) == workflow_doc.find_line(lines, needle.strip(), 0), (lines, needle)


class LazyMapping(Mapping[str, Any]):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Any:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def walk_path_as_it_was(value: Any, path: tuple[str, ...], head: str) -> Any:
    for key in path:
        if isinstance(value, Unknown | OneOf):
            return value if isinstance(value, Unknown) else Unknown(text=f"{head}.{'.'.join(path)}")
        if isinstance(value, Mapping):
            if key not in value:
                return None if head != "matrix" else Unknown(text=f"{head}.{'.'.join(path)}")
            value = value[key]
        else:
            return Unknown(text=f"{head}.{'.'.join(path)}")
    return value


CONTEXT = {
    "a": {"b": {"c": 1}, "l": [1, 2]},
    "u": Unknown(text="needs.x"),
    "o": OneOf(values=("p", "q"), why="w"),
    "m": LazyMapping({"k": "v", "n": {"d": True}}),
    "s": "text",
    "none": None,
}


@pytest.mark.parametrize("head", ["inputs", "matrix", "env"])
@pytest.mark.parametrize(
    "path",
    [
        (),
        ("a",),
        ("a", "b", "c"),
        ("a", "b", "x"),
        ("a", "l", "0"),
        ("u", "z"),
        ("o", "z"),
        ("m", "k"),
        ("m", "n", "d"),
        ("m", "x"),
        ("s", "x"),
        ("none", "x"),
        ("zz",),
    ],
)
def test_context_lookups_are_what_they_were(head, path):
    assert github_values.walk_path(CONTEXT, path, head) == walk_path_as_it_was(CONTEXT, path, head)


@pytest.mark.parametrize("text", ["", "plain text", "linux-mi35x-gpu-8", "$HOME ${X}", "{{ not an expression }}", " ${ {x} }"])
def test_text_without_an_expression_is_given_back_as_the_loop_gives_it(text):
    def lookup(path: tuple[str, ...]) -> Any:
        raise AssertionError("nothing to look up")

    assert expand(text, lookup) == (text, ())


NESTED = {
    ".github/workflows/top.yml": (
        "on: push\njobs:\n  first:\n    uses: ./.github/workflows/_mid.yml\n  second:\n    uses: ./.github/workflows/_mid.yml\n"
    ),
    ".github/workflows/_mid.yml": "on: workflow_call\njobs:\n  inner:\n    uses: ./.github/workflows/_leaf.yml\n",
    ".github/workflows/_leaf.yml": (
        "on: workflow_call\njobs:\n  leaf:\n    runs-on: no-such-box\n    steps:\n"
        "      - run: python3 run_suite.py --hw cuda --suite leaf-suite\n"
    ),
}


def test_records_of_a_callee_carry_every_caller_in_order(tmp_path):
    schedule = load_schedule(repo(tmp_path, NESTED), RUNNERS)
    vias = [e.origin.via for e in schedule.entries]
    assert vias == [
        (".github/workflows/_mid.yml:3 job inner", ".github/workflows/top.yml:3 job first"),
        (".github/workflows/_mid.yml:3 job inner", ".github/workflows/top.yml:5 job second"),
    ]
    assert [e.origin.file for e in schedule.entries] == [".github/workflows/_leaf.yml"] * 2
    assert [str(u.origin) for u in schedule.unknown_labels] == [str(e.origin) for e in schedule.entries]
    assert {u.label for u in schedule.unknown_labels} == {"no-such-box"}


def test_an_unknown_label_reached_twice_the_same_way_is_listed_once(tmp_path):
    files = dict(NESTED)
    files[".github/workflows/_mid.yml"] = (
        "on: workflow_call\njobs:\n  inner:\n    uses: ./.github/workflows/_leaf.yml\n"
        "  again:\n    uses: ./.github/workflows/_leaf.yml\n"
    )
    schedule = load_schedule(repo(tmp_path, files), RUNNERS)
    assert len(schedule.entries) == 4
    assert len(schedule.unknown_labels) == 4 == len({str(u.origin) for u in schedule.unknown_labels})
