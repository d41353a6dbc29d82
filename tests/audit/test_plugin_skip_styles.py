"""Every way a test can skip, on cells the matrix says must run: each one is an unexpected skip, with xdist and without."""

from __future__ import annotations

import textwrap

import pytest

from .conftest import ALPHA, STRICT, by_cell, literal, report_of, write

HEAD = """
import unittest
import pytest
from matrix.audit.items import run_unittest_case

SKIP = {skip}
"""

# name -> (test module body, a fragment of the skip reason the audit must show)
STYLES: dict[str, tuple[str, str]] = {
    "mark-skipif": (
        """
        @pytest.mark.matrix(select="alpha-*")
        @pytest.mark.skipif(SKIP, reason="needs sm90")
        def test_cell(matrix_cell):
            pass
        """,
        "needs sm90",
    ),
    "pytestmark-skip": (
        """
        pytestmark = [pytest.mark.matrix(select="alpha-*"), pytest.mark.skipif(SKIP, reason="module marked skip")]

        def test_cell(matrix_cell):
            pass
        """,
        "module marked skip",
    ),
    "pytest-skip-in-test": (
        """
        @pytest.mark.matrix(select="alpha-*")
        def test_cell(matrix_cell):
            if SKIP:
                pytest.skip("kernel not built for this arch")
        """,
        "kernel not built for this arch",
    ),
    "pytest-skip-in-fixture": (
        """
        @pytest.fixture
        def kernel(matrix_cell):
            if SKIP:
                pytest.skip("fixture found no kernel")
            return matrix_cell

        @pytest.mark.matrix(select="alpha-*")
        def test_cell(kernel):
            pass
        """,
        "fixture found no kernel",
    ),
    "unittest-SkipTest": (
        """
        @pytest.mark.matrix(select="alpha-*")
        def test_cell(matrix_cell):
            if SKIP:
                raise unittest.SkipTest("raised SkipTest")
        """,
        "raised SkipTest",
    ),
    "self-skipTest": (
        """
        class Kernel(unittest.TestCase):
            __test__ = False

            def check(self):
                if SKIP:
                    self.skipTest("skipTest in a TestCase")
                assert self.matrix_cell.backend == "alpha"

        @pytest.mark.matrix(select="alpha-*")
        def test_cell(matrix_cell):
            run_unittest_case(Kernel, "check", matrix_cell)
        """,
        "skipTest in a TestCase",
    ),
    "unittest-class-skipIf": (
        """
        @unittest.skipIf(SKIP, "class guard says no")
        class Kernel(unittest.TestCase):
            __test__ = False

            def check(self):
                pass

        @pytest.mark.matrix(select="alpha-*")
        def test_cell(matrix_cell):
            run_unittest_case(Kernel, "check", matrix_cell)
        """,
        "Kernel.check: class guard says no",
    ),
    "importorskip-in-test": (
        """
        @pytest.mark.matrix(select="alpha-*")
        def test_cell(matrix_cell):
            pytest.importorskip("no_such_module_xyz" if SKIP else "json")
        """,
        "could not import 'no_such_module_xyz'",
    ),
    "module-level-skip": (
        """
        if SKIP:
            pytest.skip("whole module skipped", allow_module_level=True)

        @pytest.mark.matrix(select="alpha-*")
        def test_cell(matrix_cell):
            pass
        """,
        "module skipped at import: whole module skipped",
    ),
    "module-level-importorskip": (
        """
        pytest.importorskip("no_such_module_xyz" if SKIP else "json")

        class TestKernel:
            @pytest.mark.matrix(select="alpha-*")
            def test_cell(self, matrix_cell):
                pass
        """,
        "module skipped at import: could not import 'no_such_module_xyz'",
    ),
    "xfail-mark": (
        """
        @pytest.mark.matrix(select="alpha-*")
        @pytest.mark.xfail(SKIP, reason="broken on blackwell")
        def test_cell(matrix_cell):
            assert not SKIP
        """,
        "xfail: broken on blackwell",
    ),
    "xfail-run-false": (
        """
        @pytest.mark.matrix(select="alpha-*")
        @pytest.mark.xfail(SKIP, run=False, reason="never run here")
        def test_cell(matrix_cell):
            pass
        """,
        "xfail: [NOTRUN] never run here",
    ),
    "pytest-xfail-call": (
        """
        @pytest.mark.matrix(select="alpha-*")
        def test_cell(matrix_cell):
            if SKIP:
                pytest.xfail("gave up at run time")
        """,
        "xfail: gave up at run time",
    ),
}


def _plant(pytester: pytest.Pytester, style: str, skip: bool) -> None:
    body, _ = STYLES[style]
    write(pytester, "test_style.py", HEAD.format(skip=skip) + textwrap.dedent(body))


def _module(style: str) -> str:
    return "test_style_" + style.replace("-", "_") + ".py"


def _node(style: str, cell: str, module: str = "test_style.py") -> str:
    klass = "TestKernel::" if style == "module-level-importorskip" else ""
    return f"{module}::{klass}test_cell[{cell}]"


def _expected_lines(style: str, module: str) -> list[str]:
    reason = STYLES[style][1]
    return [
        f"UNEXPECTED SKIP {literal(_node(style, cell, module))}: skipped ({literal(reason)}*) but the matrix says it must run (must run: *)"
        for cell in ALPHA
    ]


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.usefixtures("tiny", "b200")
def test_skip_of_a_must_run_cell_fails_the_session(pytester: pytest.Pytester, style: str) -> None:
    _plant(pytester, style, skip=True)
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    # pytest's own record stays honest: the tests count as skipped / xfailed, none as failed.
    assert "failed" not in outcomes
    assert outcomes.get("skipped", 0) + outcomes.get("xfailed", 0) == (1 if style.startswith("module-level") else 2)
    result.stdout.fnmatch_lines([*_expected_lines(style, "test_style.py"), "specmatrix: 2 error finding(s): the session fails*"])
    doc = report_of(pytester)
    assert by_cell(doc) == dict.fromkeys(ALPHA, "skipped-unexpected")
    assert {f["subject"] for f in doc["findings"] if f["kind"] == "unexpected-skip"} == {_node(style, c) for c in ALPHA}


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.usefixtures("tiny", "b200")
def test_every_skip_style_fails_the_session_under_xdist(pytester: pytest.Pytester) -> None:
    """All styles side by side in one `-n 2` run (one nested xdist session instead of one per style): each is
    reported, on the worker that ran it, exactly as without xdist."""
    for style in sorted(STYLES):
        body, _ = STYLES[style]
        write(pytester, _module(style), HEAD.format(skip=True) + textwrap.dedent(body))
    result = pytester.runpytest(*STRICT, "-n", "2", "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes
    module_level = sum(1 for s in STYLES if s.startswith("module-level"))
    assert outcomes.get("skipped", 0) + outcomes.get("xfailed", 0) == 2 * len(STYLES) - module_level
    for style in sorted(STYLES):
        result.stdout.fnmatch_lines(_expected_lines(style, _module(style)), consecutive=False)
    result.stdout.fnmatch_lines([f"specmatrix: {2 * len(STYLES)} error finding(s): the session fails*"])
    doc = report_of(pytester)
    assert {status: n for status, n in doc["counts"].items() if n} == {"skipped-unexpected": 2 * len(STYLES)}
    subjects = {f["subject"] for f in doc["findings"] if f["kind"] == "unexpected-skip"}
    assert subjects == {_node(s, c, _module(s)) for s in STYLES for c in ALPHA}


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.usefixtures("tiny", "b200")
def test_the_same_test_without_the_skip_passes(pytester: pytest.Pytester, style: str) -> None:
    _plant(pytester, style, skip=False)
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert by_cell(report_of(pytester)) == dict.fromkeys(ALPHA, "passed")


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
@pytest.mark.parametrize("xdist", [False, True], ids=["local", "xdist"])
@pytest.mark.usefixtures("tiny", "b200")
def test_a_module_skip_accounts_expected_skips_too(pytester: pytest.Pytester, xdist: bool) -> None:
    write(
        pytester,
        "test_gone.py",
        """
        import pytest
        pytest.skip("no kernels here", allow_module_level=True)

        @pytest.fixture
        def case(matrix_cell):
            return matrix_cell

        def test_direct(matrix_cell):
            pass

        def test_through_fixture(case):
            pass

        def test_not_matrix():
            pass
        """,
    )
    # Under xdist the controller, which collects nothing itself, must plan what its worker never collected: one
    # worker shows that.
    extra = ("-n", "1") if xdist else ()
    result = pytester.runpytest(*STRICT, *extra, "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    doc = report_of(pytester)
    assert doc["planned"] == 8  # two matrix tests x four cells, though none was ever collected
    assert doc["counts"]["skipped-unexpected"] == 4
    assert doc["counts"]["skipped-expected"] == 4
