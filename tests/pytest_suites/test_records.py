"""The caches' record codec: what it writes reads back equal and of the same types, and anything else is refused."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pytest

from matrix.pytest_suites.records import MAX_DEPTH, BadRecord, Codec


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True, kw_only=True)
class Leaf:
    name: str
    weight: int = 0
    ratio: float = 0.5
    colour: Colour = Colour.RED
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class Branch:
    leaves: tuple[Leaf, ...] = ()
    pair: tuple[str, int] | None = None
    tags: frozenset[str] = frozenset()
    table: Mapping[str, tuple[int, ...]] | None = None
    kind: str = ""  # may hold a Colour: a StrEnum member is a str
    child: Branch | Leaf | None = None


CODEC = Codec((Leaf, Branch, Colour))

SAMPLES = [
    Leaf(name="a"),
    Leaf(name="ünï \n\0", weight=-3, ratio=2.0, colour=Colour.BLUE, note=""),
    Branch(),
    Branch(
        leaves=(Leaf(name="x"), Leaf(name="y", weight=1)),
        pair=("p", 2),
        tags=frozenset({"b", "a", "c"}),
        table={"k": (1, 2), "": ()},
        kind=Colour.BLUE,
        child=Branch(child=Leaf(name="deep")),
    ),
]


@pytest.mark.parametrize("value", SAMPLES, ids=range(len(SAMPLES)))
def test_a_record_reads_back_equal_and_of_the_same_types(value: Any) -> None:
    text = json.dumps(CODEC.encode(value), sort_keys=True)
    back = CODEC.decode(json.loads(text), type(value))
    assert back == value
    if isinstance(value, Branch) and value.kind:
        assert back.kind is Colour.BLUE  # a member, as written, not a plain string
    assert json.dumps(CODEC.encode(back), sort_keys=True) == text


def test_a_frozenset_is_written_in_one_order() -> None:
    texts = {json.dumps(CODEC.encode(frozenset(order))) for order in (["a", "b", "c"], ["c", "b", "a"], ["b", "c", "a"])}
    assert len(texts) == 1


@pytest.mark.parametrize(
    "value",
    [[1, 2], {"a": 1}.keys(), float("nan"), object(), Leaf, {1, 2}],
    ids=["list", "keys", "nan", "object", "class", "set"],
)
def test_what_it_cannot_write_is_a_type_error(value: Any) -> None:
    with pytest.raises(TypeError):
        CODEC.encode(Branch(pair=value))


def test_a_class_it_does_not_know_is_not_written() -> None:
    @dataclass(frozen=True)
    class Leaf:  # same name, another class
        name: str

    with pytest.raises(TypeError):
        CODEC.encode(Leaf(name="x"))


def _leaf(**fields: Any) -> dict[str, Any]:
    base = {"name": "a", "weight": 0, "ratio": 0.5, "colour": {"n": "Colour", "v": "red"}, "note": None}
    return {"r": "Leaf", "v": {**base, **fields}}


@pytest.mark.parametrize(
    "raw",
    [
        _leaf(weight="1"),
        _leaf(weight=True),
        _leaf(name=None),
        _leaf(note=3),
        _leaf(colour={"n": "Colour", "v": "green"}),
        _leaf(colour={"n": "Shade", "v": "red"}),
        _leaf(colour="red"),
        _leaf(ratio=float("inf")),
        {"r": "Leaf", "v": {"name": "a"}},
        {"r": "Leaf", "v": {"name": "a", "weight": 0, "ratio": 0.5, "colour": {"n": "Colour", "v": "red"}, "note": None, "x": 1}},
        {"r": "Tree", "v": {}},
        {"r": "Leaf", "v": []},
        {"x": 1},
        {"r": "Branch", "v": {"leaves": [_leaf()], "pair": ["p"], "tags": {"f": []}, "table": None, "kind": "", "child": None}},
        {"r": "Branch", "v": {"leaves": [1], "pair": None, "tags": {"f": []}, "table": None, "kind": "", "child": None}},
        {"r": "Branch", "v": {"leaves": [], "pair": None, "tags": {"f": [1]}, "table": None, "kind": "", "child": None}},
        {"r": "Branch", "v": {"leaves": [], "pair": None, "tags": {"f": []}, "table": {"d": [["k"]]}, "kind": "", "child": None}},
        {"r": "Branch", "v": {"leaves": [], "pair": None, "tags": [], "table": None, "kind": "", "child": None}},
        {"r": "Branch", "v": {"leaves": [], "pair": None, "tags": {"f": []}, "table": None, "kind": "", "child": 5}},
    ],
)
def test_a_value_that_does_not_fit_its_annotation_is_refused(raw: Any) -> None:
    with pytest.raises(BadRecord):
        CODEC.decode(raw, type_for(raw))


def type_for(raw: Any) -> type:
    return Branch if isinstance(raw, dict) and raw.get("r") == "Branch" else Leaf


def test_nesting_is_bounded() -> None:
    raw: Any = {"r": "Leaf", "v": {}}
    for _ in range(MAX_DEPTH + 5):
        raw = {"r": "Branch", "v": {"leaves": [], "pair": None, "tags": {"f": []}, "table": None, "kind": "", "child": raw}}
    with pytest.raises(BadRecord):
        CODEC.decode(raw, Branch)
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(BadRecord):
        CODEC.decode(deep)
