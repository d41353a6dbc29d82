"""Parametrized cases audited one by one where their values are literal, and skip marks imported from other files.

Each construct also runs with its support switched off (monkeypatched away): the finding must then disappear,
which is what the fixture showed before the support existed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.pytest_suites import collect, params
from matrix.pytest_suites.audit import PytestAuditReport

Skipping = Callable[[PytestAuditReport], dict[str, str]]
Audit = Callable[..., PytestAuditReport]

ONE_GPU = (("sm86", "pytest tests/"), ("h100", "pytest tests/"))
CAP = "torch.cuda.get_device_capability()"

PARAM_MARKS = {
    "tests/test_decode.py": f"""
        import pytest
        import torch
        @pytest.mark.parametrize("backend", [
            "fa2",
            pytest.param("trtllm-gen", marks=pytest.mark.skipif({CAP}[0] != 10, reason="sm100 only")),
            pytest.param("cute-dsl", marks=[pytest.mark.slow, pytest.mark.skipif("{CAP}[0] < 10")], id="cute"),
        ])
        def test_decode(backend):
            pass
        """,
}
BODY_GUARD = {
    "tests/test_prefill.py": f"""
        import pytest
        import torch
        @pytest.mark.parametrize("kv_layout", ["NHD", "HND"])
        @pytest.mark.parametrize("head_dim", [64, 128])
        def test_prefill(kv_layout, head_dim):
            if head_dim == 128 and {CAP}[0] < 10:
                pytest.skip("head_dim 128 needs sm100")
        """,
}
TUPLE_IDS = {
    "tests/test_gemm.py": f"""
        import pytest
        import torch
        SHAPES = [(1, "fp8"), (2, "bf16"), pytest.param(3, "fp8", id="odd")]
        @pytest.mark.parametrize(("m", "dtype"), SHAPES, ids=["small", "big", None])
        def test_gemm(m, dtype):
            if dtype == "fp8" and {CAP} < (8, 9):
                pytest.skip("fp8 needs sm89")
        """,
}
RELATIVE_IMPORT = {
    "tests/__init__.py": "",
    "tests/attention/__init__.py": "",
    "tests/attention/utils.py": f"""
        import pytest
        import torch
        requires_sm100 = pytest.mark.skipif({CAP}[0] != 10, reason="sm100 only")
        """,
    "tests/attention/test_mla.py": """
        import pytest
        from .utils import requires_sm100
        @requires_sm100
        def test_mla():
            pass
        @pytest.mark.parametrize("page", [pytest.param(1, marks=requires_sm100), 16])
        def test_paged(page):
            pass
        def test_plain():
            pass
        """,
}
ABSOLUTE_REEXPORT = {
    "tests/__init__.py": "",
    "tests/helpers/__init__.py": "from tests.helpers.arch import skip_unless_blackwell\n",
    "tests/helpers/arch.py": f"""
        import pytest
        import torch
        skip_unless_blackwell = pytest.mark.skipif({CAP} < (10, 0), reason="blackwell")
        """,
    "tests/test_fp4.py": """
        from tests.helpers import skip_unless_blackwell
        pytestmark = [skip_unless_blackwell]
        def test_fp4():
            pass
        """,
    "tests/test_moe.py": """
        from tests import helpers
        class TestMoe:
            @helpers.skip_unless_blackwell
            def test_moe(self):
                pass
        """,
}


def _off_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "read_parametrize", lambda decorators, names, **_: None)


def _off_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "from_imports", lambda tree, path, bases=("",): {})


CASES = {
    "param-marks": (
        PARAM_MARKS,
        {
            "tests/test_decode.py::test_decode[trtllm-gen]": "compute capability",
            "tests/test_decode.py::test_decode[cute]": "compute capability",
        },
        _off_cases,
    ),
    "body-guard": (
        BODY_GUARD,
        {
            "tests/test_prefill.py::test_prefill[128-NHD]": "compute capability",
            "tests/test_prefill.py::test_prefill[128-HND]": "compute capability",
        },
        _off_cases,
    ),
    "relative-import": (
        RELATIVE_IMPORT,
        {
            "tests/attention/test_mla.py::test_mla": "compute capability",
            "tests/attention/test_mla.py::test_paged[1]": "compute capability",
        },
        _off_imports,
    ),
    "absolute-reexport": (
        ABSOLUTE_REEXPORT,
        {"tests/test_fp4.py::test_fp4": "compute capability", "tests/test_moe.py::TestMoe::test_moe": "compute capability"},
        _off_imports,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_case_and_imported_skips_found(case: str, audit: Audit, skipping: Skipping, schedule: Callable[..., str]) -> None:
    files, expected, _ = CASES[case]
    assert skipping(audit(files, schedule(*ONE_GPU))) == expected


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_case_and_imported_skips_need_their_support(
    case: str, audit: Audit, skipping: Skipping, schedule: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    files, expected, switch_off = CASES[case]
    switch_off(monkeypatch)
    assert not set(expected) & set(skipping(audit(files, schedule(*ONE_GPU))))


def test_tuple_argnames_ids_and_module_list(audit: Audit, skipping: Skipping, schedule: Callable[..., str]) -> None:
    # sm86 only: fp8 cases skip there (8, 6) < (8, 9); the explicit ids and the pytest.param id name them.
    report = audit(TUPLE_IDS, schedule(("sm86", "pytest tests/")))
    assert skipping(report) == {
        "tests/test_gemm.py::test_gemm[small]": "compute capability",
        "tests/test_gemm.py::test_gemm[odd]": "compute capability",
    }
    assert report.tests == 3
    assert skipping(audit(TUPLE_IDS, schedule(("h100", "pytest tests/")))) == {}


def test_cases_follow_deselect_and_node_ids(audit: Audit, skipping: Skipping, schedule: Callable[..., str]) -> None:
    one = "tests/test_decode.py::test_decode"
    deselect_one = audit(PARAM_MARKS, schedule(("sm86", f"pytest tests/ --deselect '{one}[trtllm-gen]'")))
    assert set(skipping(deselect_one)) == {f"{one}[cute]"}
    assert skipping(audit(PARAM_MARKS, schedule(("sm86", f"pytest tests/ --deselect {one}")))) == {}
    assert set(skipping(audit(PARAM_MARKS, schedule(("sm86", f"pytest {one}"))))) == {f"{one}[trtllm-gen]", f"{one}[cute]"}


@pytest.mark.parametrize(
    ("decorators", "why"),
    [
        ('@pytest.mark.parametrize("n", list(range(9)))', "not literal"),
        ('@pytest.mark.parametrize("n", [torch.float16, torch.bfloat16])', "not literal"),
        ('@pytest.mark.parametrize("n", [1, 2], ids=str)', "not literal"),
        ('@pytest.mark.parametrize("n", [1, 2], indirect=True)', "not literal"),
        ('@pytest.mark.parametrize("n", [1, 1])', "repeat"),
        (
            '@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9])\n@pytest.mark.parametrize("m", list("abcdefgh"))',
            "not literal",
        ),
        ('@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9])\n@pytest.mark.parametrize("m", "abcdefgh")', "not literal"),
        (
            '@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 8, 9])\n'
            '@pytest.mark.parametrize("m", ["a", "b", "c", "d", "e", "f", "g", "h"])',
            "72 parametrized cases, over the cap of 64",
        ),
    ],
)
def test_cases_not_read_stay_one_item(
    decorators: str, why: str, audit: Audit, skipping: Skipping, schedule: Callable[..., str]
) -> None:
    body = f"    if n == 1 and {CAP}[0] < 10:\n        pytest.skip('sm100')\n"
    files = {"tests/test_n.py": f"import pytest\nimport torch\n{decorators}\ndef test_n(n, m=None):\n{body}"}
    report = audit(files, schedule(*ONE_GPU))
    # The one item's guard is searched over its cases where their values are written out: both cases of `[1, 1]`
    # skip; elsewhere a case with n != 1 runs (or the values are not read, and it stays undetermined).
    expected = {"tests/test_n.py::test_n"} if why == "repeat" else set()
    assert report.tests == 1 and set(skipping(report)) == expected
    notes = [a for a in report.assumptions if a.startswith("tests/test_n.py::test_n: ")]
    # A note where the cases are literal but not split (over the cap, repeating ids); none where they are not literal.
    assert notes == [] if why == "not literal" else any(why in a for a in notes)


def test_cases_only_where_they_differ(audit: Audit, schedule: Callable[..., str]) -> None:
    # No guard reads the parameter and no case has marks: one item, and no note.
    files = {"tests/test_n.py": 'import pytest\n@pytest.mark.parametrize("n", [1, 2])\ndef test_n(n):\n    pass\n'}
    report = audit(files, schedule(*ONE_GPU))
    assert report.tests == 1 and not any("test_n" in a for a in report.assumptions)


def test_the_cap_is_a_parameter() -> None:
    import ast

    from matrix.guards.source import collect_module_names

    tree = ast.parse('import pytest\n@pytest.mark.parametrize("n", [1, 2, 3])\ndef test_n(n):\n    pass\n')
    fn = tree.body[1]
    assert isinstance(fn, ast.FunctionDef)
    names = collect_module_names(tree)
    assert [
        c.id for c in (params.read_parametrize(fn.decorator_list, names) or params.Parametrized(argnames=frozenset())).cases
    ] == ["1", "2", "3"]
    capped = params.read_parametrize(fn.decorator_list, names, cap=2)
    assert capped is not None and capped.cases == () and capped.note == "3 parametrized cases, over the cap of 2"


def test_imported_marks_stop_at_a_cycle(audit: Audit, skipping: Skipping, schedule: Callable[..., str]) -> None:
    files = {
        "tests/__init__.py": "",
        "tests/a.py": "from .b import mark\n",
        "tests/b.py": "from .a import mark\n",
        "tests/test_c.py": "from .a import mark\n@mark\ndef test_c():\n    pass\n",
        "tests/test_up.py": "from ....outside import mark\n@mark\ndef test_up():\n    pass\n",
    }
    report = audit(files, schedule(*ONE_GPU))
    assert report.tests == 2 and skipping(report) == {}
