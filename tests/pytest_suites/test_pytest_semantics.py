"""pytest's configuration, selection and collection rules as pytest-audit reads them, one construct per case.

Each case is a small checkout whose test files skip unconditionally, so every test CI runs is a `disabled-by-skip`
finding: the set of findings is the set of tests pytest would run. The expected sets were checked against
pytest 9 itself (the differential test in test_pytest_oracle.py runs the same kind of checkout through it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport
from tests.pytest_suites.test_pytest_oracle import Case, real_pytest
from tests.pytest_suites.test_pytest_oracle import _write as write

Audit = Callable[..., PytestAuditReport]
OFF = "import pytest\n\npytestmark = pytest.mark.skip(reason='off')\n\n"


def _skipping(report: PytestAuditReport) -> set[str]:
    """The tests CI runs that skip there, deliberately or not."""
    kinds = (GuardFindingKind.SILENT_SKIP, GuardFindingKind.DISABLED_BY_SKIP)
    return {f.finding.scope for k in kinds for f in report.of_kind(k)}


def _entry(command: str, env: Mapping[str, str] | None = None, labels: str = "1-gpu-h100") -> str:
    table = "".join(f"env = {{ {k} = {v!r} }}\n" for k, v in (env or {}).items())
    return f'[[entry]]\njob = "j"\nlabels = ["{labels}"]\npytest = {command!r}\n{table}'


TWO_FILES = {
    "tests/test_a.py": OFF + "def test_fast():\n    pass\n\n\n@pytest.mark.gpu\ndef test_gpu():\n    pass\n",
    "tests/test_ab.py": OFF + "def test_other():\n    pass\n",
    "tests/slow/test_s.py": OFF + "def test_s():\n    pass\n",
}
ALL = {"tests/test_a.py::test_fast", "tests/test_a.py::test_gpu", "tests/test_ab.py::test_other", "tests/slow/test_s.py::test_s"}


CONFIGURATION_CASES = [
        pytest.param({}, "pytest tests", {}, ALL, id="baseline"),
        pytest.param(
            {"pytest.ini": '[pytest]\naddopts = -m "not gpu"\n'}, "pytest tests", {}, ALL - {"tests/test_a.py::test_gpu"},
            id="addopts-markexpr",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = --ignore=tests/slow\n"}, "pytest tests", {}, ALL - {"tests/slow/test_s.py::test_s"},
            id="addopts-ignore",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = --deselect tests/test_a.py::test_fast\n"}, "pytest tests", {},
            ALL - {"tests/test_a.py::test_fast"}, id="addopts-deselect",
        ),
        pytest.param(
            {}, "pytest tests", {"PYTEST_ADDOPTS": "-m 'not gpu'"}, ALL - {"tests/test_a.py::test_gpu"}, id="pytest-addopts-env",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = -m gpu\n"}, "pytest tests -m 'not gpu'", {}, ALL - {"tests/test_a.py::test_gpu"},
            id="command-line-after-addopts",
        ),
        pytest.param({}, "pytest tests --ignore-glob=tests/slow/*", {}, ALL - {"tests/slow/test_s.py::test_s"}, id="ignore-glob"),
        pytest.param(
            {}, "pytest tests --deselect tests/test_a", {}, {"tests/slow/test_s.py::test_s"}, id="deselect-is-a-prefix",
        ),
        pytest.param({}, "pytest tests -k fast -k other", {}, {"tests/test_ab.py::test_other"}, id="last-k-wins"),
        pytest.param({}, "pytest tests --collect-only", {}, set(), id="collect-only"),
        pytest.param({}, "pytest tests --co", {}, set(), id="co"),
        pytest.param({}, "pytest tests --setup-plan", {}, set(), id="setup-plan"),
        pytest.param({}, "pytest tests --fixtures", {}, set(), id="fixtures"),
        pytest.param({}, "pytest --version", {}, set(), id="version"),
        pytest.param({}, "pytest -h", {}, set(), id="help"),
        pytest.param(
            {"pytest.ini": "[pytest]\nnorecursedirs = tests/slow\n"}, "pytest tests", {}, ALL - {"tests/slow/test_s.py::test_s"},
            id="norecursedirs-path",
        ),
        pytest.param(
            {"conftest.py": 'collect_ignore = ["tests/test_ab.py"]\n'}, "pytest tests", {}, ALL - {"tests/test_ab.py::test_other"},
            id="collect-ignore",
        ),
        pytest.param(
            {"tests/conftest.py": 'collect_ignore_glob = ["slow/*"]\n'}, "pytest tests", {}, ALL - {"tests/slow/test_s.py::test_s"},
            id="collect-ignore-glob",
        ),
        pytest.param(
            {"pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests/slow"]\n', "pytest.ini": ""}, "pytest", {}, ALL,
            id="empty-pytest-ini-wins",
        ),
        pytest.param(
            {"tox.ini": "[pytest]\naddopts = -k fast\n", "setup.cfg": "[tool:pytest]\naddopts = -k other\n"}, "pytest tests", {},
            {"tests/test_a.py::test_fast"}, id="tox-before-setup-cfg",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\ntestpaths = tests/*\n"}, "pytest", {}, {"tests/slow/test_s.py::test_s"} | ALL,
            id="testpaths-glob",
        ),
        pytest.param(
            {"pytest.ini": "[pytest]\ntestpaths = tests/sl*\n"}, "pytest", {}, {"tests/slow/test_s.py::test_s"},
            id="testpaths-glob-narrow",
        ),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "command", "env", "runs"), CONFIGURATION_CASES)
def test_configuration_and_selection(
    audit: Audit, tmp_path: Path, extra: dict[str, str], command: str, env: dict[str, str], runs: set[str]
) -> None:
    plan = _entry(command, env)
    report = audit({**TWO_FILES, **extra}, plan)
    assert _skipping(report) == runs


@pytest.mark.parametrize(("extra", "command", "env", "runs"), CONFIGURATION_CASES)
def test_pytest_itself_runs_the_expected_tests(
    tmp_path: Path, oracle_stub: Path, extra: dict[str, str], command: str, env: dict[str, str], runs: set[str]
) -> None:
    """The expected sets above are pytest's: the same checkout and command through pytest 9 itself."""
    root = tmp_path / "repo"
    write(root, {**TWO_FILES, **extra})
    assert set(real_pytest(root, oracle_stub, Case(command=command, env=env))) == runs


def test_a_listing_command_is_named_in_the_report(audit: Audit) -> None:
    # On the command line the schedule reader already leaves such a command out; through the job's
    # PYTEST_ADDOPTS only pytest's own option parsing sees it.
    report = audit(TWO_FILES, _entry("pytest tests", env={"PYTEST_ADDOPTS": "--collect-only"}))
    assert any("--collect-only: pytest runs no test" in a for a in report.assumptions)


COLLECTION_CASES = [
        pytest.param(OFF + "__test__ = False\n\ndef test_a():\n    pass\n", set(), 0, id="module-dunder-test"),
        pytest.param(
            OFF + "class TestOff:\n    __test__ = False\n\n    def test_a(self):\n        pass\n\n\ndef test_b():\n    pass\n",
            {"t/test_m.py::test_b"}, 1, id="class-dunder-test",
        ),
        pytest.param(
            OFF + "class Base:\n    def test_inherited(self):\n        pass\n\n\n"
            "@pytest.mark.skipif(True, reason='x')\nclass TestChild(Base):\n    pass\n",
            {"t/test_m.py::TestChild::test_inherited"}, 1, id="inherited-from-a-non-test-base",
        ),
        pytest.param(
            OFF + "class TestOuter:\n    class TestInner:\n        def test_deep(self):\n            pass\n",
            {"t/test_m.py::TestOuter::TestInner::test_deep"}, 1, id="nested-classes",
        ),
        pytest.param(
            OFF + "from unittest import TestCase as Base\n\n\nclass Checks(Base):\n    def test_unit(self):\n        pass\n",
            {"t/test_m.py::Checks::test_unit"}, 1, id="testcase-under-another-name",
        ),
        pytest.param(
            OFF + "import unittest\n\n\nclass Shared(unittest.TestCase):\n    pass\n\n\n"
            "class Checks(Shared):\n    def test_unit(self):\n        pass\n",
            {"t/test_m.py::Checks::test_unit"}, 1, id="testcase-through-a-local-base",
        ),
        pytest.param(
            OFF + "class TestInit:\n    def __init__(self):\n        pass\n\n    def test_x(self):\n        pass\n", set(), 0,
            id="class-with-init",
        ),
        pytest.param(
            OFF + "def test_x():\n    pass\n\n\ntest_x = None\n", set(), 0, id="rebound-name",
        ),
]  # fmt: skip


@pytest.mark.parametrize(("source", "runs", "tests"), COLLECTION_CASES)
def test_collection_rules(audit: Audit, source: str, runs: set[str], tests: int) -> None:
    report = audit({"t/test_m.py": source}, _entry("pytest t"))
    assert report.tests == tests
    assert _skipping(report) == runs


@pytest.mark.parametrize(("source", "runs", "tests"), COLLECTION_CASES)
def test_pytest_itself_collects_the_expected_tests(
    tmp_path: Path, oracle_stub: Path, source: str, runs: set[str], tests: int
) -> None:
    root = tmp_path / "repo"
    write(root, {"t/test_m.py": source})
    assert set(real_pytest(root, oracle_stub, Case(command="pytest t"))) == runs


MARKED = "import pytest\n\n"
MARKER_CASES = [
        pytest.param("slow = pytest.mark.slow\n\n\n@slow\ndef test_w():\n    pass\n", id="alias"),
        pytest.param("def test_w():\n    pass\n\n\ntest_w = pytest.mark.slow(test_w)\n", id="applied-by-call"),
        pytest.param(
            "class Marked:\n    pytestmark = pytest.mark.slow\n\n\nclass TestSub(Marked):\n    def test_w(self):\n        pass\n",
            id="class-pytestmark-inherited",
        ),
        pytest.param("MARKS = [pytest.mark.slow]\npytestmark = MARKS\n\n\ndef test_w():\n    pass\n", id="pytestmark-name"),
]  # fmt: skip


@pytest.mark.parametrize("source", MARKER_CASES)
def test_pytest_itself_deselects_the_marked_test(tmp_path: Path, oracle_stub: Path, source: str) -> None:
    root = tmp_path / "repo"
    write(root, {"t/test_m.py": MARKED + source})
    assert real_pytest(root, oracle_stub, Case(command="pytest t")), "the test runs without -m"
    assert real_pytest(root, oracle_stub, Case(command="pytest t -m 'not slow'")) == {}


@pytest.mark.parametrize("source", MARKER_CASES)
def test_marker_forms_seen_by_m(audit: Audit, source: str) -> None:
    """`-m "not slow"` deselects the test: the one command that collects its file leaves it out, so it never runs
    (the test, and its file, whose only test it is)."""
    report = audit({"t/test_m.py": MARKED + source}, _entry("pytest t -m 'not slow'"))
    assert report.scheduled_tests == 0
    never = {f.finding.scope: f.finding.message for f in report.of_kind(GuardFindingKind.NEVER_RUNS)}
    (test,) = [t for t in never if "::" in t]
    assert set(never) == {"t/test_m.py", test} and "-m 'not slow'" in never[test]
    assert not report.of_kind(GuardFindingKind.UNSCHEDULED)


def test_a_definition_under_a_condition_is_undetermined(audit: Audit) -> None:
    source = "import os\n\nif os.environ.get('FEATURE'):\n\n    def test_x():\n        pass\n"
    report = audit({"t/test_m.py": source}, _entry("pytest t"))
    assert report.undetermined == 1 and not report.findings


def test_a_guardless_test_runs_on_a_runner_no_profile_knows() -> None:
    """An entry whose labels resolve to no profile: a test with no guard runs there (`all([])` must not read as
    "skips", nor as "undetermined")."""
    from matrix.core.runner_files import load_runners
    from matrix.pytest_suites.audit import audit_suite
    from matrix.pytest_suites.collect import TestFile, TestItem
    from matrix.pytest_suites.packs import builtin_packs
    from matrix.schedule.model import Origin, PytestSelection, Schedule, ScheduleEntry

    entry = ScheduleEntry(
        selection=PytestSelection(paths=("t",)),
        labels=("linux.unknown.gpu",),
        profiles=(),
        origin=Origin(file="ci.yml", line=3, job="j"),
    )
    item = TestItem(nodeid="t/test_m.py::test_x", path="t/test_m.py", line=1, markers=frozenset(), guards=())
    files = [TestFile(path="t/test_m.py", tests=(item,))]
    report = audit_suite("r", files, Schedule(entries=(entry,)), profiles=load_runners(), packs=builtin_packs())
    assert report.undetermined == 0 and report.scheduled_tests == 1
    assert not report.findings


def _cli(tmp_path: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from matrix.cli.main import main

    plan = tmp_path / "plan.toml"
    plan.write_text(_entry("pytest tests"), encoding="utf-8")
    code = main(["pytest-audit", str(repo), "--schedule-file", str(plan)])
    return code, capsys.readouterr().err


SECRET = "root-secret-first-line:x:0:0"


@pytest.mark.parametrize("name", ["pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"])
def test_a_configuration_symlinked_outside_the_tree_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    outside = tmp_path / "passwd"
    outside.write_text(SECRET + "\nsecond:line\n", encoding="utf-8")
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    os.symlink(outside, repo / name)
    code, err = _cli(tmp_path, repo, capsys)
    assert code == 2
    assert SECRET not in err and "root-secret" not in err
    assert name in err and "outside the audited tree" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\nrootsecret words on a line\n"),
        ("setup.cfg", f"[pytest]\naddopts = {SECRET}\n"),
        ("pyproject.toml", '[tool]\npytest = "x"\n'),
        ("pyproject.toml", f"[tool.pytest.ini_options]\naddopts = {SECRET}\n"),
    ],
)
def test_a_configuration_pytest_cannot_read_is_one_line_without_its_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    pass\n", encoding="utf-8")
    (repo / name).write_text(text, encoding="utf-8")
    code, err = _cli(tmp_path, repo, capsys)
    assert code == 2
    assert "root-secret" not in err and "rootsecret" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and name in err


def test_symlinked_sources_outside_the_tree_are_not_followed(tmp_path: Path, audit: Audit) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "marks.py").write_text(
        "import pytest\n\nneeds = pytest.mark.skipif(True, reason='LEAKED-REASON')\n", encoding="utf-8"
    )
    (outside / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _off():\n    pytest.skip('LEAKED-CONFTEST')\n", encoding="utf-8"
    )
    (outside / "test_far.py").write_text("def test_far():\n    assert 'LEAKED-TEST'\n", encoding="utf-8")
    repo = tmp_path / "repo"
    (repo / "tests" / "common").mkdir(parents=True)
    os.symlink(outside / "marks.py", repo / "tests" / "common" / "marks.py")
    os.symlink(outside / "conftest.py", repo / "tests" / "conftest.py")
    os.symlink(outside / "test_far.py", repo / "tests" / "test_far.py")
    files = {"tests/test_near.py": "from common.marks import needs\n\n\n@needs\ndef test_near():\n    pass\n"}
    report = audit(files, _entry("pytest tests"))
    shown = repr(report)
    assert "LEAKED" not in shown
    # The conftest is not read, so no test under it is certain to run; the linked test file is named, not read.
    assert report.undetermined == 1
    unparsable = {f.finding.scope: f.finding.message + f.finding.detail for f in report.of_kind(GuardFindingKind.UNPARSABLE)}
    assert "outside the audited tree" in unparsable["tests/test_far.py"]


@pytest.mark.parametrize(
    ("files", "runs"),
    [
        pytest.param(
            {
                "tests/conftest.py": "\ufeffimport pytest\n\n\n@pytest.fixture(autouse=True)\ndef _off():\n    pytest.skip('off')\n",
                "tests/test_a.py": "def test_a():\n    pass\n",
            },
            {"tests/test_a.py::test_a"},
            id="bom-conftest",
        ),
        pytest.param(
            {"tests/test_a.py": "\ufeff" + OFF + "def test_a():\n    pass\n"}, {"tests/test_a.py::test_a"}, id="bom-test-file"
        ),
    ],
)
def test_sources_are_decoded_as_python_decodes_them(audit: Audit, files: dict[str, str], runs: set[str]) -> None:
    report = audit(files, _entry("pytest tests"))
    assert _skipping(report) == runs
    assert not report.of_kind(GuardFindingKind.UNPARSABLE)


def test_a_latin1_source_with_its_coding_line_is_read(tmp_path: Path, audit: Audit) -> None:
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    text = "# -*- coding: latin-1 -*-\n" + OFF + "def test_a():\n    assert 'caf\xe9'\n"
    (repo / "tests" / "test_a.py").write_bytes(text.encode("latin-1"))
    report = audit({}, _entry("pytest tests"))
    assert _skipping(report) == {"tests/test_a.py::test_a"}


def test_a_decorator_not_read_leaves_m_undecided(audit: Audit) -> None:
    """An imported decorator may add the marker `-m` asks about: the test is neither certainly run nor dropped."""
    files = {
        "t/helpers.py": "def wrapped(function):\n    return function\n",
        "t/test_m.py": "from helpers import wrapped\n\n\n@wrapped\ndef test_w():\n    pass\n\n\ndef test_plain():\n    pass\n",
    }
    report = audit(files, _entry("pytest t -m 'not gpu'"))
    assert report.scheduled_tests == 2 and report.undetermined == 1  # test_plain runs; test_w may carry `gpu`


def test_a_file_named_by_ci_outside_testpaths_is_audited(audit: Audit) -> None:
    files = {
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
        "tests/test_a.py": OFF + "def test_a():\n    pass\n",
        "extra/test_far.py": OFF + "def test_far():\n    pass\n",
    }
    report = audit(files, _entry("pytest extra/test_far.py"))
    assert _skipping(report) == {"extra/test_far.py::test_far"}


def test_a_test_function_imported_into_a_test_module_is_a_test(audit: Audit, tmp_path: Path, oracle_stub: Path) -> None:
    files = {
        "t/shared.py": "def test_shared():\n    pass\n",
        "t/test_m.py": "from shared import test_shared as test_again\n\n\ndef test_own():\n    pass\n",
    }
    assert set(real_pytest(_written(tmp_path / "real", files), oracle_stub, Case(command="pytest t"))) == {
        "t/test_m.py::test_again",
        "t/test_m.py::test_own",
    }
    report = audit(files, _entry("pytest t"))
    # shared.py is a file of the tree and the function carries nothing of its own there: judged where it is collected.
    assert report.tests == 2 and report.undetermined == 0


def test_a_conftest_above_the_rootdir_pytest_uses_is_not_applied_with_certainty(
    audit: Audit, tmp_path: Path, oracle_stub: Path
) -> None:
    """No configuration file: run from tests/, pytest's rootdir (and confcutdir) is tests/, the root conftest unloaded."""
    files = {
        "conftest.py": "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _off():\n    pytest.skip('off')\n",
        "tests/test_a.py": "def test_a():\n    pass\n",
    }
    real = real_pytest(_written(tmp_path / "real", files), oracle_stub, Case(command="pytest", working_dir="tests"))
    assert real == {"tests/test_a.py::test_a": "runs"}
    plan = '[[entry]]\njob = "j"\nlabels = ["1-gpu-h100"]\npytest = "pytest"\nworking_dir = "tests"\n'
    report = audit(files, plan)
    assert not report.of_kind(GuardFindingKind.SILENT_SKIP) and report.undetermined == 1


def _written(root: Path, files: dict[str, str]) -> Path:
    write(root, files)
    return root


HOOK_TESTS = "import pytest\n\n\n@pytest.mark.{marker}\ndef test_marked():\n    pass\n\n\ndef test_plain():\n    pass\n"
HOOKS = {
    # pytest's documented pattern ("Control skipping of tests according to command line option").
    "runslow": (
        "slow",
        "import pytest\n\n\ndef pytest_addoption(parser):\n    parser.addoption('--runslow', action='store_true')\n\n\n"
        "def pytest_collection_modifyitems(config, items):\n    if config.getoption('--runslow'):\n        return\n"
        "    skip_slow = pytest.mark.skip(reason='needs --runslow')\n    for item in items:\n"
        "        if 'slow' in item.keywords:\n            item.add_marker(skip_slow)\n",
    ),
    "blackwell": (
        "blackwell",
        "import pytest\nimport torch\n\n\ndef pytest_collection_modifyitems(config, items):\n"
        "    cc = torch.cuda.get_device_capability()\n    skip_new = pytest.mark.skip(reason='needs sm100')\n"
        "    for item in items:\n        if 'blackwell' in item.keywords and cc < (10, 0):\n            item.add_marker(skip_new)\n",
    ),
    "gpu-early-return": (
        "gpu",
        "import pytest\nimport torch\n\n\ndef pytest_collection_modifyitems(config, items):\n"
        "    if torch.cuda.is_available():\n        return\n    for item in items:\n"
        "        if 'gpu' in item.keywords:\n            item.add_marker(pytest.mark.skip(reason='no GPU'))\n",
    ),
    "made-by-a-helper": (
        "gpu",
        "import pytest\n\n\ndef make_mark():\n    return pytest.mark.skip(reason='made elsewhere')\n\n\n"
        "def pytest_collection_modifyitems(config, items):\n    for item in items:\n"
        "        if 'gpu' in item.keywords:\n            item.add_marker(make_mark())\n",
    ),
    "every-test": (
        "unused",
        "import pytest\nimport torch\n\n\ndef pytest_collection_modifyitems(config, items):\n"
        "    if torch.cuda.get_device_capability() >= (9, 0):\n"
        "        for item in items:\n            item.add_marker(pytest.mark.skip(reason='old arch only'))\n",
    ),
}
# What pytest does on a (9, 0) runner, and what the audit says: (marked, plain) each "runs", "skips" or "undetermined".
HOOK_EXPECTED = {
    # The option the conftest declares is not on the command line: its hook skips the marked test (never-runs).
    "runslow": ({"t/test_h.py::test_marked": "skips", "t/test_h.py::test_plain": "runs"}, ("skips", "runs")),
    "blackwell": ({"t/test_h.py::test_marked": "skips", "t/test_h.py::test_plain": "runs"}, ("skips", "runs")),
    "gpu-early-return": ({"t/test_h.py::test_marked": "runs", "t/test_h.py::test_plain": "runs"}, ("runs", "runs")),
    "every-test": ({"t/test_h.py::test_marked": "skips", "t/test_h.py::test_plain": "skips"}, ("skips", "skips")),
    "made-by-a-helper": ({"t/test_h.py::test_marked": "skips", "t/test_h.py::test_plain": "runs"}, ("undetermined", "runs")),
}


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_collection_hooks_that_skip_by_marker(audit: Audit, tmp_path: Path, oracle_stub: Path, name: str) -> None:
    marker, conftest = HOOKS[name]
    files = {"t/conftest.py": conftest, "t/test_h.py": HOOK_TESTS.format(marker=marker)}
    real, said = HOOK_EXPECTED[name]
    assert real_pytest(_written(tmp_path / "real", files), oracle_stub, Case(command="pytest t")) == real
    report = audit(files, _entry("pytest t"))
    skipping = _skipping(report) | {f.finding.scope for f in report.of_kind(GuardFindingKind.NEVER_RUNS)}
    verdicts = tuple("skips" if f"t/test_h.py::{t}" in skipping else "runs" for t in ("test_marked", "test_plain"))
    undetermined = said.count("undetermined")
    assert report.undetermined == undetermined
    assert tuple(v for v, s in zip(verdicts, said, strict=True) if s != "undetermined") == tuple(
        s for s in said if s != "undetermined"
    )


OPT_IN_WORKFLOW = """\
on: [pull_request]
jobs:
  rocm:
    runs-on: linux-mi300-gpu-1
    steps:
      - run: {command}
"""
OPT_IN_TEST = """\
import os

import pytest
import torch

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU"),
    pytest.mark.skipif(os.environ.get("TILE_IMPL", "") != "tile", reason="opt-in"),
]


def test_routes():
    pass
"""


@pytest.mark.parametrize(
    ("command", "skips"),
    [
        pytest.param("python -m pytest t", True, id="no-job-sets-it"),
        pytest.param("TILE_IMPL=tile python -m pytest t", False, id="the-job-sets-it"),
        pytest.param("TILE_IMPL=other python -m pytest t", True, id="the-job-sets-another-value"),
    ],
)
def test_an_opt_in_variable_decides_on_a_runner_with_no_profile(audit: Audit, command: str, skips: bool) -> None:
    """A label pack's ROCm runner has no profile; its torch (ROCm's) has `torch.cuda.is_available()` true, and the
    opt-in guard reads only the job's environment, which the entry gives: when the job does not set the value, the
    test skips there, else it runs."""
    files = {"t/test_m.py": OPT_IN_TEST, ".github/workflows/ci.yml": OPT_IN_WORKFLOW.format(command=command)}
    report = audit(files)
    found = _skipping(report)
    assert found == ({"t/test_m.py::test_routes"} if skips else set())
    assert report.undetermined == 0
    if skips:
        (finding,) = report.of_kind(GuardFindingKind.SILENT_SKIP)
        assert "TILE_IMPL" in finding.finding.message


def test_a_machine_fact_on_a_runner_with_no_profile_stays_undetermined(audit: Audit) -> None:
    """A fact the runner's labels do not give stays unknown there: `device_count() < 2` on a ROCm host whose labels
    give no GPU count."""
    source = "import pytest\nimport torch\n\n\n@pytest.mark.skipif(torch.cuda.device_count() < 2, reason='two')\ndef test_x():\n    pass\n"
    workflow = OPT_IN_WORKFLOW.format(command="python -m pytest t").replace("linux-mi300-gpu-1", "linux.rocm.gpu.mi300")
    files = {"t/test_m.py": source, ".github/workflows/ci.yml": workflow}
    report = audit(files)
    assert not report.findings and report.undetermined == 1


@pytest.mark.parametrize("runs_on", ["linux-mi300-gpu-1", "ubuntu-latest"], ids=["no-profile", "profiled"])
def test_a_selection_doubt_leaves_a_guardless_test_undetermined_on_any_runner(audit: Audit, runs_on: str) -> None:
    """A conftest that sets collect_ignore from a call may drop the file: "runs" is not certain, whether or not
    the runner has a profile (the label pack's ROCm runner has none)."""
    workflow = OPT_IN_WORKFLOW.format(command="python -m pytest t").replace("linux-mi300-gpu-1", runs_on)
    files = {"t/test_m.py": "def test_plain():\n    pass\n", ".github/workflows/ci.yml": workflow}
    assert audit(files).undetermined == 0
    files["t/conftest.py"] = "import os\n\ncollect_ignore = os.listdir('skipped')\n"
    report = audit(files)
    assert report.undetermined == 1 and not report.findings
