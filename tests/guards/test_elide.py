"""Blanking the bodies that cannot hold a skip changes no verdict: each tricky layout below is audited from the
blanked parse and from the whole parse alike, the layouts that must not be blanked are not, and the benchmark's
tree blanks most test bodies (so the saving is real, not a path never taken)."""

from __future__ import annotations

import ast
import re
import textwrap
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.core.loader import load_runners
from matrix.guards import source as elide_module
from matrix.guards.finder import _EXACT_MARKS, analyse_source, analyse_tree
from matrix.guards.model import FileAnalysis, finding_fields
from matrix.guards.source import SourceText, clean_region, elide, proven
from matrix.registered_suite.audit import AuditSettings, audit_file, load_suite_map

from .test_prefilter import bench_module

HEAD = (
    "import unittest\n"
    "import pytest\n"
    "import torch\n"
    "from sglang.srt.utils import is_sm100_supported\n"
    "from sglang.test.ci.ci_register import register_cuda_ci\n"
    'register_cuda_ci(est_time=60, suite="stage-b-test-1-gpu-large")\n'
)

LAYOUTS = {
    "plain bodies": """
        class TestA(unittest.TestCase):
            def test_one(self):
                x = [1, 2]
                self.assertEqual(sum(x), 3)

            @unittest.skipIf(not is_sm100_supported(), "sm100")
            def test_two(self):
                self.assertTrue(True)
        """,
    "a def line inside a string": '''
        TEMPLATE = """
        def test_fake(self):
            pass
        """
        class TestB(unittest.TestCase):
            def test_real(self):
                if not is_sm100_supported():
                    self.skipTest("sm100")
        ''',
    "a multi-line string with a line at column 0": '''
        class TestC(unittest.TestCase):
            def test_text(self):
                s = """first
        second at column 0
        """
                self.assertTrue(s)

            def test_skips(self):
                if torch.cuda.device_count() < 8:
                    self.skipTest("8 GPUs")
        ''',
    "a bracket left open at column 0": """
        class TestD(unittest.TestCase):
            def test_call(self):
                value = max(1,
        2)
                self.assertEqual(value, 2)

            @unittest.skipUnless(is_sm100_supported(), "sm100")
            def test_guarded(self):
                pass
        """,
    "a backslash continuation ending the body": """
        class TestE(unittest.TestCase):
            def test_sum(self):
                total = 1 + \\
        2

            @unittest.skipIf(torch.cuda.device_count() < 2, "2 GPUs")
            def test_two_gpus(self):
                pass
        """,
    "comments at column 0 inside a body": """
        class TestF(unittest.TestCase):
            def test_comment(self):
                x = 1
        # a comment at column 0 does not end the body
                self.assertEqual(x, 1)
                if not is_sm100_supported():
                    self.skipTest("sm100")
        """,
    "a nested def in a skipping body": """
        class TestG(unittest.TestCase):
            def test_outer(self):
                def helper():
                    return 1
                if not is_sm100_supported():
                    self.skipTest("sm100")
                self.assertEqual(helper(), 1)
        """,
    "an aliased skip the scan does not name": """
        from unittest import (SkipTest  # a comment between the name and its alias
            as NotHere)

        class TestH(unittest.TestCase):
            def test_alias(self):
                if not is_sm100_supported():
                    raise NotHere("sm100")
        """,
    "an early return in CI": """
        from sglang.test.test_utils import is_in_ci

        class TestI(unittest.TestCase):
            def test_ci(self):
                if is_in_ci():
                    return
                self.assertTrue(True)
        """,
    "async and module-level tests": """
        async def test_async_plain():
            x = 1
            assert x

        def test_module_level():
            if not is_sm100_supported():
                import pytest
                pytest.skip("sm100")

        def _helper():
            return is_sm100_supported()

        @unittest.skipUnless(_helper(), "helper")
        class TestJ(unittest.TestCase):
            def test_x(self):
                pass
        """,
    "module-level helpers, named and not": """
        def _only_tests_call_me(x):
            return x * 2

        def _guard_calls_me():
            return _and_me_through_it()

        def _and_me_through_it():
            return is_sm100_supported()

        def _named_in_a_string():
            return torch.cuda.device_count() >= 2

        def _calls_itself(n):
            return _calls_itself(n - 1) if n else is_sm100_supported()

        class TestL(unittest.TestCase):
            @unittest.skipUnless(_guard_calls_me(), "sm100")
            def test_a(self):
                self.assertEqual(_only_tests_call_me(2), 4)

            @pytest.mark.skipif("not _named_in_a_string()", reason="2 GPUs")
            def test_b(self):
                pass
        """,
    "tabs and form feeds": "class TestK(unittest.TestCase):\n    def test_tab(self):\n    \tx = 1\n\n"
    "    def test_ff(self):\n        y = 2\n\x0c        z = 3\n"
    "    @unittest.skipIf(torch.cuda.device_count() < 2, '2 GPUs')\n    def test_z(self):\n    \tpass\n",
}


def _settings() -> AuditSettings:
    return AuditSettings(runners=load_runners(), suite_map=load_suite_map())


def _summary(analysis: FileAnalysis, settings: AuditSettings) -> object:
    guards = [(g.scope, g.kind, g.line, g.source) for g in analysis.guards]
    scopes = [(s.kind, s.nodeid, s.line, s.parent) for s in analysis.scopes]
    registrations = [(r.function, r.suite, r.line) for r in analysis.registrations]
    findings = [finding_fields(f) for f in audit_file(analysis, settings).findings]
    return analysis.syntax_error, guards, scopes, registrations, findings


def _source(name: str) -> str:
    body = LAYOUTS[name]
    return HEAD + (body if "\t" in body else textwrap.dedent(body))


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_blanked_parse_audits_as_the_whole_parse(name: str) -> None:
    text = _source(name)
    settings = _settings()
    whole = analyse_tree("t/test_x.py", text, ast.parse(text))
    assert _summary(analyse_source("t/test_x.py", text), settings) == _summary(whole, settings)


def _blanked(text: str) -> tuple[int, ...]:
    source = SourceText(text)
    source.mark_lines(["skip"], exact=_EXACT_MARKS)
    found = elide(text, source.marked)
    return () if found is None else found.defs


def test_only_the_bodies_without_a_skip_are_blanked() -> None:
    text = _source("plain bodies")
    lines = text.splitlines()
    blanked = [lines[n - 1].strip() for n in _blanked(text)]
    assert blanked == ["def test_one(self):", "def test_two(self):"]
    # A body with a skip keeps its own (a def nested in it is blanked); so do module-level helpers.
    nested = _source("a nested def in a skipping body")
    assert [nested.splitlines()[n - 1].strip() for n in _blanked(nested)] == ["def helper():"]
    module_level = _source("async and module-level tests")
    shown = [module_level.splitlines()[n - 1] for n in _blanked(module_level)]
    assert shown == ["async def test_async_plain():", "    def test_x(self):"]
    # A module-level helper is blanked only when nothing left in the parse names it (through kept helpers too).
    helpers = _source("module-level helpers, named and not")
    shown = [helpers.splitlines()[n - 1] for n in _blanked(helpers)]
    assert shown == ["def _only_tests_call_me(x):", "def _calls_itself(n):", "    def test_a(self):", "    def test_b(self):"]
    string_case = _source("a def line inside a string")
    found = elide(string_case, [])
    assert found is not None and not proven(ast.parse(found.text), found)  # proven() sends it to the whole parse


@pytest.mark.parametrize(
    ("region", "clean"),
    [
        ("    x = 1\n", True),
        ('    s = """a\nb"""\n', True),
        ('    s = """a\n', False),  # the string runs past the region
        ("    s = 'a\\'b'\n", True),
        ("    t = 1 + \\\n", False),  # the next line continues this one
        ("    t = 1 + \\\n    2\n", True),
        ("    # it's a comment\n", True),
        ("    s = 'open\n", False),
    ],
)
def test_a_region_is_clean_only_when_it_ends_outside_strings_and_continuations(region: str, clean: bool) -> None:
    assert clean_region(region) is clean


def _string_end(text: str, at: int, quote: str) -> int | None:
    """Where the string literal opened at `at` ends: a triple-quoted one if it closes, else a one-line one."""
    n = len(text)
    if text.startswith(quote * 3, at):
        k = at + 3
        while k < n:
            if text[k] == "\\":
                k += 2
            elif text.startswith(quote * 3, k):
                return k + 3
            else:
                k += 1
    k = at + 1
    while k < n:
        char = text[k]
        if char == "\\":
            k += 2
        elif char == quote:
            return k + 1
        elif char in "\r\n":
            return None
        else:
            k += 1
    return None


def reference_clean(text: str) -> bool:
    """The rule `clean_region` implements, written as a plain scanner: comments run to the line's end, a backslash
    must start a continuation that the region goes on past, every string closes."""
    k, n = 0, len(text)
    while k < n:
        char = text[k]
        if char == "#":
            ends = [e for e in (text.find("\n", k), text.find("\r", k)) if e >= 0]
            k = min(ends, default=n)
        elif char == "\\":
            after = k + 3 if text.startswith("\r\n", k + 1) else k + 2 if text.startswith("\n", k + 1) else None
            if after is None or after >= n:
                return False
            k = after
        elif char in "\"'":
            end = _string_end(text, k, char)
            if end is None:
                return False
            k = end
        else:
            k += 1
    return True


# No f, r or b: an f-string prefix sends a region to the whole parse on Python 3.12+ before the pattern is tried.
REGION_PIECES = st.sampled_from(['"', "'", '"""', "'''", "#", "\\", "\n", "\r", "\r\n", "a", " ", "x = 1"])


@settings(max_examples=400, deadline=None)
@given(st.lists(REGION_PIECES, max_size=16).map("".join))
def test_the_region_pattern_agrees_with_a_plain_scanner_on_every_python(region: str) -> None:
    """On CPython 3.11.2 the earlier pattern (possessive quantifiers) said a trailing continuation was clean."""
    assert clean_region(region) is reference_clean(region)


def test_the_region_pattern_uses_no_construct_whose_meaning_changed_within_3_11() -> None:
    pattern = elide_module._CLEAN.pattern
    for construct in ("*+", "++", "?+", "}+", "(?>"):
        assert construct not in pattern, construct


@pytest.mark.parametrize(
    "region",
    ["a" * 200_000 + '"', "'a' " * 50_000 + "'", '"""' + "a" * 200_000, "# x\n" * 50_000 + "\\", '"""' + '\\"' * 100_000],
)
def test_a_region_that_is_not_clean_is_rejected_in_linear_time(region: str) -> None:
    started = time.perf_counter()
    assert clean_region(region) is False
    assert time.perf_counter() - started < 1.0


def test_a_syntax_error_is_reported_where_a_skip_could_be_and_not_inside_a_blanked_body() -> None:
    """The one thing blanking gives up: a body with no skip is not parsed, so its syntax error is the test
    run's to report (it fails loudly there); a syntax error anywhere else is still `unparsable`."""
    inside = HEAD + "class TestM(unittest.TestCase):\n    def test_x(self):\n        x = (1 +\n"
    inside += "    def test_y(self):\n        pass\n"
    assert analyse_source("t/test_m.py", inside).syntax_error is None
    marked = inside.replace("x = (1 +", "self.skipTest('no') + (")
    assert analyse_source("t/test_m.py", marked).syntax_error is not None
    outside = HEAD + "class TestM(unittest.TestCase:\n    def test_x(self):\n        pass\n"
    assert analyse_source("t/test_m.py", outside).syntax_error is not None


def test_a_blanked_module_test_function_is_not_stepped_into() -> None:
    text = HEAD + textwrap.dedent(
        """
        def test_flag():
            return True

        @unittest.skipUnless(test_flag(), "odd, but a guard may call it")
        class TestL(unittest.TestCase):
            def test_x(self):
                pass
        """
    )
    blanked = analyse_source("t/test_l.py", text)
    assert "test_flag" not in dict(blanked.names.functions)
    assert "test_flag" in blanked.names.defined


SWALLOW = """
class TestS(unittest.TestCase):
    def test_text(self):
        s = \"\"\"
x = 1
\"\"\"
        self.assertTrue(s)

@unittest.skipIf(not is_sm100_supported(), "sm100")
class TestT(unittest.TestCase):
    def test_t(self):
        self.skipTest("not blanked: it skips")
Y = 1  # \"\"\"
"""


def test_a_region_ending_inside_a_string_is_not_blanked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Planted: call every region clean. The string opened in `test_text` then runs on (as the blanked text reads
    it) to the quotes in the last line's comment, swallowing TestT and its guards: the parse succeeds, no blanked
    def is in the swallowed text so the proof passes, and TestT's findings are lost. The region check keeps them."""
    text = HEAD + SWALLOW
    settings = _settings()
    whole = _summary(analyse_tree("t/test_s.py", text, ast.parse(text)), settings)
    assert _summary(analyse_source("t/test_s.py", text), settings) == whole
    assert any("TestT" in g[0] for g in whole[1])  # type: ignore[index]
    monkeypatch.setattr(elide_module, "_CLEAN", re.compile(r"[\s\S]*"))
    assert _summary(analyse_source("t/test_s.py", text), settings) != whole


def test_the_proof_refuses_a_def_inside_a_string_and_a_body_that_is_not_the_placeholder() -> None:
    text = _source("a def line inside a string")
    found = elide(text, [])
    assert found is not None and not proven(ast.parse(found.text), found)
    plain = _source("plain bodies")
    found = elide(plain, [])
    assert found is not None and proven(ast.parse(found.text), found)
    tampered = found.text.replace(" ...\n", " ...; x = 1\n", 1)
    assert not proven(ast.parse(tampered), found)


def test_the_benchmark_tree_blanks_most_test_bodies() -> None:
    bench = bench_module()
    import random

    rng = random.Random(3)
    texts = [bench.test_file(rng, i) for i in range(20)]
    defs = sum(text.count("    def test_") for text in texts)
    blanked = sum(len(_blanked(text)) for text in texts)
    assert blanked >= defs * 0.4
    for text in texts:  # and each still audits as its whole parse does
        settings = _settings()
        whole = analyse_tree("t/test_b.py", text, ast.parse(text))
        assert _summary(analyse_source("t/test_b.py", text), settings) == _summary(whole, settings)
