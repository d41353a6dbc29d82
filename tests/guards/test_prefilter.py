"""The finder's shortcuts change no result: line marks found by str.find equal the regex scan's, the lines
split by splitlines equal the parser's, and sparing the skip look at unmarked statements leaves every finding
of the fixture suite and of the benchmark's tree as the full look gives it."""

from __future__ import annotations

import bisect
import random
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from matrix.guards import finder as finder_module
from matrix.guards.model import GuardReport
from matrix.guards.source import _LINE, SourceText
from matrix.registered_suite import audit_tree
from tests.ci_scripts import ci_script

from .conftest import FIXTURE_SUITE

ROOT = Path(__file__).resolve().parents[2]


def bench_module():
    return ci_script("bench_guards")


def regex_marks(text: str, words: list[str], exact: tuple[str, ...]) -> list[int]:
    """The scan as it was before the str.find shortcut: one case-blind regex, then the exact texts."""
    lines = [m.group() for m in _LINE.finditer(text)]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    pattern = "|".join(re.escape(w) for w in dict.fromkeys(words) if w)
    hits = [m.start() for m in re.finditer(pattern, text, re.IGNORECASE)] if pattern else []
    for literal in exact:
        hits += [m.start() for m in re.finditer(re.escape(literal), text)]
    return sorted({bisect.bisect_right(starts, at) for at in hits})


TEXTS = [
    "",
    "x = 1",
    "def test_a(self):\n    self.skipTest('no')\n    return\n",
    "a\r\nb\rSKIP\r\n\r\nreturn\r",
    "if x:\n    return\nreturn  # after\n",
    "skipskip\nSkIpTest\nnothing\n",
    "s = 'form\x0cfeed' \n # skip\x0b here\nreturn\n",  # breaks splitlines() knows but the parser does not
    "name = '\u212aelvin'\nsKip = 1\nreturn\n",  # non-ASCII text: the regex path
    "x = '\u2028'\nskip\n",
    "\u017fkip = 1\nskip\n",  # the long s folds to s only case-blind in a regex
]
WORDS = [["skip"], ["skip", "st", "imp"], ["skip", "k"], ["skip", "\u017fkip"]]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("words", WORDS)
def test_line_marks_and_lines_equal_the_regex_scan(text, words):
    source = SourceText(text)
    source.mark_lines(words, exact=("return\n", "return\r"))
    assert source.lines == [m.group() for m in _LINE.finditer(text)]
    assert source._marked == regex_marks(text, words, ("return\n", "return\r"))


@given(st.text(alphabet="skipSKIP \u017f\u212a\u0130\u0131\u00e9\u4e2d\n\r\x0c\u2028", max_size=80))
def test_non_ascii_text_is_marked_as_the_regex_scan_marks_it(text):
    """The non-ASCII path (a '?' copy for ASCII matches, the regex on non-ASCII lines) equals the one regex."""
    source = SourceText(text)
    source.mark_lines(["skip", "ip"], exact=("return\n",))
    assert source._marked == regex_marks(text, ["skip", "ip"], ("return\n",))


def test_the_marks_check_sees_a_planted_difference(monkeypatch):
    from matrix.guards import source as source_module

    # Plant a scan that finds only the first occurrence of each word: a later marked line is lost.
    def first_only(text: str, word: str, into: list[int]) -> None:
        at = text.find(word)
        if at >= 0:
            into.append(at)

    monkeypatch.setattr(source_module, "_find_all", first_only)
    text = TEXTS[5]
    planted = SourceText(text)
    planted.mark_lines(["skip"])
    assert planted._marked != regex_marks(text, ["skip"], ())


def findings(report: GuardReport) -> list[tuple[str, ...]]:
    return [(f.kind, f.path, str(f.line), f.scope, ",".join(f.runners), f.source, f.message, f.hint) for f in report.findings]


@pytest.fixture(scope="module")
def bench_tree(tmp_path_factory):
    """120 files of the benchmark's tree and each of its hostile files (every 300th from the 7th)."""
    root = tmp_path_factory.mktemp("bench-tree")
    bench = bench_module()
    rng = random.Random(7)
    for index in [*range(120), *(7 + 300 * k for k in range(1, len(bench.HOSTILE)))]:
        (root / f"test_synthetic_{index:04d}.py").write_text(bench.test_file(rng, index), encoding="utf-8")
    return root


@pytest.mark.parametrize("tree", ["fixture", "bench"])
def test_sparing_unmarked_statements_changes_no_finding(tree, bench_tree, runners, monkeypatch):
    root = FIXTURE_SUITE if tree == "fixture" else bench_tree
    spared = audit_tree(root, runners)
    monkeypatch.setattr(finder_module._GuardFinder, "marked_skip", finder_module._GuardFinder.skip_statement)
    monkeypatch.setattr(finder_module._GuardFinder, "spare_unmarked", False)
    full = audit_tree(root, runners)
    assert findings(spared) == findings(full)
    assert spared.findings, "a tree with no findings would compare nothing"


SPARED_EXIT = """
import unittest
from sglang.srt.utils import is_sm100_supported


class TestExit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if cls.__name__ == "TestExit":
            raise ValueError("an unmarked exit: what follows runs only when it is false")
        with open("x") as f:
            data = f.read()
        if not is_sm100_supported():
            raise unittest.SkipTest("sm100")

    def test_a(self):
        pass
"""


@pytest.mark.parametrize("spare", [True, False])
def test_an_unmarked_exit_still_narrows_the_path_of_a_later_skip(spare, monkeypatch):
    """The spared statements still change the path: the skip after `if ...: raise` is reached only when the
    test is false (planted: a walk that skips unmarked statements outright drops that condition)."""
    monkeypatch.setattr(finder_module._GuardFinder, "spare_unmarked", spare)
    analysis = finder_module.analyse_source("t/test_exit.py", SPARED_EXIT)
    (guard,) = [g for g in analysis.guards if "SkipTest" in g.source]
    assert guard.source.startswith('if not (cls.__name__ == "TestExit") and not is_sm100_supported():')


def test_the_equality_check_sees_a_prefilter_that_drops_a_skip(runners, monkeypatch):
    full = audit_tree(FIXTURE_SUITE, runners)
    # Plant the bug the marks guard against: a prefilter that also spares marked statements.
    monkeypatch.setattr(finder_module._GuardFinder, "marked_skip", lambda self, stmt, module_level: None)
    broken = audit_tree(FIXTURE_SUITE, runners)
    assert findings(broken) != findings(full)
