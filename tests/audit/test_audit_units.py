"""The pure pieces of the audit: static planning, node-id parsing, selection, classification, accounting."""

from __future__ import annotations

import textwrap

import pytest

from matrix.audit.accounting import Accounts, Observed, PlannedItem, cell_status, observed_phase
from matrix.audit.findings import evaluate
from matrix.audit.items import CellChooser, CellIdIndex, StaticTest, expand_select_args, matrix_tests, strip_params
from matrix.core.errors import SelectorError, UsageError
from matrix.core.expect import expectations
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Expectation, Outcome, SkipPolicy
from matrix.core.report import CellStatus, FindingKind, OutsideResult, Severity
from matrix.core.selectors import select

MATRIX = load_matrix()


@pytest.mark.parametrize(
    ("source", "found"),
    [
        pytest.param(
            "def test_a(matrix_cell): pass\ndef test_b(): pass\n",
            [StaticTest(name="test_a", selects=(), literal=True)],
            id="direct",
        ),
        pytest.param(
            "import pytest\n@pytest.mark.matrix(select='beta-*')\ndef test_a(matrix_cell): pass\n",
            [StaticTest(name="test_a", selects=("beta-*",), literal=True)],
            id="marker",
        ),
        pytest.param(
            """
            import pytest
            from pytest import mark
            pytestmark = [mark.matrix("a-*"), pytest.mark.slow]

            @pytest.mark.matrix(select="*-s1")
            class TestK:
                def test_m(self, matrix_cell): pass
                class TestInner:
                    def test_n(self, *, matrix_cell): pass
            """,
            [
                StaticTest(name="TestK::test_m", selects=("a-*", "*-s1"), literal=True),
                StaticTest(name="TestK::TestInner::test_n", selects=("a-*", "*-s1"), literal=True),
            ],
            id="module-and-class-marks",
        ),
        pytest.param(
            """
            import pytest
            @pytest.fixture(name="kernel")
            def _kernel(matrix_cell): return matrix_cell
            @pytest.fixture
            def case(kernel): return kernel
            def test_a(case): pass
            def test_b(kernel): pass
            def helper(matrix_cell): pass
            class Helper:
                def test_c(self, matrix_cell): pass
            """,
            [StaticTest(name="test_a", selects=(), literal=True), StaticTest(name="test_b", selects=(), literal=True)],
            id="through-fixtures",
        ),
        pytest.param(
            "import pytest\nSEL='a'\n@pytest.mark.matrix(select=SEL)\ndef test_a(matrix_cell): pass\n",
            [StaticTest(name="test_a", selects=(), literal=False)],
            id="not-literal",
        ),
        pytest.param("def test_a(matrix_cell:\n", [], id="syntax-error"),
    ],
)
def test_static_plan_finds_matrix_tests_in_source(source: str, found: list[StaticTest]) -> None:
    assert matrix_tests(textwrap.dedent(source)) == found


def test_static_plan_honours_python_functions_and_classes() -> None:
    source = "def check_a(matrix_cell): pass\nclass SuiteX:\n    def check_b(self, matrix_cell): pass\n"
    found = matrix_tests(source, functions=("check_*",), classes=("Suite",))
    assert [t.name for t in found] == ["check_a", "SuiteX::check_b"]


CELL = "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph"


@pytest.mark.parametrize(
    ("nodeid", "cell"),
    [
        (f"t.py::test_a[{CELL}]", CELL),
        (f"t.py::TestK::test_a[{CELL}-fp32]", CELL),
        (f"t.py::test_a[x-y-{CELL}]", CELL),
        (f"t.py::test_a[1-{CELL}-2]", CELL),
        ("t.py::test_a[draft-trtllm_mha-topk4]", None),
        ("t.py::test_a", None),
        ("t.py", None),
    ],
)
def test_cell_id_index_finds_the_cell_among_other_params(nodeid: str, cell: str | None) -> None:
    assert CellIdIndex(c.id for c in MATRIX.cells).cell_in(nodeid) == cell


def test_test_of_strips_params() -> None:
    assert strip_params(f"a/t.py::K::test_x[{CELL}]") == "a/t.py::K::test_x"


@pytest.mark.parametrize(
    "selector",
    [
        "*",
        "draft-trtllm_mha-*",
        "*-topk{2,4}-* !*-eager",
        f"{CELL} target-*",
        "draft-triton-topk1-page1-hd128-gqa4-bf16-{eager,graph}",
    ],
)
def test_chooser_agrees_with_the_core_selector(selector: str) -> None:
    chooser = CellChooser(MATRIX.cells)
    assert [c.id for c in chooser.in_order(chooser.chosen(selector))] == [c.id for c in select(MATRIX.cells, [selector])]


def test_chooser_raises_the_core_selector_error() -> None:
    with pytest.raises(SelectorError) as core:
        select(MATRIX.cells, ["draft-trtlm_mha-*"])
    with pytest.raises(SelectorError) as ours:
        CellChooser(MATRIX.cells).chosen(f"{CELL} draft-trtlm_mha-*")
    assert str(ours.value) == str(core.value)


def test_select_file_lines_are_alternatives() -> None:
    files = {"s.txt": "a\n# note\n\nb  # why\n", "empty.txt": "# nothing\n"}
    assert expand_select_args(["x", "@s.txt"], files.__getitem__) == ("x", "a b")
    with pytest.raises(UsageError, match="lists no selector"):
        expand_select_args(["@empty.txt"], files.__getitem__)


@pytest.mark.parametrize(
    ("when", "outcome", "xfail", "observed"),
    [
        ("setup", "passed", None, None),
        ("setup", "skipped", None, Observed.SKIPPED),
        ("setup", "skipped", "[NOTRUN] later", Observed.SKIPPED),
        ("setup", "failed", None, Observed.ERROR),
        ("call", "passed", None, Observed.PASSED),
        ("call", "passed", "xpass", Observed.PASSED),
        ("call", "skipped", "known bug", Observed.XFAILED),
        ("call", "failed", None, Observed.FAILED),
        ("teardown", "failed", None, Observed.ERROR),
        ("???", "failed", None, Observed.CRASHED),
    ],
)
def test_observed_phase(when: str, outcome: str, xfail: str | None, observed: Observed | None) -> None:
    assert observed_phase(when, outcome, xfail) == observed


@pytest.mark.parametrize(
    ("expected", "observed", "status"),
    [
        (Outcome.RUN, Observed.SKIPPED, CellStatus.SKIPPED_UNEXPECTED),
        (Outcome.RUN, Observed.XFAILED, CellStatus.SKIPPED_UNEXPECTED),
        (Outcome.SKIP, Observed.SKIPPED, CellStatus.SKIPPED_EXPECTED),
        (Outcome.SKIP, Observed.XFAILED, CellStatus.FAILED),
        (Outcome.SKIP, Observed.PASSED, CellStatus.PASSED),
        (Outcome.RUN, Observed.CRASHED, CellStatus.CRASHED),
        (Outcome.RUN, None, CellStatus.NOT_RUN),
    ],
)
def test_cell_status(expected: Outcome, observed: Observed | None, status: CellStatus) -> None:
    assert cell_status(expected, observed) is status


def _exps() -> dict[str, Expectation]:
    return expectations(MATRIX, load_runners()["4-gpu-b200"], MATRIX.pins)


def test_accounts_worst_attempt_wins_and_every_planned_item_has_one_status() -> None:
    accounts = Accounts()
    exps = _exps()  # once: judging all 242 cells per comprehension step cost 2 s
    ids = [c.id for c in MATRIX.cells if exps[c.id].outcome is Outcome.RUN][:3]
    for cell in ids:
        accounts.plan(PlannedItem(nodeid=f"t.py::test[{cell}]", test="t.py::test", cell_id=cell))
    first, second, _ = (f"t.py::test[{c}]" for c in ids)
    accounts.record(first, "???", "failed", message="worker 'gw0' crashed")  # crashed, then re-run and passed
    for i, when in enumerate(("setup", "call", "teardown")):
        accounts.record(first, when, "passed", duration=0.5, start=1005.0 + i / 2, worker="gw2")
    accounts.phase_passed(second, "setup", 0.25, 1007.5)
    accounts.record(second, "call", "passed")
    accounts.record(second, "teardown", "failed", message="leaked")
    accounts.record("t.py::test_other", "setup", "skipped", skip_reason="outside")
    cells, outside = accounts.results(exps, origin=1000.0)
    assert [c.status for c in cells] == [CellStatus.CRASHED, CellStatus.ERROR, CellStatus.NOT_RUN]
    assert cells[0].message == "2 attempts; worst counted: worker 'gw0' crashed"
    assert (cells[0].duration, cells[0].worker) == (1.5, "gw2")
    assert [c.started for c in cells] == [5.0, 7.5, None]  # from the first phase that began; never-run has none
    assert outside == (OutsideResult(nodeid="t.py::test_other", status="skipped", skip_reason="outside"),)


def test_findings_put_unexpected_skips_first_and_warnings_last() -> None:
    accounts = Accounts()
    exps = _exps()
    run = next(c.id for c in MATRIX.cells if exps[c.id].outcome is Outcome.RUN)
    skip = next(c.id for c in MATRIX.cells if exps[c.id].outcome is Outcome.SKIP)
    for cell, outcome in ((skip, "passed"), (run, "skipped")):
        accounts.plan(PlannedItem(nodeid=f"t.py::test[{cell}]", test="t.py::test", cell_id=cell))
        accounts.record(f"t.py::test[{cell}]", "call", outcome, skip_reason="gone")
    accounts.record("t.py::test_plain", "call", "skipped", skip_reason="x")
    cells, outside = accounts.results(exps, origin=0.0)
    findings = evaluate(cells, outside, SkipPolicy.STRICT)
    assert [(f.kind, f.severity) for f in findings] == [
        (FindingKind.UNEXPECTED_SKIP, Severity.ERROR),
        (FindingKind.UNALLOWED_SKIP, Severity.ERROR),
        (FindingKind.RULE_TOO_STRICT, Severity.WARNING),
    ]
    assert [f.kind for f in evaluate(cells, outside, SkipPolicy.LENIENT)] == [
        FindingKind.UNEXPECTED_SKIP,
        FindingKind.RULE_TOO_STRICT,
    ]


def _xml_1_0_char(code: int) -> bool:
    """The Char production of XML 1.0 (fifth edition), section 2.2."""
    return code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or 0x10000 <= code <= 0x10FFFF


# Every boundary of the Char ranges, with its neighbours.
_EDGES = sorted({c + d for c in (0x0, 0x9, 0xD, 0x20, 0xD7FF, 0xE000, 0xFFFD, 0x10000, 0x10FFFF) for d in (-2, -1, 0, 1, 2)})


def test_xml_safe_escapes_exactly_what_xml_1_0_cannot_carry() -> None:
    from matrix.core.junit import xml_safe

    codes = [c for c in _EDGES if 0 <= c <= 0x10FFFF]
    got = {c: xml_safe(f"a{chr(c)}b") for c in codes}
    escape = {c: f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}" for c in codes}
    assert got == {c: f"a{chr(c) if _xml_1_0_char(c) else escape[c]}b" for c in codes}
