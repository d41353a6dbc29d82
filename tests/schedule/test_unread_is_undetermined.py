"""What the schedule cannot read never becomes "does not run": pytest-audit gives `undetermined` for a test whose
only possible schedule passes through an unread job, and a runner without a CUDA profile is never a skip."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.cli.main import main

GUARDED = (
    "import pytest\nimport torch\n\n"
    "@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a GPU')\n"
    "def test_kernel():\n    pass\n"
)
PLAIN = "def test_plain():\n    pass\n"


def audit(tmp_path: Path, workflow: str, tests: dict[str, str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    root = tmp_path / "repo"
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(workflow, encoding="utf-8")
    for name, text in tests.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    code = main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    return code, json.loads(capsys.readouterr().out)


CALLS_ELSEWHERE = """on: [pull_request]
jobs:
  gpu:
    uses: some-org/ci-kit/.github/workflows/run-gpu.yml@main
    with:
      gpu: a100
"""


def test_a_test_only_an_unread_job_may_run_is_undetermined_not_unscheduled(tmp_path, capsys):
    code, doc = audit(tmp_path, CALLS_ELSEWHERE, {"tests/test_k.py": GUARDED}, capsys)
    assert doc["counts"]["unscheduled"] == {}
    assert doc["undetermined_unread"] == 1 and doc["undetermined"] == 0 and doc["unread"]
    assert any("could not be read" in a and "tests/test_k.py" in a for a in doc["assumptions"])
    assert code == 0


MACOS_ONLY = """on: [pull_request]
jobs:
  mac:
    runs-on: macos-14
    steps:
      - run: pytest tests
  rack:
    runs-on: [self-hosted, rack-nine]
    steps:
      - run: pytest tests/test_k.py
"""


def test_a_runner_with_no_cuda_profile_is_never_a_skip_and_never_a_traceback(tmp_path, capsys):
    code, doc = audit(tmp_path, MACOS_ONLY, {"tests/test_k.py": GUARDED, "tests/test_p.py": PLAIN}, capsys)
    assert code == 0, doc["findings"]
    assert doc["findings"] == []
    assert doc["scheduled_tests"] == 2 and doc["undetermined"] == 1  # the guarded test on macOS / an unknown rack
    assert [u["label"] for u in doc["unknown_labels"]] == ["rack-nine"]


REGISTERED = """import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="stage-q-test-1-gpu")


class TestQ(unittest.TestCase):
    def test_q(self):
        self.assertTrue(True)
"""
STAGES = """on: pull_request
jobs:
  stage-p:
    runs-on: 1-gpu-h100
    steps:
      - run: python3 run_suite.py --hw cuda --suite stage-p-test-1-gpu
{extra}"""
HIDDEN = """  stage-hidden:
    strategy:
      matrix: ${{ fromJSON('{"s":[1],"include":7}') }}
    runs-on: 1-gpu-h100
    steps:
      - run: python3 run_suite.py --hw cuda --suite stage-q-test-1-gpu
"""


@pytest.mark.parametrize(("extra", "kind"), [("", "unscheduled"), (HIDDEN, "undetermined")])
def test_guards_give_undetermined_for_a_suite_only_an_unread_job_may_run(tmp_path, capsys, extra, kind):
    root = tmp_path / "repo"
    (root / "test" / "registered").mkdir(parents=True)
    (root / "test" / "registered" / "test_q.py").write_text(REGISTERED, encoding="utf-8")
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "ci.yml").write_text(STAGES.format(extra=extra), encoding="utf-8")
    main(["guards", str(root / "test" / "registered"), "--no-cache", "--format", "json", "--show", "info"])
    doc = json.loads(capsys.readouterr().out)
    kinds = {f["kind"] for f in doc["findings"] if f["path"].endswith("test_q.py")}
    assert kind in kinds and ({"unscheduled", "undetermined"} - {kind}).isdisjoint(kinds)


PARKED = (
    "import pytest\n\n"
    "@pytest.mark.skip(reason='parked while the widget is rewritten')\n"
    "def test_parked():\n    pass\n\n"
    "def test_parked_inside():\n    if True:\n        pass\n"
)


def test_an_unconditional_skip_skips_on_a_runner_with_no_cuda_profile_too(tmp_path, capsys):
    # Only the macOS job and an unknown rack run it: no profile, but `mark.skip` reads no runner fact.
    code, doc = audit(tmp_path, MACOS_ONLY, {"tests/test_k.py": PARKED}, capsys)
    skips = [f for f in doc["findings"] if f["kind"] == "disabled-by-skip"]
    assert [f["test"] for f in skips] == ["tests/test_k.py::test_parked"]
    assert skips[0]["guard_class"] == "unconditional"
    assert doc["undetermined"] == 0 and code == 0  # a deliberate skip is a warning
