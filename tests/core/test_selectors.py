from __future__ import annotations

import pytest

from matrix.core.errors import SelectorError
from matrix.core.selectors import Selector, expand_braces, select


@pytest.mark.parametrize(
    ("pattern", "expanded"),
    [
        ("abc", ["abc"]),
        ("a{b,c}d", ["abd", "acd"]),
        ("a{b,c{d,e}}f", ["abf", "acdf", "acef"]),
        ("{x,y}-{1,2}", ["x-1", "x-2", "y-1", "y-2"]),
        ("a{}b", ["ab"]),
    ],
)
def test_brace_expansion(pattern, expanded):
    assert expand_braces(pattern) == expanded


@pytest.mark.parametrize("pattern", ["a{b,c", "a}b", "{{x}"])
def test_unbalanced_braces_are_errors(pattern):
    with pytest.raises(SelectorError):
        expand_braces(pattern)


def test_selector_picks_topk_2_and_4(default_matrix):
    chosen = select(default_matrix.cells, ["draft-trtllm_mha-topk{2,4}-*"])
    assert chosen
    assert {c.topk for c in chosen} == {2, 4}
    assert {c.backend for c in chosen} == {"trtllm_mha"}


def test_exclusion(default_matrix):
    chosen = select(default_matrix.cells, ["draft-* !*-eager !*-fp8kv-*"])
    assert chosen
    assert all(c.mode == "graph" and c.dtype != "fp8kv" for c in chosen)


def test_selectors_intersect(default_matrix):
    chosen = select(default_matrix.cells, ["draft-*", "*-page16-*"])
    assert chosen and all(c.role == "draft" and c.page_size == 16 for c in chosen)


def test_selector_matching_nothing_names_nearest_ids(default_matrix):
    with pytest.raises(SelectorError) as info:
        select(default_matrix.cells, ["draft-trtllm_mha-topk3-page16-hd128-gqa4-bf16-graph"])
    message = str(info.value)
    assert "matches no cell" in message
    assert "nearest ids: draft-trtllm_mha-topk" in message


def test_one_dead_pattern_among_live_ones_is_still_an_error(default_matrix):
    with pytest.raises(SelectorError, match="'draft-cutlass-\\*' matches no cell"):
        select(default_matrix.cells, ["draft-triton-* draft-cutlass-*"])


@pytest.mark.parametrize("text", ["", "   ", "!"])
def test_empty_selectors(text):
    with pytest.raises(SelectorError):
        Selector.parse(text)
