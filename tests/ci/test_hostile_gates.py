"""Gates, caches and ledgers that once hid a failure: every format says what the exit code says.

- A baseline entry that expired fails the run (exit 1); its finding is no longer acknowledged, so JUnit counts it as
  a failure, SARIF carries it as a result and the annotations name it.
- The guard audit's results cache is keyed by every CI file its schedule read: an edit to a local action outside
  `.github/actions` (one at the repository root, `uses: ./`) is seen on the next run.
- A ledger whose process line is missing or corrupt still shows a process that never recorded its exit (`no-exit`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.ci.cli_run import clean_environment, run, write

WORKFLOW = "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: python -m pytest tests\n"
SKIPPED = (
    "import sys\nimport pytest\n\n@pytest.mark.skipif(sys.platform == 'linux', reason='never here')\ndef test_gone():\n    pass\n"
)


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clean_environment(monkeypatch, tmp_path)


# --- an expired baseline entry ---------------------------------------------------------------------------------


def _expired_baseline(tmp_path: Path, *argv: object) -> Path:
    """`argv` run once with --write-baseline, then the entries' expiry set in the past."""
    baseline = tmp_path / "baseline.json"
    code, _, _ = run(*argv, "--write-baseline", baseline)
    assert code == 0
    doc = json.loads(baseline.read_text(encoding="utf-8"))
    assert doc["entries"]
    for entry in doc["entries"]:
        entry["expires"] = "2020-01-01"
    baseline.write_text(json.dumps(doc), encoding="utf-8")
    return baseline


def _formats_agree(argv: tuple[object, ...], baseline: Path) -> None:
    code, out, _ = run(*argv, "--baseline", baseline, "--format", "junit")
    assert code == 1
    suite = ET.fromstring(out)
    assert int(suite.get("failures") or 0) >= 1 and suite.findall(".//failure")
    code, out, _ = run(*argv, "--baseline", baseline, "--format", "sarif")
    assert code == 1 and json.loads(out)["runs"][0]["results"]
    code, out, _ = run(*argv, "--baseline", baseline, "--format", "github")
    assert code == 1 and any(line.startswith("::error ") for line in out.splitlines())
    code, out, _ = run(*argv, "--baseline", baseline, "--format", "json")
    assert code == 1 and json.loads(out)["failing"] >= 1


def test_pytest_audit_shows_the_finding_of_an_expired_entry_in_every_format(tmp_path: Path) -> None:
    root = write(tmp_path / "repo", {".github/workflows/ci.yml": WORKFLOW, "tests/test_s.py": SKIPPED, ".git/HEAD": ""})
    argv = ("pytest-audit", root)
    _formats_agree(argv, _expired_baseline(tmp_path, *argv))


REGISTERED = """\
import unittest

from ci_helpers import is_sm90_supported, register_cuda_ci

register_cuda_ci(est_time=30, suite="base-b-test-4-gpu-b200")


@unittest.skipIf(not is_sm90_supported(), "r")
class TestKernel(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)
"""


def test_guards_shows_the_finding_of_an_expired_entry_in_every_format(tmp_path: Path) -> None:
    root = write(tmp_path / "suite", {"test_s.py": REGISTERED})
    argv = ("guards", root, "--no-workflows", "--no-cache")
    _formats_agree(argv, _expired_baseline(tmp_path, *argv))


# --- the guard audit's cache and a local action at the repository root -----------------------------------------

ROOT_ACTION = "runs:\n  using: composite\n  steps:\n    - shell: bash\n      run: cd test && python3 run_suite.py --hw cuda --suite {suite}\n"
USES_ROOT = "on: push\njobs:\n  j:\n    runs-on: 1-gpu-h100\n    steps:\n      - uses: {uses}\n"
PLAIN_REGISTERED = (
    REGISTERED.replace("base-b-test-4-gpu-b200", "stage-a").replace('@unittest.skipIf(not is_sm90_supported(), "r")\n', "")
    + '\n\nif __name__ == "__main__":\n    unittest.main()\n'
)


@pytest.mark.parametrize("uses", ["./", "./.", "'./'", "./tools/../"])
def test_an_edited_local_action_at_the_root_is_seen_through_the_cache(tmp_path: Path, uses: str) -> None:
    root = write(
        tmp_path / "repo",
        {
            ".github/workflows/ci.yml": USES_ROOT.format(uses=uses),
            "action.yml": ROOT_ACTION.format(suite="stage-a"),
            "tools/.keep": "",
            "test/registered/test_s.py": PLAIN_REGISTERED,
        },
    )
    first = run("guards", root / "test" / "registered", "--format", "json")
    assert first[0] == 0, first
    (root / "action.yml").write_text(ROOT_ACTION.format(suite="stage-b"), encoding="utf-8")
    warm = run("guards", root / "test" / "registered", "--format", "json")
    cold = run("guards", root / "test" / "registered", "--format", "json", "--no-cache")
    assert (warm[0], json.loads(warm[1])["findings"]) == (cold[0], json.loads(cold[1])["findings"])
    assert warm[0] == 1


# --- a ledger whose process line is missing or corrupt ----------------------------------------------------------

B200 = {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}
LEDGER_SUITE = REGISTERED.replace('@unittest.skipIf(not is_sm90_supported(), "r")\n', "")


def _line(kind: str, **fields: Any) -> str:
    return json.dumps({"ledger": 1, "runner": B200, "kind": kind, "pid": 7, "time": 1.0, **fields}) + "\n"


@pytest.mark.parametrize(
    "process",
    [
        _line("process", script="test_s.py", argv=[]),
        "",
        '{"ledger": 1, "kind": "process", "pid": 7, "time": 1.0, "script": \n',
        _line("process", script="/usr/bin/pytest", argv=["test_s.py"]),
    ],
    ids=["process-line", "no-process-line", "corrupt-process-line", "process-of-pytest"],
)
def test_a_process_that_never_recorded_its_exit_is_no_exit(tmp_path: Path, process: str) -> None:
    root = write(tmp_path / "suite", {"test_s.py": LEDGER_SUITE})
    test = _line("test", file="test_s.py", test="test_s.py::TestKernel::test_decode", status="passed")
    ledger = tmp_path / "l.jsonl"
    ledger.write_text(process + test, encoding="utf-8")
    code, out, _ = run("ledger", ledger, "--root", root, "--format", "json")
    kinds = [f["kind"] for f in json.loads(out)["findings"]]
    assert code == 1 and "no-exit" in kinds, kinds
