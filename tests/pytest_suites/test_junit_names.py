"""pytest's JUnit names and the way back (`matrix/pytest_suites/junit_names.py`), with pytest's own writer as oracle.

`junit_names` must give what `_pytest/junitxml.py` writes for any node id; `NodeIndex` must find each testcase of a
real run among the tests collected statically, whatever the run's rootdir or `--junit-prefix`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _pytest.junitxml import bin_xml_escape, mangle_test_address
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from matrix.cli.main import main
from matrix.pytest_suites.junit_names import NodeIndex, Offset, junit_names
from matrix.pytest_suites.junit_runs import Observed, RunCase, read_junit

_PART = st.text(alphabet="abcxyz_019.-", min_size=1, max_size=6).filter(lambda p: p not in (".", ".."))
_NAME = st.text(alphabet="abcXYZ_09", min_size=1, max_size=8)
_PARAMS = st.text(max_size=12)  # anything: `::`, `[`, `]`, unicode, control characters


@st.composite
def nodeids(draw: st.DrawFn) -> str:
    path = "/".join(draw(st.lists(_PART, min_size=1, max_size=3))) + draw(st.sampled_from([".py", ""]))
    names = draw(st.lists(_NAME, min_size=0, max_size=3))
    if not names:
        return path
    params = draw(st.one_of(st.none(), _PARAMS))
    return "::".join([path, *names]) + (f"[{params}]" if params is not None else "")


# A shared, loaded machine makes generation look slow; the property itself is cheap.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodeids())
@example("tests/sub/test_x.py::TestA::test_b[a::b-[1]]")
@example("tests/test_u.py::test_v[\\xe9-\\u4e2d]")
@example("tests/test_u.py::test_v[\x07bell]")
@example("tests/test_u.py::test_v[caf\u00e9]")
@example("tests/test_mod.py")
@example("tests/v1.0/test_dots.py::test_d")
def test_the_names_are_pytests_own(nodeid: str) -> None:
    mangled = mangle_test_address(nodeid)
    assert junit_names(nodeid) == (".".join(mangled[:-1]), bin_xml_escape(mangled[-1]))


TESTS = [
    ("tests/test_a.py::test_one", "tests/test_a.py"),
    ("tests/test_a.py::TestK::test_two", "tests/test_a.py"),
    ("tests/test_a.py::test_p[x::y]", "tests/test_a.py"),
    ("tests/sub/test_a.py::test_one", "tests/sub/test_a.py"),
    ("tests/sub/test_b.py::TestK::TestInner::test_deep", "tests/sub/test_b.py"),
    ("tests/test_wide.py::test_w", "tests/test_wide.py"),
]


def case(classname: str, name: str, collector: bool = False) -> RunCase:
    return RunCase(
        classname=classname, name=name, observed=Observed.SKIPPED if collector else Observed.PASSED, collector=collector
    )


@pytest.mark.parametrize(
    ("shift", "offset"),
    [
        (lambda c: c, Offset()),
        (lambda c: c.removeprefix("tests."), Offset(add=("tests",))),  # run with --rootdir tests
        (lambda c: "work.repo." + c, Offset(drop=2)),  # run with --rootdir two folders up
        (lambda c: "lab." + c, Offset(drop=1)),  # --junit-prefix lab
    ],
    ids=["same", "sub-folder", "above", "prefix"],
)
def test_the_offset_most_names_agree_on(shift, offset) -> None:
    index = NodeIndex(TESTS)
    cases = [case(shift(classname), name) for classname, name in map(junit_names, (t for t, _ in TESTS))]
    assert index.offset(cases) == offset
    assert [index.locate(c, offset) for c in cases] == [(t,) for t, _ in TESTS]


def test_collection_records_parametrized_cases_and_strays() -> None:
    index = NodeIndex(TESTS)
    assert index.locate(case("", "tests.sub", collector=True), Offset()) == (
        "tests/sub/test_a.py::test_one",
        "tests/sub/test_b.py::TestK::TestInner::test_deep",
    )
    assert index.locate(case("lab", "tests.test_wide", collector=True), Offset(drop=1)) == ("tests/test_wide.py::test_w",)
    # a test the static reading kept as one (ids it could not read): every case of the run is that test
    assert index.locate(case("tests.test_wide", "test_w[\\u4e2d-3]"), Offset()) == ("tests/test_wide.py::test_w",)
    # a case static collection split knows only its own ids
    assert index.locate(case("tests.test_a", "test_p[other]"), Offset()) == ()
    # read back: a known module, else the file attribute, else up to the first capitalised part
    assert index.node_id(case("tests.test_a.TestNew", "test_n"), Offset()) == (
        "tests/test_a.py::TestNew::test_n",
        "tests/test_a.py",
    )
    stray = RunCase(classname="tests.gen.test_g.TestG", name="test_z", observed=Observed.PASSED, file="tests/gen/test_g.py")
    assert index.node_id(stray, Offset()) == ("tests/gen/test_g.py::TestG::test_z", "tests/gen/test_g.py")
    bare = RunCase(classname="tests.gen.test_g.TestG", name="test_z", observed=Observed.PASSED)
    assert index.node_id(bare, Offset()) == ("tests/gen/test_g.py::TestG::test_z", "tests/gen/test_g.py")


def test_nothing_to_agree_on_is_no_offset() -> None:
    assert NodeIndex(TESTS).offset([case("elsewhere.mod", "test_q")]) == Offset()
    assert NodeIndex([]).offset([]) == Offset()


ODD_IDS = """
import pytest

@pytest.mark.parametrize("v", ["plain", pytest.param("a::b", marks=pytest.mark.skip(reason="off"))])
def test_split(v):
    pass

@pytest.mark.parametrize("v", ["caf\\u00e9", "\\x07", "[x]", "a::b"])
def test_kept_whole(v):
    pass

class TestOuter:
    class TestInner:
        @pytest.mark.parametrize("n", [1, 2])
        def test_inner(self, n):
            pass
"""


def test_a_real_run_of_odd_ids_is_found_whole(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makepyfile(**{"pkg/sub/test_odd": ODD_IDS, "pkg/__init__": "", "pkg/sub/__init__": ""})
    (pytester.path / ".github" / "workflows").mkdir(parents=True)
    (pytester.path / ".github" / "workflows" / "ci.yml").write_text(
        "on: push\njobs:\n  t:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: pytest pkg\n", encoding="utf-8"
    )
    out = pytester.path / "junit.xml"
    pytester.runpytest("pkg", f"--junitxml={out}")
    assert len(read_junit(out).cases) == 8
    capsys.readouterr()  # the nested run's own output
    code = main(["pytest-audit", str(pytester.path), "--junit", f"ubuntu-24.04={out}", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    rows = {r["test"]: (r["observed"], r["join"]) for r in doc["runs"]["tests"]}
    assert rows == {
        "pkg/sub/test_odd.py::test_split[plain]": ("passed", "confirmed"),
        "pkg/sub/test_odd.py::test_split[a::b]": ("skipped", "confirmed"),
        "pkg/sub/test_odd.py::test_kept_whole": ("passed", "confirmed"),
        "pkg/sub/test_odd.py::TestOuter::TestInner::test_inner": ("passed", "confirmed"),
    }
    assert code == 1  # the unconditional skip is a static silent skip and skipped in the one run given
    assert Path(doc["runs"]["inputs"][0]["path"]) == out
