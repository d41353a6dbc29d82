"""ci/extract_registrations.py on a small fake sglang checkout, and the in-repository data the planner benchmark reads."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from tests.ci_scripts import ci_script

ROOT = Path(__file__).resolve().parents[2]
EXTRACT = ROOT / "ci" / "extract_registrations.py"
DATA = ROOT / "ci" / "data" / "sglang-registrations-2026-07.json"


def _load(name: str) -> ModuleType:
    return ci_script(name)


BENCH = _load("bench_shards")

FILES = {
    # Both suite forms, a nightly and a disabled registration, and another platform in one file.
    "test/registered/attention/test_trtllm_mha.py": """
        import unittest

        from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci

        register_cuda_ci(est_time=120, suite="stage-b-test-4-gpu-b200")
        register_cuda_ci(60, stage="stage-c", runner_config="4-gpu-b200")
        register_cuda_ci(est_time=900, suite="nightly-4-gpu-b200", nightly=True)
        register_cuda_ci(est_time=30, suite="stage-b-test-4-gpu-b200", disabled="flaky on B200")
        register_amd_ci(est_time=45, suite="stage-b-test-1-gpu-small-amd")


        class TestDecode(unittest.TestCase):
            def test_decode(self):
                pass
        """,
    # A suite computed at run time cannot be read statically: left out, and said so.
    "test/registered/dynamic/test_computed_suite.py": """
        from sglang.test.ci.ci_register import register_cuda_ci

        SUITE = "stage-b-test-" + "1-gpu-large"
        register_cuda_ci(est_time=10, suite=SUITE)
        register_cuda_ci(est_time=15, suite="stage-b-test-1-gpu-large")
        """,
    "test/registered/broken/test_syntax.py": "register_cuda_ci(est_time=1, suite='x'\n",
    "test/registered/utils.py": "def helper():\n    return 1\n",
    # Outside test/registered: never read.
    "test/manual/test_unregistered.py": 'register_cuda_ci(est_time=5, suite="stage-b-test-4-gpu-b200")\n',
    "python/sglang/test/ci/ci_register.py": "def register_cuda_ci(est_time, suite=None, nightly=False, disabled=None, *, stage=None, runner_config=None):\n    pass\n",
}


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "sglang"
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


SCRIPT = _load("extract_registrations")


def extract(*args: str) -> subprocess.CompletedProcess[str]:
    """The script's main() in this process (its output and exit code); the exit-2 test below runs it for real."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = SCRIPT.main(list(args))
    return subprocess.CompletedProcess([str(EXTRACT), *args], code, out.getvalue(), err.getvalue())


def extract_in_a_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXTRACT), *args], capture_output=True, text=True, timeout=120, check=False, cwd=ROOT
    )


def test_extracts_every_cuda_registration_of_the_fake_checkout(checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "regs.json"
    done = extract(str(checkout), "--out", str(out), "--taken", "fake checkout")
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["source"].startswith("fake checkout: cuda registrations")
    assert doc["registrations"] == [
        {
            "backend": "CUDA",
            "file": "test/registered/attention/test_trtllm_mha.py",
            "suite": "stage-b-test-4-gpu-b200",
            "nightly": False,
            "disabled": None,
            "est_time": 120.0,
        },
        {
            "backend": "CUDA",
            "file": "test/registered/attention/test_trtllm_mha.py",
            "suite": "stage-c-test-4-gpu-b200",
            "nightly": False,
            "disabled": None,
            "est_time": 60.0,
        },
        {
            "backend": "CUDA",
            "file": "test/registered/attention/test_trtllm_mha.py",
            "suite": "nightly-4-gpu-b200",
            "nightly": True,
            "disabled": None,
            "est_time": 900.0,
        },
        {
            "backend": "CUDA",
            "file": "test/registered/attention/test_trtllm_mha.py",
            "suite": "stage-b-test-4-gpu-b200",
            "nightly": False,
            "disabled": "flaky on B200",
            "est_time": 30.0,
        },
        {
            "backend": "CUDA",
            "file": "test/registered/dynamic/test_computed_suite.py",
            "suite": "stage-b-test-1-gpu-large",
            "nightly": False,
            "disabled": None,
            "est_time": 15.0,
        },
    ]
    assert "left out: test/registered/broken/test_syntax.py: not valid Python" in done.stderr
    assert "left out: test/registered/dynamic/test_computed_suite.py:4: register_cuda_ci: suite must be a literal" in done.stderr
    assert "5 registrations from 2 files, 2 left out" in done.stdout
    # One registration a line: a regenerated file diffs line by line.
    assert len(out.read_text(encoding="utf-8").splitlines()) == 5 + 5  # {, "source", "registrations": [, ], }


def test_platform_option_keeps_other_platforms(checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "regs.json"
    done = extract(str(checkout), "--out", str(out), "--platform", "amd", "--taken", "fake")
    assert done.returncode == 0, done.stderr
    regs = json.loads(out.read_text(encoding="utf-8"))["registrations"]
    assert [(r["backend"], r["suite"]) for r in regs] == [("AMD", "stage-b-test-1-gpu-small-amd")]


def test_the_benchmark_reads_what_the_script_writes(checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "regs.json"
    assert extract(str(checkout), "--out", str(out), "--taken", "fake").returncode == 0
    (title, pooled), *_ = BENCH.registration_workloads(out, "4-gpu-b200")
    assert "4-gpu-b200" in title
    # Nightly and disabled registrations are not scheduled on pull requests; the 1-gpu-large one is another config.
    assert sorted(i.seconds for i in pooled.items) == [60.0, 120.0]


def test_source_line_names_the_git_commit(checkout: Path, tmp_path: Path) -> None:
    git = ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fake"]):
        subprocess.run([*git, *args], check=True, capture_output=True, timeout=60)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    out = tmp_path / "regs.json"
    assert extract(str(checkout), "--out", str(out)).returncode == 0
    assert json.loads(out.read_text(encoding="utf-8"))["source"].startswith(f"sglang commit {sha} of ")


def test_not_a_checkout_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "regs.json"
    done = extract_in_a_process(str(tmp_path), "--out", str(out))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no test/registered folder" in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()


def test_in_repository_data_is_what_the_benchmark_and_its_readme_say() -> None:
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    regs = doc["registrations"]
    assert "2026-07-20" in doc["source"]
    assert len(regs) == 748 and {r["backend"] for r in regs} == {"CUDA"}
    assert [r["file"] for r in regs] == sorted((r["file"] for r in regs), key=lambda f: Path(f).parts)
    (_, pooled), *_ = BENCH.registration_workloads(DATA, "4-gpu-b200")
    assert len(pooled.items) == 78  # docs/ci.md: "78 files pooled"


def test_benchmark_default_is_the_in_repository_file() -> None:
    assert BENCH.DEFAULT_REGISTRATIONS == DATA
    assert DATA.is_file()


def test_benchmark_refuses_a_malformed_registrations_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"registrations": [{"file": "x.py"}]}', encoding="utf-8")
    assert BENCH.main(["--runners", "cpu", "--shards", "2", "--registrations", str(bad)]) == 2
    assert "not a registrations file" in capsys.readouterr().err
