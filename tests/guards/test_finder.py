"""Guard finding: every skip pattern lands on the right scope with the right condition."""

from __future__ import annotations

import ast
import textwrap

import pytest

from matrix.guards import finder
from matrix.guards.evaluate import evaluate_guard
from matrix.guards.evaluation import Tri
from matrix.guards.finder import analyse_source
from matrix.guards.model import GuardKind, ScopeKind

T, F, U = Tri.TRUE, Tri.FALSE, Tri.UNKNOWN
K = GuardKind
HEAD = "import unittest, pytest, torch\nfrom sglang.srt.utils import is_sm90_supported, is_sm100_supported, get_device_sm\n"

# snippet -> [(scope relative to the file, guard kind, skips on sm90 (H100), skips on sm100 (B200))]
CASES: dict[str, tuple[str, list[tuple[str, GuardKind, Tri, Tri]]]] = {
    "class-skipIf": (
        """
        @unittest.skipIf(not is_sm100_supported(), "b200")
        class TestA(unittest.TestCase):
            def test_x(self): pass
        """,
        [("::TestA", K.SKIP_IF, T, F)],
    ),
    "method-skipUnless": (
        """
        class TestA(unittest.TestCase):
            @unittest.skipUnless(is_sm90_supported(), "hopper")
            def test_x(self): pass
        """,
        [("::TestA::test_x", K.SKIP_UNLESS, F, T)],
    ),
    "imported-skipIf": (
        """
        from unittest import skipIf
        class TestA(unittest.TestCase):
            @skipIf(get_device_sm() >= 100, "old arch only")
            def test_x(self): pass
        """,
        [("::TestA::test_x", K.SKIP_IF, F, T)],
    ),
    "mark-skipif-string": (
        """
        @pytest.mark.skipif("get_device_sm() < 100", reason="b200")
        def test_f(): pass
        """,
        [("::test_f", K.MARK_SKIPIF, T, F)],
    ),
    "mark-skipif-several-conditions": (
        """
        @pytest.mark.skipif(is_sm90_supported(), is_sm100_supported(), reason="neither")
        def test_f(): pass
        """,
        [("::test_f", K.MARK_SKIPIF, T, T)],
    ),
    "pytestmark-list": (
        """
        pytestmark = [pytest.mark.timeout(5), pytest.mark.skipif(torch.cuda.device_count() < 4, reason="tp4")]
        def test_f(): pass
        """,
        [("", K.MARK_SKIPIF, T, F)],
    ),
    "pytestmark-single-and-class": (
        """
        pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="gpu")
        class TestA:
            pytestmark = pytest.mark.skip(reason="wip")
            def test_x(self): pass
        """,
        [("", K.MARK_SKIPIF, F, F), ("::TestA", K.MARK_SKIP, T, T)],
    ),
    "module-pytest-skip": (
        """
        if not is_sm100_supported():
            pytest.skip("b200 only", allow_module_level=True)
        def test_f(): pass
        """,
        [("", K.PYTEST_SKIP, T, F)],
    ),
    "module-pytest-skip-else-branch": (
        """
        if is_sm100_supported():
            pass
        else:
            pytest.skip("b200 only", allow_module_level=True)
        """,
        [("", K.PYTEST_SKIP, T, F)],
    ),
    "module-skip-without-allow-is-not-a-guard": (
        """
        if not is_sm100_supported():
            pytest.skip("errors at collection instead")
        """,
        [],
    ),
    "module-raise-SkipTest": (
        """
        if get_device_sm() < 90:
            raise unittest.SkipTest("needs sm90+")
        """,
        [("", K.RAISE_SKIPTEST, F, F)],
    ),
    "setUpClass-raise": (
        """
        class TestA(unittest.TestCase):
            @classmethod
            def setUpClass(cls):
                if not is_sm100_supported():
                    raise unittest.SkipTest("b200")
            def test_x(self): pass
        """,
        [("::TestA", K.RAISE_SKIPTEST, T, F)],
    ),
    "setUp-skipTest-nested-if": (
        """
        class TestA(unittest.TestCase):
            def setUp(self):
                if torch.cuda.is_available():
                    if get_device_sm() >= 100:
                        self.skipTest("not on blackwell")
            def test_x(self): pass
        """,
        [("::TestA", K.SKIP_TEST, F, T)],
    ),
    "test-method-skipTest": (
        """
        class TestA(unittest.TestCase):
            def test_x(self):
                cap = torch.cuda.get_device_capability()
                if cap < (10, 0):
                    self.skipTest("sm100+")
        """,
        [("::TestA::test_x", K.SKIP_TEST, T, F)],
    ),
    "early-return-before-skip": (
        """
        class TestA(unittest.TestCase):
            def setUp(self):
                if is_sm90_supported():
                    return
                self.skipTest("hopper only")
            def test_x(self): pass
        """,
        [("::TestA", K.SKIP_TEST, F, T)],
    ),
    "unconditional-skips": (
        """
        class TestA(unittest.TestCase):
            @unittest.skip("flaky")
            def test_x(self): pass
            @pytest.mark.skip
            def test_y(self): pass
            def test_z(self):
                self.skipTest("todo")
        """,
        [("::TestA::test_x", K.SKIP, T, T), ("::TestA::test_y", K.MARK_SKIP, T, T), ("::TestA::test_z", K.SKIP_TEST, T, T)],
    ),
    "importorskip-module-and-function": (
        """
        fi = pytest.importorskip("flashinfer")
        def test_f():
            pytest.importorskip("deep_gemm")
        """,
        [("", K.IMPORTORSKIP, U, U), ("::test_f", K.IMPORTORSKIP, U, U)],
    ),
    "except-ImportError": (
        """
        try:
            import flashinfer
        except ImportError:
            pytest.skip("no flashinfer", allow_module_level=True)
        """,
        [("", K.PYTEST_SKIP, U, U)],
    ),
    "skip-inside-loop-is-undetermined": (
        """
        class TestA(unittest.TestCase):
            def test_x(self):
                for n in range(3):
                    if n > torch.cuda.device_count():
                        self.skipTest("not enough")
        """,
        [("::TestA::test_x", K.SKIP_TEST, U, U)],
    ),
    "decorator-alias": (
        """
        requires_b200 = pytest.mark.skipif(not is_sm100_supported(), reason="b200")
        @requires_b200
        def test_f(): pass
        """,
        [("::test_f", K.MARK_SKIPIF, T, F)],
    ),
    "inherited-class-guard-and-setup": (
        """
        @unittest.skipIf(is_sm90_supported(), "not hopper")
        class Base(unittest.TestCase):
            def setUp(self):
                if get_device_sm() < 90:
                    self.skipTest("old")
            def test_x(self): pass
        class TestChild(Base):
            def test_y(self): pass
        """,
        [
            ("::Base", K.SKIP_IF, T, F),
            ("::Base", K.SKIP_TEST, F, F),
            ("::TestChild", K.SKIP_IF, T, F),
            ("::TestChild", K.SKIP_TEST, F, F),
        ],
    ),
    "helper-methods-are-not-guards": (
        """
        class TestA(unittest.TestCase):
            def _require(self):
                self.skipTest("helper")
            def test_x(self):
                def inner():
                    pytest.skip("nested def")
        """,
        [],
    ),
    "aliased-skip-function": (
        """
        from pytest import skip as bail
        def test_f():
            if not is_sm100_supported():
                bail("b200 only")
        """,
        [("::test_f", K.PYTEST_SKIP, T, F)],
    ),
    "setUpModule": (
        """
        def setUpModule():
            if get_device_sm() < 100:
                raise unittest.SkipTest("sm100+")
        """,
        [("", K.RAISE_SKIPTEST, T, F)],
    ),
    "autouse-fixture": (
        """
        @pytest.fixture(autouse=True)
        def _need_gpu():
            if torch.cuda.device_count() < 2:
                pytest.skip("2 gpus")
        def test_f(): pass
        """,
        [("", K.PYTEST_SKIP, T, F)],
    ),
}


def found(snippet: str, facts_for) -> list[tuple[str, GuardKind, Tri, Tri]]:
    analysis = analyse_source("t/test_s.py", HEAD + textwrap.dedent(snippet))
    assert analysis.syntax_error is None
    return [
        (
            g.scope.removeprefix("t/test_s.py"),
            g.kind,
            evaluate_guard(g, facts_for("sm90"), analysis.names).skips,
            evaluate_guard(g, facts_for("sm100"), analysis.names).skips,
        )
        for g in analysis.guards
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_guard_pattern_is_found_on_its_scope(facts_for, case):
    snippet, expected = CASES[case]
    assert sorted(found(snippet, facts_for)) == sorted(expected)


@pytest.mark.parametrize(
    ("attribute", "case"),
    [("CLASS_SETUP", "setUpClass-raise"), ("CLASS_SETUP", "setUp-skipTest-nested-if"), ("MODULE_SETUP", "setUpModule")],
)
def test_planted_finder_bug_turns_a_case_red(monkeypatch, facts_for, attribute, case):
    monkeypatch.setattr(finder, attribute, frozenset())
    snippet, expected = CASES[case]
    assert sorted(found(snippet, facts_for)) != sorted(expected)


def test_ignoring_early_returns_turns_the_early_return_case_red(monkeypatch, facts_for):
    monkeypatch.setattr(finder._GuardFinder, "exits", lambda self, body: False)
    snippet, expected = CASES["early-return-before-skip"]
    assert sorted(found(snippet, facts_for)) != sorted(expected)


def test_scopes_use_pytest_node_ids_and_parents():
    analysis = analyse_source(
        "a/test_s.py",
        HEAD + "class TestA(unittest.TestCase):\n    def test_x(self): pass\n    def helper(self): pass\ndef test_f(): pass\n",
    )
    assert [(s.kind, s.nodeid, s.parent) for s in analysis.scopes] == [
        (ScopeKind.MODULE, "a/test_s.py", None),
        (ScopeKind.CLASS, "a/test_s.py::TestA", "a/test_s.py"),
        (ScopeKind.FUNCTION, "a/test_s.py::TestA::test_x", "a/test_s.py::TestA"),
        (ScopeKind.FUNCTION, "a/test_s.py::test_f", "a/test_s.py"),
    ]


def test_guard_source_is_the_text_from_the_file():
    analysis = analyse_source(
        "t/test_s.py",
        HEAD + "@unittest.skipIf(\n    not (is_sm90_supported()),\n    'x',\n)\nclass TestA(unittest.TestCase):\n    pass\n",
    )
    (guard,) = analysis.guards
    assert guard.source == "unittest.skipIf(not (is_sm90_supported()), 'x')"
    assert guard.line == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [("class A(:\n    pass\n", "SyntaxError"), ("x = 1\0\n", "null bytes")],
)
def test_unparsable_source_is_reported_not_raised(text, message):
    analysis = analyse_source("t/test_bad.py", text)
    assert analysis.syntax_error is not None
    assert message in analysis.syntax_error
    assert analysis.error_line >= 1


SEGMENT_SOURCE = (
    "x = f(\n    'héllo',  # ünïcode\r\n    g(1),\n)\r"
    "@unittest.skipIf(not (is_sm90_supported()\n    or is_sm120_supported()), 'é')\nclass A: pass\n"
)


def test_source_segments_match_ast_get_source_segment():
    from matrix.guards.source import SourceText

    tree = ast.parse(SEGMENT_SOURCE)
    source = SourceText(SEGMENT_SOURCE)
    nodes = [n for n in ast.walk(tree) if hasattr(n, "end_col_offset")]
    assert len(nodes) > 10
    for node in nodes:
        assert source.segment(node) == ast.get_source_segment(SEGMENT_SOURCE, node)


# --- a factory's return with the call's arguments put in --------------------------------------------------------------


def _reference_substitute(expr: ast.expr, values: dict[str, ast.expr]) -> ast.expr:
    """The plain way: a deep copy with the names replaced, each copied expression pointed at `expr`."""
    import copy

    copied = copy.deepcopy(expr)
    for node in ast.walk(copied):
        if isinstance(node, ast.expr):
            ast.copy_location(node, expr)
    out = finder.Substitute(values).visit(copied)
    assert isinstance(out, ast.expr)
    return out


@pytest.mark.parametrize(
    ("factory", "call"),
    [
        ("def f(major):\n    return unittest.skipUnless(torch.cuda.get_device_capability()[0] == major, 'arch')", "f(9)"),
        ("def f(n, why='gpus'):\n    return unittest.skipIf(torch.cuda.device_count() < n, why + '!')", "f(n=a.b.c)"),
        ("def f(x):\n    return pytest.mark.skipif(not (x and g(x, k=[x, (x,)])), reason=f'{x}')", "f(h(1)[2])"),
        ("def f():\n    return unittest.skipIf(lambda y: y, 'no names to put in')", "f()"),
    ],
)
def test_substitute_matches_a_deep_copy_with_the_names_replaced(factory: str, call: str) -> None:
    """The same tree, locations included, and neither the factory's tree nor the call's is changed."""
    fn_a, fn_b = (ast.parse(factory).body[0] for _ in range(2))
    call_a, call_b = (ast.parse(call, mode="eval").body for _ in range(2))
    assert isinstance(fn_a, ast.FunctionDef) and isinstance(fn_b, ast.FunctionDef)
    assert isinstance(call_a, ast.Call) and isinstance(call_b, ast.Call)
    returned_a, returned_b = fn_a.body[0], fn_b.body[0]
    assert isinstance(returned_a, ast.Return) and isinstance(returned_b, ast.Return)
    assert returned_a.value is not None and returned_b.value is not None
    got = finder.substitute(returned_a.value, fn_a, call_a)
    values = finder.bound_arguments(fn_b, call_b)
    assert values is not None
    want = _reference_substitute(returned_b.value, values)
    assert got is not None
    assert ast.dump(got, include_attributes=True) == ast.dump(want, include_attributes=True)
    assert ast.dump(call_a, include_attributes=True) == ast.dump(call_b, include_attributes=True)
    assert ast.dump(fn_a, include_attributes=True) == ast.dump(fn_b, include_attributes=True)  # the factory untouched


def test_substitute_gives_up_past_its_depth_and_copies_rather_than_shares() -> None:
    deep = "def f(x):\n    return unittest.skipIf(" + "-" * (finder.MAX_SUBSTITUTED_DEPTH + 5) + "x, 'deep')"
    fn = ast.parse(deep).body[0]
    assert isinstance(fn, ast.FunctionDef) and isinstance(fn.body[0], ast.Return) and fn.body[0].value is not None
    assert finder.substitute(fn.body[0].value, fn, ast.parse("f(1)", mode="eval").body) is None  # type: ignore[arg-type]
    shallow = ast.parse("def f(x):\n    return unittest.skipIf(x > 1, 'a')").body[0]
    assert isinstance(shallow, ast.FunctionDef) and isinstance(shallow.body[0], ast.Return)
    returned = shallow.body[0].value
    assert returned is not None
    got = finder.substitute(returned, shallow, ast.parse("f(2)", mode="eval").body)  # type: ignore[arg-type]
    assert isinstance(got, ast.Call) and got is not returned and got.args[0] is not returned.args[0]  # type: ignore[attr-defined]
