"""Differential test: the static pytest audit against pytest itself, on small generated checkouts.

Hypothesis writes a checkout (test files, a conftest, a configuration file, marks, parametrize) and a CI command;
real pytest runs it in a subprocess with a stub `torch` answering capability (9, 0) and one GPU; the audit reads
the same checkout with a schedule of that one command on a (9, 0) runner. Test by test the two must agree, or the
audit must call the test undetermined: a certain verdict pytest contradicts is the one failure.

`nox -s tests` runs a few examples; `SPECMATRIX_ORACLE_EXAMPLES=300` (any number) runs a deep pass.
"""

from __future__ import annotations

import json
import os
import posixpath
import shlex
import sys
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from matrix.core.runner_files import load_runners

if TYPE_CHECKING:
    from matrix.pytest_suites.audit import ItemOutcome

EXAMPLES = int(os.environ.get("SPECMATRIX_ORACLE_EXAMPLES", "4"))
RUNNER = "1-gpu-h100"  # capability (9, 0), one GPU: what the stub torch answers

STUB_TORCH = {
    "torch/__init__.py": "from . import cuda\n",
    "torch/cuda.py": (
        "def is_available():\n    return True\n\n\n"
        "def device_count():\n    return 1\n\n\n"
        "def get_device_capability(device=None):\n    return (9, 0)\n"
    ),
}

# A plugin loaded into the real pytest run: each test's outcome, written as JSON.
REPORTER = """
import json, os

OUTCOMES = {}
BODIES_RUN = [True]


def pytest_configure(config):
    # --setup-only / --setup-plan run no test body: nothing this run does counts as running or skipping a test.
    BODIES_RUN[0] = not config.option.setuponly


def pytest_runtest_logreport(report):
    if BODIES_RUN[0] and (report.when == "call" or report.outcome != "passed"):
        OUTCOMES.setdefault(report.nodeid, "skips" if report.skipped else "runs" if report.passed else "fails")


def pytest_unconfigure(config):
    with open(os.environ["ORACLE_OUT"], "w", encoding="utf-8") as handle:
        json.dump({"rootdir": str(config.rootpath), "outcomes": OUTCOMES}, handle)
"""


def _snippet(kind: str, i: int) -> str:
    """Module-level code of one construct (names made unique by `i`)."""
    return {
        "plain": f"def test_plain_{i}():\n    pass\n",
        "slow": f"@pytest.mark.slow\ndef test_slow_{i}():\n    pass\n",
        "gpu": f"@pytest.mark.gpu\ndef test_gpu_{i}():\n    pass\n",
        "alias": f"heavy_{i} = pytest.mark.slow\n\n\n@heavy_{i}\ndef test_alias_{i}():\n    pass\n",
        "applied": f"def test_applied_{i}():\n    pass\n\n\ntest_applied_{i} = pytest.mark.slow(test_applied_{i})\n",
        "cap10": (
            "@pytest.mark.skipif(torch.cuda.get_device_capability() < (10, 0), reason='needs sm100')\n"
            f"def test_cap10_{i}():\n    pass\n"
        ),
        "cap8": (
            "@pytest.mark.skipif(torch.cuda.get_device_capability() < (8, 0), reason='needs sm80')\n"
            f"def test_cap8_{i}():\n    pass\n"
        ),
        "skip": f"@pytest.mark.skip(reason='off')\ndef test_off_{i}():\n    pass\n",
        "param": f"@pytest.mark.parametrize('value', [1, 2])\ndef test_param_{i}(value):\n    pass\n",
        "klass": f"class TestBox{i}:\n    def test_in(self):\n        pass\n\n    def helper(self):\n        pass\n",
        "inherit": f"class Mixin{i}:\n    def test_mixed(self):\n        pass\n\n\nclass TestChild{i}(Mixin{i}):\n    pass\n",
        "nested": f"class TestOuter{i}:\n    class TestInner:\n        def test_deep(self):\n            pass\n",
        "dunder": f"class TestOff{i}:\n    __test__ = False\n\n    def test_never(self):\n        pass\n",
        "unittest": f"class Checks{i}(unittest.TestCase):\n    def test_unit(self):\n        pass\n",
        "cond_true": f"FLAG_{i} = True\nif FLAG_{i}:\n\n    def test_cond_{i}():\n        pass\n",
        "cond_false": f"FLAG_{i} = False\nif FLAG_{i}:\n\n    def test_gone_{i}():\n        pass\n",
        "class_mark": (
            f"class Marked{i}:\n    pytestmark = pytest.mark.slow\n\n\n"
            f"class TestSub{i}(Marked{i}):\n    def test_sub(self):\n        pass\n"
        ),
        "check": f"def check_named_{i}():\n    pass\n",
        "checkclass": f"class CheckThing{i}:\n    def check_one(self):\n        pass\n\n    def test_two(self):\n        pass\n",
        "dunder_true": f"class Spec{i}:\n    __test__ = True\n\n    def test_yes(self):\n        pass\n",
        "imported": f"from shared_{i} import test_shared as test_imported_{i}\n",
        "fixture_param": (
            f"@pytest.fixture(params=['x', 'y'])\ndef flavour_{i}(request):\n    return request.param\n\n\n"
            f"def test_flavoured_{i}(flavour_{i}):\n    pass\n"
        ),
        "body_skip": f"def test_body_{i}():\n    pytest.skip('not here')\n",
        # Imported tests (their modules are written by `_companion`).
        "imported_class": f"from shelf_{i} import TestShelf{i}\n",
        "imported_star": f"from bulk_{i} import *\n",
        "imported_base": f"from shelf_{i} import Base{i}\n\n\nclass TestOwn{i}(Base{i}):\n    pass\n",
        "imported_marked": f"from marked_{i} import test_marked_{i}\n",
        # A name rebound in a way other than a plain assignment before the guard reads it.
        "rebound_with": (
            f"level_{i} = (10, 0)\nwith contextlib.nullcontext((8, 0)) as level_{i}:\n    pass\n\n\n"
            f"@pytest.mark.skipif(level_{i} < (9, 0), reason='old')\ndef test_with_{i}():\n    pass\n"
        ),
        "rebound_walrus": (
            f"def test_walrus_{i}():\n    level = (10, 0)\n    if (level := (8, 0)) is None:\n        pass\n"
            "    if level < (9, 0):\n        pytest.skip('old')\n"
        ),
        "rebound_match": (
            f"def test_match_{i}():\n    level = (10, 0)\n    match os.sep:\n        case '/':\n"
            "            level = (8, 0)\n        case _:\n            pass\n    if level < (9, 0):\n        pytest.skip('old')\n"
        ),
        "rebound_cond": (
            f"def test_cond_cap_{i}():\n    level = torch.cuda.get_device_capability()\n"
            "    if os.environ.get('PRETEND_OLD'):\n        level = (8, 0)\n    if level < (9, 0):\n        pytest.skip('old')\n"
        ),
    }[kind]


def _companion(kind: str, i: int) -> tuple[str, str] | None:
    """The module an `imported_*` snippet imports from (name, text), written beside the test file."""
    shelf = f"class Base{i}:\n    def test_inherited(self):\n        pass\n\n\nclass TestShelf{i}(Base{i}):\n    def test_own(self):\n        pass\n"
    return {
        "imported": (f"shared_{i}.py", "def test_shared():\n    pass\n"),
        "imported_class": (f"shelf_{i}.py", shelf),
        "imported_base": (f"shelf_{i}.py", shelf),
        "imported_star": (f"bulk_{i}.py", f"def test_bulk_{i}():\n    pass\n\n\ndef _hidden_{i}():\n    pass\n\n\n{shelf}"),
        "imported_marked": (
            f"marked_{i}.py",
            f"import pytest\n\n\n@pytest.mark.slow\ndef test_marked_{i}():\n    pass\n",
        ),
    }.get(kind)


KINDS = [
    "plain", "slow", "gpu", "alias", "applied", "cap10", "cap8", "skip", "param", "klass", "inherit", "nested",
    "dunder", "unittest", "cond_true", "cond_false", "class_mark", "check", "checkclass", "dunder_true", "imported",
    "fixture_param", "body_skip", "imported_class", "imported_star", "imported_base", "imported_marked",
    "rebound_with", "rebound_walrus", "rebound_match", "rebound_cond",
]  # fmt: skip
FILES = [
    "tests/test_a.py", "tests/test_ab.py", "tests/sub/test_b.py", "tests/check_c.py", "tests/e_test.py",
    "other/test_d.py", "build/test_f.py", "tests/legacy/test_g.py",
]  # fmt: skip
CONFIG_NAMES = ["pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg", "empty-pytest.ini+pyproject.toml"]
OPTIONS = {
    "testpaths": ["tests", "tests/*", "other tests", "nowhere"],
    "norecursedirs": ["sub", "tests/legacy", "build", "legacy", "t*", "*sub*"],
    "python_files": ["test_*.py check_*.py", "test_*.py", "tests/*_test.py test_*.py"],
    "python_classes": ["Test Check", "Check"],
    "python_functions": ["test check", "test"],
    "addopts": ['-m "not slow"', "--ignore=tests/sub", "--deselect tests/test_a", "-k plain", "--ignore-glob=*e_test.py"],
}
COMMAND_PATHS = [
    "", "tests", "tests/test_a.py", "tests/test_a.py::test_plain_0", "other", "tests/sub/test_b.py",
    # node ids: a class, a method of it, a parametrized test, one case of it, two files' worth
    "tests/test_a.py::TestBox0", "tests/test_a.py::TestBox0::test_in", "tests/test_a.py::test_param_0",
    "tests/test_a.py::test_param_0[2]", "tests/test_a.py::test_slow_1 tests/sub/test_b.py",
    "tests/test_a.py::test_gpu_0 tests/test_a.py::TestBox1",
]  # fmt: skip
COMMAND_OPTIONS = [
    "-m slow", '-m "not slow"', '-m "gpu or slow"', '-k "plain or box"', '-k "not param"', "-k 2", "-k test_a",
    "--ignore=tests/sub", "--ignore=tests/test_a.py", "--ignore-glob='tests/*_test.py'", "--deselect=tests/test_a",
    "--deselect=tests/test_a.py::test_plain_0", "--co", "-k sub", "-m gpu -m slow", "-k x", "-k 'not y'",
    "-o testpaths=other", "--rootdir=tests", "-p no:randomly", "--ignore=tests", "-c tox.ini", "-k Spec",
    "--setup-only", "-k flavoured", "-m 'slow and not gpu'", "--deselect tests/test_a.py::TestBox0",
    "--continue-on-collection-errors",
    # per test: a method, a parametrized case, keyword and marker expressions over classes and markers
    "--deselect tests/test_a.py::TestBox0::test_in", "--deselect tests/test_a.py::test_param_0[1]",
    "--deselect tests/test_a.py::test_gpu_0", "-k 'TestBox0 and not helper'", "-k 'plain_0 or slow'",
    "-k 'not TestBox'", "-m 'not gpu and not slow'", "-m 'gpu or not slow'", "-k 'param and 2'",
]  # fmt: skip
ADDOPTS_ENV = ["-m gpu", "-k cap", "--ignore=tests", "-m 'not gpu'", "--co", "-k 'not plain'"]
CONFTEST = [
    'collect_ignore = ["tests/sub"]',
    'collect_ignore_glob = ["*/test_a*"]',
    'collect_ignore = ["tests/check_c.py"]',
    # Hooks that skip by marker (pytest's documented --runslow pattern and its relatives).
    "import pytest\n\n\ndef pytest_addoption(parser):\n    parser.addoption('--runslow', action='store_true')\n\n\n"
    "def pytest_collection_modifyitems(config, items):\n    if config.getoption('--runslow'):\n        return\n"
    "    skip_slow = pytest.mark.skip(reason='needs --runslow')\n    for item in items:\n"
    "        if 'slow' in item.keywords:\n            item.add_marker(skip_slow)",
    "import pytest\nimport torch\n\n\ndef pytest_collection_modifyitems(config, items):\n"
    "    cc = torch.cuda.get_device_capability()\n    for item in items:\n"
    "        if 'gpu' in item.keywords and cc < (10, 0):\n            item.add_marker(pytest.mark.skip(reason='sm100'))",
    "import pytest\nimport torch\n\n\ndef pytest_collection_modifyitems(config, items):\n"
    "    if torch.cuda.is_available():\n        return\n    for item in items:\n"
    "        if 'gpu' in item.keywords:\n            item.add_marker(pytest.mark.skip(reason='no GPU'))",
    "import pytest\nimport torch\n\n\ndef pytest_runtest_setup(item):\n"
    "    if item.get_closest_marker('slow') and torch.cuda.device_count() < 2:\n        pytest.skip('two GPUs')",
    *["import pytest\n\nSETTINGS = ("] * 3,  # does not parse: a collection error (drawn more often)
    # Opt-ins: an option declared through a group, whose absence deselects marked tests (three deselect forms).
    "import pytest\n\n\ndef pytest_addoption(parser):\n    group = parser.getgroup('gpu')\n"
    "    group.addoption('--with-gpu', action='store_true', default=False)\n\n\n"
    "def pytest_collection_modifyitems(config, items):\n    if config.getoption('with_gpu'):\n        return\n"
    "    dropped = [item for item in items if 'gpu' in item.keywords]\n"
    "    config.hook.pytest_deselected(items=dropped)\n"
    "    items[:] = [item for item in items if 'gpu' not in item.keywords]",
    "import pytest\n\n\ndef pytest_addoption(parser):\n    parser.addoption('--with-gpu', action='store_true')\n\n\n"
    "def pytest_collection_modifyitems(config, items):\n    for item in list(items):\n"
    "        if item.get_closest_marker('gpu') and not config.getoption('--with-gpu'):\n"
    "            items.remove(item)",
    "def pytest_collection_modifyitems(config, items):\n    gone = []\n    for item in items:\n"
    "        if 'slow' in item.keywords:\n            gone.append(item)\n"
    "    config.hook.pytest_deselected(items=gone)\n    items[:] = [i for i in items if i not in gone]",
    "def pytest_collection_modifyitems(config, items):\n    items[:] = sorted(items, key=lambda item: item.name)",
    # An opt-in variable read by a setup hook.
    "import os\n\nimport pytest\n\n\ndef pytest_runtest_setup(item):\n"
    "    if 'slow' in item.keywords and os.environ.get('RUN_SLOW') != '1':\n        pytest.skip('set RUN_SLOW=1')",
]
# A test file that does not parse (a collection error for the commands that collect it).
TORN = "def test_torn(:\n    pass\n"


@dataclass
class Case:
    files: dict[str, str] = field(default_factory=dict)
    command: str = "pytest"
    env: dict[str, str] = field(default_factory=dict)
    working_dir: str = "."
    latin1: set[str] = field(default_factory=set)  # files written in Latin-1 with a coding line
    own_option: bool = False  # the command passes an option a conftest of the case declares


def _config_file(kind: str, options: dict[str, str]) -> dict[str, str]:
    body = "".join(f"{k} = {v}\n" for k, v in options.items())
    if kind == "pytest.ini":
        return {"pytest.ini": "[pytest]\n" + body}
    if kind == "tox.ini":
        return {"tox.ini": "[pytest]\n" + body}
    if kind == "setup.cfg":
        return {"setup.cfg": "[tool:pytest]\n" + body}
    toml = "".join(f"{k} = {json.dumps(v.split()) if k != 'addopts' else json.dumps(v)}\n" for k, v in options.items())
    if kind == "pytest.toml":
        native = "".join(f"{k} = {json.dumps(shlex.split(v))}\n" for k, v in options.items())
        return {"pytest.toml": "[pytest]\n" + native}
    pyproject = {"pyproject.toml": "[tool.pytest.ini_options]\n" + toml}
    if kind == "pyproject.toml":
        return pyproject
    return {**pyproject, "pytest.ini": ""}  # an empty pytest.ini wins over the pyproject table


@st.composite
def cases(draw: st.DrawFn) -> Case:
    case = Case()
    paths = draw(st.lists(st.sampled_from(FILES), min_size=1, max_size=3, unique=True))
    counter = 0
    for path in paths:
        kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))
        parts = ["import contextlib\nimport os\nimport unittest\n\nimport pytest\nimport torch\n"]
        if draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans()):
            parts.append("__test__ = False\n")
        for kind in kinds:
            parts.append(_snippet(kind, counter))
            companion = _companion(kind, counter)
            if companion is not None:
                case.files[f"{path.rpartition('/')[0]}/{companion[0]}"] = companion[1]
            counter += 1
        case.files[path] = "\n\n".join(parts)
        if draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans()):
            case.files[path] += "\n\n" + TORN
        if draw(st.booleans()) and draw(st.booleans()):
            case.latin1.add(path)
    if draw(st.booleans()):
        chosen = draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=3, unique=True))
        options = {k: draw(st.sampled_from(OPTIONS[k])) for k in chosen}
        case.files.update(_config_file(draw(st.sampled_from(CONFIG_NAMES)), options))
    declared = ""
    if draw(st.booleans()) and draw(st.booleans()):
        where = draw(st.sampled_from(["conftest.py", "conftest.py", "tests/conftest.py", "tests/sub/conftest.py"]))
        case.files[where] = draw(st.sampled_from(CONFTEST)) + "\n"
        declared = (
            "--with-gpu" if "'--with-gpu'" in case.files[where] else "--runslow" if "'--runslow'" in case.files[where] else ""
        )
    words = ["pytest"]
    path = draw(st.sampled_from(COMMAND_PATHS))
    if path:
        words.append(path)
    words += draw(st.lists(st.sampled_from(COMMAND_OPTIONS), max_size=2))
    if declared and draw(st.booleans()):
        words.append(declared)  # the conftest's own option (pytest refuses it when that conftest is not loaded first)
        case.own_option = True
    case.command = " ".join(words)
    if draw(st.booleans()) and draw(st.booleans()) and any(p.startswith("tests/") for p in case.files):
        case.working_dir = "tests"
    if draw(st.booleans()) and draw(st.booleans()):
        case.env["PYTEST_ADDOPTS"] = draw(st.sampled_from(ADDOPTS_ENV))
    if draw(st.booleans()) and draw(st.booleans()):
        case.env["RUN_SLOW"] = draw(st.sampled_from(["1", "0"]))
    return case


def _write(root: Path, files: dict[str, str], latin1: set[str] | None = None) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name in (latin1 or ()):
            path.write_bytes(f"# -*- coding: latin-1 -*-\n# caf\xe9\n{text}".encode("latin-1"))
        else:
            path.write_text(text, encoding="utf-8")


USAGE_ERROR = 4  # pytest's ExitCode.USAGE_ERROR: the command line is refused, nothing is collected


def real_pytest(root: Path, stub: Path, case: Case) -> dict[str, str]:
    """Each test's outcome as pytest itself reports it ("runs", "skips"); tests it does not run are absent.

    pytest runs in a forked child of this process (pytest already imported: a run costs a tenth of a fresh
    interpreter), with the stub torch first on sys.path, no plugin autoloading, the case's environment only."""
    out = root.parent / "outcomes.json"
    out.unlink(missing_ok=True)
    args = [*shlex.split(case.command)[1:], "-p", "oracle_reporter", "-p", "no:cacheprovider", "-q"]
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test session
        code = 3
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            sys.stdout = sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the child exits)
            warnings.resetwarnings()  # this session's `filterwarnings = error` must not reach the child's run
            for name in [k for k in os.environ if k.startswith(("PYTEST_", "HYPOTHESIS"))]:
                del os.environ[name]
            os.environ.update(case.env, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", ORACLE_OUT=str(out))
            os.chdir(root / case.working_dir)
            sys.path[:0] = [str(stub)]
            sys.dont_write_bytecode = True
            code = int(pytest.main(args))
        finally:
            os._exit(code if isinstance(code, int) else 3)
    _, status = os.waitpid(pid, 0)
    # A conftest's own option given where pytest does not load that conftest before parsing: a command CI would
    # see fail at once. Not a reading to compare (the audit reads such an option as unknown).
    if case.own_option and os.waitstatus_to_exitcode(status) == USAGE_ERROR:
        reject()
    if not out.is_file():
        return {}  # a usage error: pytest ran nothing
    written = json.loads(out.read_text(encoding="utf-8"))
    # pytest's node ids are relative to its rootdir; the audit's to the checkout.
    rootdir = Path(written["rootdir"]).relative_to(root.resolve()).as_posix()
    # pytest names a file outside its rootdir relative to the initial path that holds it (pytest 8 and 9,
    # `nodes._check_initialpaths_for_relpath`), else to where it started.
    starts = [posixpath.normpath(posixpath.join(case.working_dir, w.split("::")[0])) for w in shlex.split(case.command)[1:]]
    bases = [
        rootdir,
        *(b if (root / b).is_dir() else posixpath.dirname(b) for b in starts if (root / b).exists()),
        case.working_dir,
    ]
    found = {_checkout_id(root, rootdir, bases, nodeid): outcome for nodeid, outcome in written["outcomes"].items()}
    assert "fails" not in found.values(), (status, found)
    return found


def _checkout_id(root: Path, rootdir: str, bases: list[str], nodeid: str) -> str:
    """A pytest node id relative to the checkout: pytest's ids are relative to its rootdir, but a file outside the
    rootdir (`--rootdir=tests` with `other/test_d.py` collected) is named relative to one of `bases`."""
    path, sep, rest = nodeid.partition("::")
    for base in bases:
        candidate = posixpath.normpath(posixpath.join(base, path))
        if (root / candidate).is_file():
            return candidate + sep + rest
    return nodeid if rootdir == "." else f"{rootdir}/{nodeid}"


def static_outcomes(root: Path, case: Case, scratch: Path) -> tuple[dict[str, ItemOutcome], tuple[str, ...]]:
    from matrix.pytest_suites.run import AuditInput, item_outcomes

    env = f"env = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in case.env.items())} }}\n" if case.env else ""
    plan = scratch / "plan.toml"
    where = f"working_dir = {json.dumps(case.working_dir)}\n"
    plan.write_text(
        f'[[entry]]\njob = "j"\nlabels = ["{RUNNER}"]\npytest = {json.dumps(case.command)}\n{where}{env}', encoding="utf-8"
    )
    return item_outcomes(AuditInput(root=root, schedule_files=(plan,), workflows=False), load_runners())


def disagreements(static: dict[str, ItemOutcome], broken: tuple[str, ...], real: dict[str, str]) -> list[str]:
    """Certain static verdicts pytest contradicts."""
    from matrix.pytest_suites.audit import ItemOutcome

    wrong: list[str] = []
    seen: set[str] = set()
    for nodeid, outcome in real.items():
        key = nodeid if nodeid in static else nodeid.split("[")[0]
        seen.add(key)
        said = static.get(key)
        if said is None:
            if nodeid.split("::")[0] not in broken:
                wrong.append(f"{nodeid}: pytest {outcome}s it; the audit does not know the test")
        elif said is ItemOutcome.NOT_SELECTED or (said.value in ("runs", "skips") and said.value != outcome):
            wrong.append(f"{nodeid}: pytest {outcome}; the audit says {said.value}")
    wrong.extend(
        f"{nodeid}: the audit says {said.value}; pytest does not run it"
        for nodeid, said in static.items()
        if said in (ItemOutcome.RUNS, ItemOutcome.SKIPS) and nodeid not in seen
    )
    return wrong


def stub_folder(where: Path) -> Path:
    """A folder holding the stub torch and the reporting plugin, to put first on the child's sys.path."""
    _write(where, {**STUB_TORCH, "oracle_reporter.py": textwrap.dedent(REPORTER)})
    return where


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return stub_folder(tmp_path_factory.mktemp("stub"))


def check(case: Case, scratch: Path, stub: Path) -> None:
    root = scratch / "repo"
    _write(root, case.files, case.latin1)
    real = real_pytest(root, stub, case)
    static, broken = static_outcomes(root, case, scratch)
    wrong = disagreements(static, broken, real)
    shown = [f"command: {case.command} env: {case.env} in {case.working_dir}", *wrong, *sorted(case.files)]
    assert not wrong, "\n".join(shown)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=EXAMPLES <= 10,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(case=cases())
def test_the_audit_agrees_with_pytest(case: Case, stub: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    check(case, tmp_path_factory.mktemp("case"), stub)


# Cases a deep run once found the audit wrong on, kept as fixed examples.
KNOWN_CASES = {
    # pytest imports the conftest of every folder it recurses into, one holding no test file too: one that does
    # not parse stops the run.
    "broken-conftest-in-a-folder-without-tests": Case(
        files={"tests/test_a.py": "def test_plain():\n    pass\n", "tests/sub/conftest.py": "SETTINGS = (\n"},
        command="pytest",
    ),
    # A node id that names no test of its file: pytest reports "not found" and runs nothing, the other paths too.
    "node-id-of-no-test": Case(
        files={"tests/test_a.py": "def test_plain():\n    pass\n", "tests/sub/test_b.py": "def test_other():\n    pass\n"},
        command="pytest tests/test_a.py::test_gone tests/sub/test_b.py",
    ),
    # A path the checkout does not hold: pytest reports "file or directory not found" and runs nothing.
    # A file outside the rootdir pytest is given (its node id is named from where pytest starts).
    "file-outside-the-rootdir": Case(
        files={"other/test_d.py": "def test_d():\n    pass\n", "tests/test_a.py": "def test_a():\n    pass\n"},
        command="pytest --rootdir=tests",
    ),
    "file-outside-the-rootdir-under-a-start": Case(
        files={"other/test_d.py": "def test_d():\n    pass\n", "tests/test_a.py": "def test_a():\n    pass\n"},
        command="pytest other --rootdir=tests",
    ),
    "missing-path": Case(
        files={"tests/sub/test_b.py": "import pytest\n\n\n@pytest.mark.skip(reason='off')\ndef test_off():\n    pass\n"},
        command="pytest tests/test_a.py::test_slow_1 tests/sub/test_b.py",
    ),
}


@pytest.mark.parametrize("name", sorted(KNOWN_CASES))
def test_the_audit_agrees_with_pytest_on_known_cases(name: str, stub: Path, tmp_path: Path) -> None:
    check(KNOWN_CASES[name], tmp_path, stub)


@pytest.mark.parametrize(
    ("files", "command", "plant"),
    [
        pytest.param(
            {"pytest.ini": "[pytest]\naddopts = --co\n", "tests/test_a.py": "def test_a():\n    pass\n"},
            "pytest tests",
            "listing-counted-as-a-run",
            id="co",
        ),
        pytest.param(
            {"tests/test_a.py": "def test_a():\n    pass\n", "tests/test_ab.py": "def test_b():\n    pass\n"},
            "pytest tests --deselect tests/test_a",
            "deselect-exact",
            id="deselect",
        ),
    ],
)
def test_the_comparison_fails_on_a_planted_misreading(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stub: Path, files: dict[str, str], command: str, plant: str
) -> None:
    from matrix.pytest_suites import invocation, select

    case = Case(files=files, command=command)
    check(case, tmp_path / "before", stub)
    if plant == "listing-counted-as-a-run":
        monkeypatch.setattr(invocation, "NOT_RUNS", {})
    else:
        original = select.selects

        def exact(entry: object, called: invocation.Invocation, item: object, *rest: object) -> object:
            kept = invocation.Invocation(**{**called.__dict__, "deselect": ()})
            found = original(entry, kept, item, *rest)  # type: ignore[arg-type]
            return None if found is not None and getattr(item, "nodeid", "") in called.deselect else found

        monkeypatch.setattr("matrix.pytest_suites.audit.selects", exact)
    with pytest.raises(AssertionError, match="pytest does not run it"):
        check(case, tmp_path / "after", stub)
