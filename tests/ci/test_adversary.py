"""An adversary's round against the readers, the gates and the outputs: each case a checkout, report, baseline or
ledger built to break a bound, a containment, an escaping or a verdict.

Every case must end in a verdict (exit 0 or 1) that is right, or one `specmatrix:` line and exit 2; never a
traceback, a hang, a read outside the tree, an overwritten input or a forged CI log line.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from matrix.cli.main import main
from tests.ci.cli_run import clean_environment

SECRET = "ADVERSARY-SECRET"
WORKFLOW = "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: {command}\n"
SKIPPED = (
    "import sys\nimport pytest\n\n@pytest.mark.skipif(sys.platform == 'linux', reason='never')\ndef test_gone():\n    pass\n"
)
PLAIN = "def test_plain():\n    pass\n"
REGISTERED = """\
import unittest

from ci_helpers import register_cuda_ci

register_cuda_ci(est_time=30, suite="stage-a")


@unittest.skip("off for now")
class TestKernel(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)
"""
COMMAND_LINE = re.compile(r"^\s*::", re.M)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_environment(monkeypatch, tmp_path)


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def doc(self) -> Any:
        return json.loads(self.out)

    def kinds(self) -> list[str]:
        return [f["kind"] for f in self.doc()["findings"]]


def run(*argv: object) -> Result:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    assert SECRET not in out.getvalue() + err.getvalue()
    return Result(code, out.getvalue(), err.getvalue())


def refused(result: Result, said: str = "") -> None:
    errors = [line for line in result.err.splitlines() if line.startswith("specmatrix: error:")]
    assert result.code == 2 and len(errors) == 1, result.err
    assert said in errors[0], errors[0]


def repo(tmp_path: Path, files: dict[str, str], command: str = "python -m pytest tests") -> Path:
    root = tmp_path / "repo"
    for name, text in {".github/workflows/ci.yml": WORKFLOW.format(command=command), **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    (root / ".git").mkdir(exist_ok=True)
    return root


def outside(tmp_path: Path, name: str = "secret.py", text: str = f"# {SECRET}\n{SKIPPED}") -> Path:
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text.replace("never", SECRET), encoding="utf-8")
    return folder / name


# --- symlink tricks ----------------------------------------------------------------------------------------------


def case_test_file_linked_to_a_device(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": PLAIN})
    os.symlink("/dev/zero", root / "tests" / "test_zero.py")
    result = run("pytest-audit", root, "--format", "json")
    assert result.code == 1 and "unparsable" in result.kinds()


def case_conftest_linked_to_a_fifo_in_the_tree(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": PLAIN})
    os.mkfifo(root / "pipe")
    os.symlink("../pipe", root / "tests" / "conftest.py")
    result = run("pytest-audit", root, "--format", "json")  # never waits on the FIFO
    assert result.code == 0 and result.doc()["undetermined"] == 1  # what pytest does with it is not read: no verdict


def case_workflows_folder_linked_outside(tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere" / "workflows"
    folder.mkdir(parents=True)
    (folder / "ci.yml").write_text(WORKFLOW.format(command=f"python -m pytest tests -k {SECRET}"), encoding="utf-8")
    root = tmp_path / "repo"
    (root / ".github").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tests" / "test_a.py").write_text(PLAIN, encoding="utf-8")
    os.symlink(folder, root / ".github" / "workflows")
    result = run("pytest-audit", root, "--format", "json")
    assert result.code in (0, 1, 2)


def case_followed_script_folder_linked_outside(tmp_path: Path) -> None:
    script = outside(tmp_path, "run.sh", f"python -m pytest tests -k {SECRET}\n")
    root = repo(tmp_path, {"tests/test_a.py": PLAIN}, command="bash ci/run.sh")
    os.symlink(script.parent, root / "ci")
    result = run("pytest-audit", root, "--format", "json")
    doc = result.doc()
    assert result.code == 0 and doc["undetermined_unread"] == 1  # the job that runs it is not read: no verdict
    assert any("outside" in line for line in [*(u["reason"] for u in doc["unread"]), *doc["assumptions"]])


def case_baseline_linked_to_a_fifo(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED})
    os.mkfifo(tmp_path / "pipe")
    os.symlink(tmp_path / "pipe", tmp_path / "baseline.json")
    refused(run("pytest-audit", root, "--baseline", tmp_path / "baseline.json"), "not a regular file")


def case_output_through_a_link_to_a_read_file(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED, "Makefile": "all:\n\tpython -m pytest tests\n"}, command="make all")
    os.symlink(root / "Makefile", tmp_path / "report.txt")
    before = (root / "Makefile").read_bytes()
    refused(run("pytest-audit", root, "--output", tmp_path / "report.txt"), "the audit read this file")
    assert (root / "Makefile").read_bytes() == before


def case_output_onto_a_hard_link_of_a_read_file(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED, "ci/steps.env": "export X=1\n"}, command="source ci/steps.env")
    os.link(root / "ci" / "steps.env", tmp_path / "report.txt")
    refused(run("schedule", root, "--output", tmp_path / "report.txt"), "the audit read this file")


def case_a_folder_linked_to_its_parent(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED})
    os.symlink("..", root / "tests" / "loop")
    result = run("pytest-audit", root, "--format", "json")
    assert result.code == 1 and result.doc()["tests"] == 1


def case_guards_test_file_linked_outside(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    os.symlink(outside(tmp_path, "test_s.py", REGISTERED.replace("stage-a", SECRET)), suite / "test_s.py")
    result = run("guards", suite, "--no-workflows", "--format", "json")
    assert result.code == 1 and result.kinds() == ["unparsable"]


# --- huge and deep inputs -----------------------------------------------------------------------------------------


def case_conftests_at_every_level_of_a_deep_tree(tmp_path: Path) -> None:
    parts = [f"d{i}" for i in range(120)]
    files = {"/".join(["tests", *parts[: i + 1], "conftest.py"]): "X = 1\n" for i in range(len(parts))}
    files["/".join(["tests", *parts, "test_deep.py"])] = SKIPPED
    result = run("pytest-audit", repo(tmp_path, files), "--format", "json", "--jobs", "1")
    assert result.code == 1 and "silent-skip" in result.kinds()


def case_a_node_id_of_thousands_of_parts(tmp_path: Path) -> None:
    node = "tests/test_a.py::" + "::".join(["X"] * 3000)
    result = run(
        "pytest-audit", repo(tmp_path, {"tests/test_a.py": PLAIN}, command=f"python -m pytest {node}"), "--format", "json"
    )
    assert result.code == 1 and "never-runs" in result.kinds()  # the node id matches no test: pytest runs nothing


def case_a_command_of_thousands_of_missing_paths(tmp_path: Path) -> None:
    command = "python -m pytest tests " + " ".join(f"gone/p{i}.py" for i in range(3000))
    result = run("pytest-audit", repo(tmp_path, {"tests/test_a.py": PLAIN}, command=command), "--format", "json")
    # pytest stops on the first missing path: the file the command also names never runs through it
    assert result.code == 1 and "never-runs" in result.kinds()


def case_a_module_of_6000_test_functions_and_a_class_inheriting_them(tmp_path: Path) -> None:
    """Many tests of a module's own are no inheritance blow-up: read whole (ci/hostile_bounds.py times 100,000)."""
    body = "".join(f"def test_{i}():\n    pass\n" for i in range(6_000))
    body += "class TestBase:\n" + "".join(f"    def test_m{i}(self):\n        pass\n" for i in range(200))
    body += "\n\nclass TestMore(TestBase):\n    pass\n"
    result = run("pytest-audit", repo(tmp_path, {"tests/test_many.py": body}), "--format", "json", "--jobs", "1")
    assert (result.code, result.doc()["tests"]) == (0, 6_400)  # pytest collects them all; so does the audit


def case_a_baseline_of_deeply_nested_json(tmp_path: Path) -> None:
    (tmp_path / "b.json").write_text('{"schema": "specmatrix.baseline/2", "entries": ' + "[" * 50_000 + "]" * 50_000 + "}")
    refused(run("pytest-audit", repo(tmp_path, {"tests/test_a.py": PLAIN}), "--baseline", tmp_path / "b.json"))


# --- odd names ------------------------------------------------------------------------------------------------


def _every_format_is_safe(root: Path) -> None:
    for fmt in ("text", "github", "md", "junit", "json", "sarif"):
        result = run("pytest-audit", root, "--format", fmt)
        assert result.code == 1
        forged = list(COMMAND_LINE.findall(result.out)) if fmt != "github" else []
        assert not forged, (fmt, result.out)
        if fmt == "github":
            assert all(ln.startswith("::error file=") for ln in result.out.splitlines() if ln.strip()), result.out
        if fmt == "junit":
            ET.fromstring(result.out)
        if fmt in ("json", "sarif"):
            json.loads(result.out)


def case_a_file_name_of_undecodable_bytes(tmp_path: Path) -> None:
    root = repo(tmp_path, {})
    (root / "tests").mkdir()
    with open(os.fsencode(root / "tests") + b"/test_\xff\xfe.py", "wb") as handle:
        handle.write(SKIPPED.encode())
    _every_format_is_safe(root)


def case_a_file_name_with_bidi_and_zero_width(tmp_path: Path) -> None:
    _every_format_is_safe(repo(tmp_path, {"tests/test_\u202eyp.exe\u200b.py": SKIPPED}))


def case_a_file_name_with_markup(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_<b>&'\"|x.py": SKIPPED})
    _every_format_is_safe(root)
    md = run("pytest-audit", root, "--format", "md").out
    assert "<b>" not in md


def case_a_file_name_with_a_carriage_return_command(tmp_path: Path) -> None:
    _every_format_is_safe(repo(tmp_path, {"tests/test_a\r::error::forged.py": SKIPPED}))


def case_a_runner_label_forging_a_command(tmp_path: Path) -> None:
    workflow = 'on: push\njobs:\n  j:\n    runs-on: "gpu\\n::error::forged"\n    steps:\n      - run: python -m pytest tests\n'
    root = repo(tmp_path, {".github/workflows/ci.yml": workflow, "tests/test_a.py": SKIPPED})
    for fmt in ("text", "md", "junit"):
        result = run("pytest-audit", root, "--format", fmt)
        assert not COMMAND_LINE.findall(result.out), result.out


def case_register_runner_configs_differing_by_an_underscore(tmp_path: Path) -> None:
    runners = tmp_path / "r.toml"
    runners.write_text(
        '[runner.a]\ngpus = 1\ncapability = [10, 0]\nlabels = ["a"]\nrunner_configs = ["gpu_"]\n'
        '[runner.b]\ngpus = 1\ncapability = [10, 0]\nlabels = ["b"]\nrunner_configs = ["_gpu"]\n',
        encoding="utf-8",
    )
    argv = ("register", "--runners", runners, "--runner", "a", "--runner", "b", "--out", tmp_path / "out", "--no-workflows")
    refused(run(*argv), "both give the module name")


# --- corrupt reports, baselines and ledgers -------------------------------------------------------------------


def _baseline(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"schema": "specmatrix.baseline/2", "entries": entries}), encoding="utf-8")
    return path


def case_a_baseline_with_an_impossible_date(tmp_path: Path) -> None:
    entry = {"path": "tests/test_a.py", "test": "t", "kind": "silent-skip", "runner": "cpu", "expires": "2026-02-30"}
    refused(
        run("pytest-audit", repo(tmp_path, {"tests/test_a.py": SKIPPED}), "--baseline", _baseline(tmp_path, [entry])), "ISO date"
    )


def case_a_baseline_with_a_nul_in_its_path(tmp_path: Path) -> None:
    entry = {"path": "tests/test_a.py\u0000x", "test": "t", "kind": "silent-skip", "runner": "cpu"}
    result = run("pytest-audit", repo(tmp_path, {"tests/test_a.py": SKIPPED}), "--baseline", _baseline(tmp_path, [entry]))
    assert result.code == 1  # a stale entry; the finding is new


def case_a_baseline_with_a_bom(tmp_path: Path) -> None:
    path = _baseline(tmp_path, [])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    result = run("pytest-audit", repo(tmp_path, {"tests/test_a.py": SKIPPED}), "--baseline", path)
    assert result.code in (1, 2)
    if result.code == 2:
        refused(result)


def case_one_runner_of_a_finding_expired(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_s.py").write_text(
        REGISTERED.replace('suite="stage-a"', 'suite="base-b-test-4-gpu-b200"')
        .replace('@unittest.skip("off for now")', '@unittest.skipIf(not is_sm90_supported(), "r")')
        .replace("import register_cuda_ci", "import is_sm90_supported, register_cuda_ci"),
        encoding="utf-8",
    )
    baseline = tmp_path / "b.json"
    assert run("guards", suite, "--no-workflows", "--write-baseline", baseline).code == 0
    doc = json.loads(baseline.read_text(encoding="utf-8"))
    doc["entries"][0]["expires"] = "2020-01-01"
    baseline.write_text(json.dumps(doc), encoding="utf-8")
    result = run("guards", suite, "--no-workflows", "--baseline", baseline, "--format", "junit")
    assert result.code == 1 and ET.fromstring(result.out).get("failures") != "0"


def case_a_ledger_that_is_a_folder(tmp_path: Path) -> None:
    (tmp_path / "ledger").mkdir()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_s.py").write_text(REGISTERED, encoding="utf-8")
    refused(run("ledger", tmp_path / "ledger", "--root", suite), "not a regular file")


def _ledger_line(kind: str, pid: int, **fields: Any) -> str:
    runner = {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}
    return json.dumps({"ledger": 1, "runner": runner, "kind": kind, "pid": pid, "time": 1.0, **fields}) + "\n"


def case_a_ledger_reusing_a_pid(tmp_path: Path) -> None:
    """Two processes with one pid: the first never recorded its exit; the second did."""
    suite = tmp_path / "suite"
    suite.mkdir()
    registered = REGISTERED.replace('@unittest.skip("off for now")\n', "").replace("stage-a", "base-b-test-4-gpu-b200")
    (suite / "test_s.py").write_text(registered, encoding="utf-8")
    test = {"file": "test_s.py", "test": "test_s.py::TestKernel::test_decode", "status": "passed"}
    lines = [
        _ledger_line("process", 9, script="test_s.py", argv=[]),
        _ledger_line("test", 9, **test),
        _ledger_line("process", 9, script="test_s.py", argv=[]),
        _ledger_line("test", 9, **test),
        _ledger_line("exit", 9, status=0, how="end", tests=1),
    ]
    (tmp_path / "l.jsonl").write_text("".join(lines), encoding="utf-8")
    result = run("ledger", tmp_path / "l.jsonl", "--root", suite, "--format", "json")
    assert result.code == 1 and "no-exit" in result.kinds()


def case_a_ledger_of_one_torn_line(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_s.py").write_text(REGISTERED, encoding="utf-8")
    (tmp_path / "l.jsonl").write_text('{"ledger": 1, "kind": "proc', encoding="utf-8")
    refused(run("ledger", tmp_path / "l.jsonl", "--root", suite), "not a specmatrix ledger")


def case_a_results_cache_that_is_a_fifo(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_s.py").write_text(REGISTERED, encoding="utf-8")
    cache = tmp_path / "cache-dir"
    first = run("guards", suite, "--no-workflows", "--cache-dir", cache, "--format", "json")
    (cached,) = cache.glob("guards-*.cache")
    cached.unlink()
    os.mkfifo(cached)
    again = run("guards", suite, "--no-workflows", "--cache-dir", cache, "--format", "json")
    assert (again.code, again.kinds()) == (first.code, first.kinds())


# --- unicode ------------------------------------------------------------------------------------------------------


def case_a_command_name_with_a_zero_width_space(tmp_path: Path) -> None:
    """`py\u200btest` is no command bash finds: the step runs no test."""
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED}, command="py\u200btest tests")
    result = run("pytest-audit", root, "--format", "json")
    assert result.code == 1 and result.doc()["scheduled_tests"] == 0


def case_a_test_name_folded_by_nfkc(tmp_path: Path) -> None:
    """Python folds identifiers (NFKC): `test_\ufb01le` is the test `test_file`, which a node id names."""
    body = (
        "import sys\nimport pytest\n\n@pytest.mark.skipif(sys.platform == 'linux', reason='x')\ndef test_\ufb01le():\n    pass\n"
    )
    root = repo(tmp_path, {"tests/test_a.py": body}, command="python -m pytest tests/test_a.py::test_file")
    result = run("pytest-audit", root, "--format", "json")
    assert result.code == 1 and "silent-skip" in result.kinds()


def case_a_pyproject_value_with_a_line_separator(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.specmatrix]\nrunner = "gpu\\u2028::error::x"\n', encoding="utf-8")
    result = run("runners")
    assert result.code in (0, 2) and not COMMAND_LINE.findall(result.out + result.err)


def case_a_skip_reason_with_a_wide_space_command(tmp_path: Path) -> None:
    body = "import sys\nimport pytest\n\n@pytest.mark.skipif(sys.platform == 'linux', reason='x\\n\\u3000::error::forged')\ndef test_a():\n    pass\n"
    _every_format_is_safe(repo(tmp_path, {"tests/test_a.py": body}))


# --- permissions and outputs --------------------------------------------------------------------------------------


def case_an_output_folder_that_is_a_file(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED})
    (tmp_path / "file").write_text("x", encoding="utf-8")
    refused(run("pytest-audit", root, "--output", tmp_path / "file" / "report.txt"))


def case_write_baseline_onto_a_test_file(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED})
    before = (root / "tests" / "test_a.py").read_bytes()
    refused(run("pytest-audit", root, "--write-baseline", root / "tests" / "test_a.py"))
    assert (root / "tests" / "test_a.py").read_bytes() == before


def case_summary_onto_the_workflow(tmp_path: Path) -> None:
    root = repo(tmp_path, {"tests/test_a.py": SKIPPED})
    before = (root / ".github/workflows/ci.yml").read_bytes()
    refused(run("pytest-audit", root, "--summary", root / ".github/workflows/ci.yml"))
    assert (root / ".github/workflows/ci.yml").read_bytes() == before


CASES: dict[str, Callable[[Path], None]] = {
    name.removeprefix("case_").replace("_", "-"): value for name, value in dict(globals()).items() if name.startswith("case_")
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_adversary_finds_no_wrong_verdict(tmp_path: Path, name: str) -> None:
    CASES[name](tmp_path)


def test_the_round_is_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
