"""The start-up hook in real child processes of a venv it was installed into with `--install-hook`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.ledger.conftest import B200, ledger_cli, read_records, venv_env

UNITTEST_SCRIPT = """
import unittest

class TestMixed(unittest.TestCase):
    def test_ok(self):
        pass

    @unittest.skip("not today")
    def test_skip(self):
        pass

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise RuntimeError("boom")

    @unittest.expectedFailure
    def test_xfail(self):
        raise ValueError("known")

    @unittest.expectedFailure
    def test_xpass(self):
        pass

    def test_subtests(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertEqual(i, 0)

@unittest.skipIf(True, "class guard")
class TestClassSkip(unittest.TestCase):
    def test_a(self):
        pass

class TestSetUpClassSkip(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("no device")

    def test_b(self):
        pass

if __name__ == "__main__":
    unittest.main()
"""


# venv_env drops PYTEST_ADDOPTS, so the pytest runs leave out hypothesis's plugin themselves (tests/conftest.py says
# why); pytest-benchmark, where a host has it, warns under xdist.
QUIET_PYTEST = ("-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest")


def run(venv: Path, cwd: Path, *args: str, ledger: Path | None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["python3", *args], cwd=cwd, env=venv_env(venv, ledger, **env), capture_output=True, text=True, check=False, timeout=60
    )


def outcomes(ledger: Path) -> dict[str, tuple[str, str]]:
    return {r["test"]: (r["status"], r.get("reason", "")) for r in read_records(ledger) if r["kind"] == "test"}


def test_unittest_outcomes_of_a_script(hook_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_mixed.py").write_text(UNITTEST_SCRIPT, encoding="utf-8")
    ledger = tmp_path / "ledger.jsonl"
    done = run(hook_venv, tmp_path, "test_mixed.py", ledger=ledger, SPECMATRIX_DETECT=B200)
    assert done.returncode == 1
    f = "test_mixed.py"
    assert outcomes(ledger) == {
        f"{f}::TestMixed::test_ok": ("passed", ""),
        f"{f}::TestMixed::test_skip": ("skipped", "not today"),
        f"{f}::TestMixed::test_fail": ("failed", "AssertionError: 1 != 2"),
        f"{f}::TestMixed::test_error": ("error", "RuntimeError: boom"),
        f"{f}::TestMixed::test_xfail": ("xfailed", "ValueError: known"),
        f"{f}::TestMixed::test_xpass": ("xpassed", ""),
        f"{f}::TestMixed::test_subtests": ("failed", "AssertionError: 1 != 0"),
        f"{f}::TestClassSkip::test_a": ("skipped", "class guard"),
        f"{f}::TestSetUpClassSkip": ("skipped", "no device"),
    }
    records = read_records(ledger)
    assert (records[0]["kind"], records[0]["script"]) == ("process", f)
    assert records[-1] | {"pid": 0, "time": 0} == {
        "ledger": 1,
        "runner": {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"},
        "kind": "exit",
        "status": 1,
        "how": "sys.exit",
        "tests": 9,
        "pid": 0,
        "time": 0,
    }


# CPython 3.12.1's unittest exits 5 when every test of a run skipped (3.11.2, 3.11.7 and 3.13.0 exit 0), so
# a file whose every test skips fails there; these cases assert the exit 0 CI sees on the others.
UNITTEST_ALL_SKIPPED_EXITS_5 = pytest.mark.skipif(
    sys.version_info[:3] == (3, 12, 1), reason="CPython 3.12.1's unittest exits 5 when every test skipped"
)


@UNITTEST_ALL_SKIPPED_EXITS_5
def test_module_raising_skiptest(hook_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_mod.py").write_text("import unittest\nraise unittest.SkipTest('needs flashinfer')\n", encoding="utf-8")
    ledger = tmp_path / "ledger.jsonl"
    assert run(hook_venv, tmp_path, "test_mod.py", ledger=ledger).returncode == 1
    assert outcomes(ledger) == {"test_mod.py": ("skipped", "needs flashinfer")}
    assert read_records(ledger)[-1]["how"] == "uncaught SkipTest"
    # Under the unittest loader the same module is one skipped test, named by the file.
    ledger.unlink()
    assert run(hook_venv, tmp_path, "-m", "unittest", "discover", "-p", "test_mod.py", ledger=ledger).returncode == 0
    assert outcomes(ledger) == {"test_mod.py": ("skipped", "needs flashinfer")}


def test_pytest_process(hook_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_p.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_ok():
                pass

            @pytest.mark.skip(reason="mark skip")
            def test_mark():
                pass

            def test_call():
                pytest.skip("call skip")

            @pytest.mark.xfail(reason="known")
            def test_xf():
                assert 0
            """
        ),
        encoding="utf-8",
    )
    (tmp_path / "test_module_skip.py").write_text(
        "import pytest\npytest.skip('no gpu', allow_module_level=True)\n", encoding="utf-8"
    )
    ledger = tmp_path / "ledger.jsonl"
    done = run(hook_venv, tmp_path, "-m", "pytest", "-q", *QUIET_PYTEST, ledger=ledger)
    assert done.returncode == 0, done.stdout
    assert outcomes(ledger) == {
        "test_module_skip.py": ("skipped", "no gpu"),
        "test_p.py::test_ok": ("passed", ""),
        "test_p.py::test_mark": ("skipped", "mark skip"),
        "test_p.py::test_call": ("skipped", "call skip"),
        "test_p.py::test_xf": ("xfailed", "known"),
    }
    assert read_records(ledger)[-1] | {"pid": 0, "time": 0} == read_records(ledger)[-1] | {
        "kind": "exit",
        "status": 0,
        "how": "pytest",
        "tests": 5,
        "pid": 0,
        "time": 0,
    }


def test_unset_variable_loads_nothing_and_a_broken_ledger_never_raises(hook_venv: Path, tmp_path: Path) -> None:
    probe = "import sys; print('matrix' in sys.modules, 'unittest' in sys.modules)"
    assert run(hook_venv, tmp_path, "-c", probe, ledger=None).stdout.split() == ["False", "False"]
    # Set: the hook loads, but unittest is still not imported until the process asks for it.
    assert run(hook_venv, tmp_path, "-c", probe, ledger=tmp_path / "l.jsonl").stdout.split() == ["True", "False"]
    (tmp_path / "test_ok.py").write_text(UNITTEST_SCRIPT.replace("raise", "pass  #"), encoding="utf-8")
    # A ledger path that cannot be opened (a directory): the tests run and report exactly as without the hook.
    done = run(hook_venv, tmp_path, "test_ok.py", ledger=tmp_path)
    plain = run(hook_venv, tmp_path, "test_ok.py", ledger=None)

    def timeless(text: str) -> str:
        return re.sub(r"in \d+\.\d+s", "in Xs", text)

    assert (done.returncode, done.stdout, timeless(done.stderr)) == (plain.returncode, plain.stdout, timeless(plain.stderr))


def test_uninstall_and_reinstall(hook_venv: Path, tmp_path: Path) -> None:
    python = str(hook_venv / "bin" / "python")
    env = venv_env(hook_venv, None)
    args = [python, "-m", "matrix", "ledger"]
    out = subprocess.run([*args, "--uninstall-hook"], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("specmatrix ledger hook removed: ")
    ledger = tmp_path / "ledger.jsonl"
    (tmp_path / "s.py").write_text("import unittest\nunittest.main(module=None, argv=['x'], exit=False)\n", encoding="utf-8")
    run(hook_venv, tmp_path, "s.py", ledger=ledger)
    assert not ledger.exists()
    out = subprocess.run([*args, "--uninstall-hook"], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("specmatrix ledger hook not installed: ")
    for expected in ("installed", "already installed"):
        out = subprocess.run([*args, "--install-hook"], env=env, capture_output=True, text=True, check=True).stdout
        assert out.startswith(f"specmatrix ledger hook {expected}: ")
    run(hook_venv, tmp_path, "s.py", ledger=ledger)
    assert [r["kind"] for r in read_records(ledger)] == ["process", "exit"]


def test_concurrent_processes_lose_nothing(hook_venv: Path, tmp_path: Path) -> None:
    script = tmp_path / "test_many.py"
    script.write_text(
        "import unittest\n"
        "class T(unittest.TestCase):\n"
        + "".join(f"    def test_{i}(self):\n        pass\n" for i in range(300))
        + "unittest.main()\n",
        encoding="utf-8",
    )
    ledger = tmp_path / "ledger.jsonl"
    env = venv_env(hook_venv, ledger)
    children = [subprocess.Popen(["python3", str(script)], env=env, stderr=subprocess.DEVNULL) for _ in range(4)]
    assert [c.wait(timeout=60) for c in children] == [0, 0, 0, 0]
    records = read_records(ledger)  # every line is whole JSON
    assert len(records) == 4 * (300 + 2)
    per_pid = {c.pid: sum(1 for r in records if r["pid"] == c.pid and r["kind"] == "test") for c in children}
    assert per_pid == {c.pid: 300 for c in children}


SLOW_SCRIPT = """
import time
import unittest

from ci_helpers import register_cuda_ci


register_cuda_ci(est_time=10, suite="base-b-test-4-gpu-b200")


class TestSlow(unittest.TestCase):
    def test_1_fast(self):
        pass

    @unittest.skip("not on this runner")
    def test_2_skipped(self):
        pass

    def test_3_hangs(self):
        time.sleep(60)


if __name__ == "__main__":
    unittest.main()
"""


def test_sigkill_mid_run_leaves_a_ledger_the_command_reports(
    hook_venv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "ci_helpers.py").write_text("def register_cuda_ci(*a, **k):\n    pass\n", encoding="utf-8")
    (suite / "test_slow.py").write_text(SLOW_SCRIPT, encoding="utf-8")
    ledger = tmp_path / "ledger.jsonl"
    env = venv_env(hook_venv, ledger, SPECMATRIX_DETECT=B200, PYTHONPATH=str(suite))
    child = subprocess.Popen(["python3", "test_slow.py", "-f"], cwd=suite, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (ledger.exists() and len(ledger.read_bytes().splitlines()) >= 3):
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    # A writer killed in the middle of a line leaves a torn tail; it is reported, not fatal.
    with ledger.open("ab") as handle:
        handle.write(b'{"ledger":1,"runner":{"source":"SPEC')
    assert [r["kind"] for r in read_records_but_last(ledger)] == ["process", "test", "test"]
    code, out, err = ledger_cli(capsys, ledger, "--root", suite)
    assert (code, err) == (1, "")
    assert "error: no-exit on 4-gpu-b200" in out
    assert (
        f"process {child.pid} started ({ledger}:1) and never recorded its exit: killed or crashed after 2 test outcome(s)" in out
    )
    assert "error: silent-skip test_slow.py::TestSlow::test_2_skipped on 4-gpu-b200" in out
    assert f"{ledger}:4: torn last line (not JSON" in out
    assert "1 ledger(s), 1 process(es); 4-gpu-b200: 1/1 registered files ran (1 passed, 1 skipped)" in out


def read_records_but_last(ledger: Path) -> list[dict[str, object]]:
    lines = ledger.read_text(encoding="utf-8").splitlines()[:-1]
    return [json.loads(line) for line in lines]


def test_the_pth_line_swallows_a_hook_that_cannot_load(tmp_path: Path) -> None:
    """With the variable set but `matrix` not importable (no site-packages: -S), the line stays silent."""
    from matrix.ledger.pth import PTH_LINE

    assert PTH_LINE.startswith("import os;") and PTH_LINE.count("\n") == 1
    env = {"PATH": os.environ.get("PATH", ""), "SPECMATRIX_LEDGER": str(tmp_path / "l.jsonl")}
    code = PTH_LINE.strip() + "\nimport sys\nprint('matrix' in sys.modules)"
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\n", "")
    assert not (tmp_path / "l.jsonl").exists()


@pytest.mark.integration  # a nested xdist session: slow, run by `nox -s integration`
def test_pytest_xdist_records_each_test_once(hook_venv: Path, tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('i', range(6))\ndef test_i(i):\n    if i % 2:\n        pytest.skip('odd')\n",
        encoding="utf-8",
    )
    ledger = tmp_path / "ledger.jsonl"
    done = run(hook_venv, tmp_path, "-m", "pytest", "-q", "-n", "2", *QUIET_PYTEST, ledger=ledger)
    assert done.returncode == 0, done.stdout
    tests = [r["test"] for r in read_records(ledger) if r["kind"] == "test"]
    assert sorted(tests) == sorted(f"test_x.py::test_i[{i}]" for i in range(6))
    assert {t: s for t, (s, _) in outcomes(ledger).items()} == {
        f"test_x.py::test_i[{i}]": "skipped" if i % 2 else "passed" for i in range(6)
    }
