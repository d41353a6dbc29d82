"""`dumps_indented` writes exactly what `json.dumps(doc, indent=N)` writes, for real reports and generated documents.

Each check is also shown red: a separator off by one space, or one escape gone, and the same comparison finds it.
"""

from __future__ import annotations

import enum
import json
import math
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, find, given, settings
from hypothesis import strategies as st

from matrix.core import jsonio
from matrix.core.finding import Severity, Tool
from matrix.core.jsonio import dumps_indented
from matrix.core.loader import load_runners
from matrix.core.output import sarif_document
from matrix.registered_suite.audit import load_suite_map
from matrix.registered_suite.gate import baseline_document, error_keys, gate, to_json_doc, updated_entries
from matrix.registered_suite.tree import audit_tree

FIXTURE_SUITE = Path(__file__).parents[1] / "guards" / "fixture_suite"


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


def same_as_stdlib(doc: Any, indent: int = 2, allow_nan: bool = True) -> bool:
    """Both write the same text, or both raise the same exception with the same message."""
    try:
        expected: str | BaseException = json.dumps(doc, indent=indent, allow_nan=allow_nan)
    except (TypeError, ValueError) as exc:
        expected = exc
    try:
        got: str | BaseException = dumps_indented(doc, indent=indent, allow_nan=allow_nan)
    except (TypeError, ValueError) as exc:
        got = exc
    if isinstance(expected, BaseException) or isinstance(got, BaseException):
        return type(got) is type(expected) and str(got) == str(expected)
    return got == expected


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The documents the guard audit writes for the fixture suite: the report, SARIF, the baseline."""
    report = audit_tree(
        FIXTURE_SUITE,
        load_runners(),
        suite_map=load_suite_map(None),
        jobs=1,
        cache_dir=tmp_path_factory.mktemp("cache"),
    )
    result = gate(report, show=Severity.INFO)
    assert len(report.findings) > 20  # a real report, every kind's fields
    return {
        "report": to_json_doc(report, result),
        "sarif": sarif_document(result.shown, tool=Tool.GUARDS, prefix="", version="0.1.0"),
        "baseline": baseline_document(updated_entries(error_keys(report.findings), None)),
    }


@pytest.mark.parametrize("name", ["report", "sarif", "baseline"])
def test_real_documents_match_json_dumps(reports: dict[str, Any], name: str) -> None:
    doc = reports[name]
    assert dumps_indented(doc) == json.dumps(doc, indent=2)


# Every value json.dumps accepts, with the keys it converts and the subclasses it writes as their base type.
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    | st.sampled_from([Color.RED, Level.HIGH, "\u2028", "\ud800", '"\\/\b\f\n\r\t', "\x00\x1f\x7f", "é漢😀"])
)
KEYS = st.text() | st.integers() | st.floats() | st.booleans() | st.none() | st.sampled_from([Color.RED, Level.HIGH])
DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(KEYS, children, max_size=5)
        | st.dictionaries(st.text(max_size=4), children, max_size=3).map(OrderedDict)
    ),
    max_leaves=30,
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(doc=DOCUMENTS, indent=st.integers(min_value=0, max_value=4), allow_nan=st.booleans())
@example(doc={"a": [1, [], {}, [[]], {"b": None}], "": ""}, indent=2, allow_nan=True)
@example(doc={True: "bool", 1.5: "float", None: "none", 2: "int"}, indent=2, allow_nan=True)
@example(doc=[math.nan, math.inf, -math.inf], indent=2, allow_nan=False)
def test_generated_documents_match_json_dumps(doc: Any, indent: int, allow_nan: bool) -> None:
    assert same_as_stdlib(doc, indent, allow_nan)


def test_what_json_cannot_write_raises_the_same_error() -> None:
    cycle: list[Any] = [1]
    cycle.append(cycle)
    loop: dict[str, Any] = {}
    loop["self"] = {"inner": loop}
    for doc in ({"x": object()}, [{(1, 2): 3}], {"k": {1, 2}}, cycle, loop, 10**5000):
        assert same_as_stdlib(doc)


def test_a_shared_value_that_is_no_cycle_is_written_twice() -> None:
    shared = {"a": [1, 2]}
    assert same_as_stdlib([shared, shared, {"again": shared}])


# --- the comparisons are shown red on a planted bug ---------------------------------------------------------------


def test_one_extra_space_is_caught_on_a_real_report(reports: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonio, "_KEY_SEPARATOR", ":  ")
    assert dumps_indented(reports["report"]) != json.dumps(reports["report"], indent=2)


def test_one_extra_space_after_an_item_is_caught_on_generated_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonio, "_ITEM_SEPARATOR", ", ")
    found = find(DOCUMENTS, lambda doc: not same_as_stdlib(doc), settings=settings(database=None, max_examples=500))
    assert ",\n" in json.dumps(found, indent=2)  # a container of two items or more


def test_one_escape_left_out_is_caught_on_generated_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    # U+2028 written raw instead of as \u2028: still valid JSON, not what json.dumps writes.
    real = jsonio._escape
    monkeypatch.setattr(jsonio, "_escape", lambda text: real(text).replace("\\u2028", "\u2028"))
    found = find(DOCUMENTS, lambda doc: not same_as_stdlib(doc), settings=settings(database=None, max_examples=2000))
    assert "\\u2028" in json.dumps(found, indent=2)  # the difference is that one character


def test_one_escape_left_out_is_caught_on_a_real_report(reports: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    real = jsonio._escape
    monkeypatch.setattr(jsonio, "_escape", lambda text: real(text).replace("\\u2192", "\u2192"))
    doc = {**reports["report"], "root": "tests \u2192 registered"}  # one arrow, as a path may hold
    assert dumps_indented(doc) != json.dumps(doc, indent=2)
