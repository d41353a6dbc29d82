"""The gpu session's pytest arguments: one worker per GPU, grouped by kernel configuration, CPU-only tests left out."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _noxfile() -> ModuleType:
    spec = importlib.util.spec_from_file_location("specmatrix_noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


NOXFILE = _noxfile()


class FakeSession:
    """Answers the two probes the way a host with `gpus` GPUs (None: no torch) and an installed plugin would."""

    venv_backend = "none"

    def __init__(self, posargs: list[str], gpus: int | None) -> None:
        self.posargs = posargs
        self.gpus = gpus

    def run(self, *args: str, **_: Any) -> str:
        code = args[-1]
        if code == NOXFILE.GPU_COUNT:
            return "ModuleNotFoundError: No module named 'torch'" if self.gpus is None else f"{self.gpus}\n"
        assert code == NOXFILE.PLUGIN_INSTALLED
        return "True\n"


def _args(posargs: list[str], gpus: int | None) -> list[str]:
    result: list[str] = NOXFILE.gpu_pytest_args(FakeSession(posargs, gpus), "gpu-report/report.json")
    return result


def test_one_worker_per_gpu_grouped_by_configuration() -> None:
    args = _args([], gpus=2)
    assert args[args.index("-n") + 1] == "2"
    assert args[args.index("--dist") + 1] == "loadgroup"


@pytest.mark.parametrize(("posargs", "gpus"), [([], 2), (["-n", "1"], 2), ([], None), (["-k", "sglang"], 0)])
def test_the_cpu_only_tests_stay_out_of_every_gpu_run(posargs: list[str], gpus: int | None) -> None:
    args = _args(posargs, gpus)
    assert "--ignore-glob=tests/gpu/*_cpu.py" in args
    assert args[:3] == ["-m", "pytest", "tests/gpu"]
    assert args[len(args) - len(posargs) :] == posargs  # the user's arguments come last, unchanged


@pytest.mark.parametrize(
    ("posargs", "workers"),
    [
        (["--matrix-workers-per-gpu", "3"], "6"),
        (["--matrix-workers-per-gpu=2"], "4"),
        (["--matrix-workers-per-gpu", "x"], "2"),  # the plugin rejects it with one line; nox does not guess
        (["--matrix-workers-per-gpu"], "2"),
    ],
)
def test_workers_per_gpu_multiplies_the_default_worker_count(posargs: list[str], workers: str) -> None:
    args = _args(posargs, gpus=2)
    assert args[args.index("-n") + 1] == workers


def test_given_workers_and_dist_are_kept() -> None:
    args = _args(["-n", "4", "--dist", "load"], gpus=2)
    assert args.count("-n") == 1 and args.count("--dist") == 1 and args[-4:] == ["-n", "4", "--dist", "load"]


def test_no_gpu_no_workers() -> None:
    assert "-n" not in _args([], gpus=None) and "--dist" not in _args([], gpus=0)


def test_the_ignore_glob_matches_exactly_the_torch_free_files_that_nox_tests_runs() -> None:
    """What the gpu session leaves out is what `nox -s tests` collects and runs without torch."""
    gpu_dir = ROOT / "tests" / "gpu"
    ignored = sorted(p.name for p in gpu_dir.glob("*_cpu.py"))
    assert {"test_cases_cpu.py", "test_contract_cpu.py", "test_isolation_cpu.py", "test_mutations_cpu.py"} <= set(ignored)
    for name in ignored:
        assert 'importorskip("torch")' not in (gpu_dir / name).read_text(encoding="utf-8")
    kept = sorted(p.name for p in gpu_dir.glob("test_*.py") if not p.name.endswith("_cpu.py"))
    torch_tests = sorted(p.name for p in gpu_dir.glob("test_*_torch.py"))
    assert kept == sorted(["test_draft_decode.py", *torch_tests])
    assert {"test_reference_torch.py", "test_verify_torch.py"} <= set(torch_tests)


def test_the_sglang_session_runs_every_torch_test() -> None:
    """The sglang session has CPU torch: the *_torch.py tests run there, so CI covers them."""
    source = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    body = source.split("def sglang(", 1)[1].split("\n@nox.session", 1)[0]
    assert 'glob("test_*_torch.py")' in body and "*torch_tests" in body


def test_collection_under_the_ignore_leaves_no_cpu_test() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/gpu",
            "--ignore-glob=tests/gpu/*_cpu.py",
            "--collect-only",
            "-q",
            "-p",
            "no:randomly",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    assert "test_draft_decode.py::test_kernel_draft_decode[" in out
    assert "_cpu.py::" not in out


class CacheSession:
    """What `bytecode_cache_env` reads from a session: its backend and nox's (relative) cache folder."""

    def __init__(self, venv_backend: str) -> None:
        self.venv_backend = venv_backend
        self.cache_dir = Path(".nox") / ".cache"


def test_tests_session_shares_one_absolute_bytecode_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = NOXFILE.bytecode_cache_env(CacheSession("uv"))
    assert env["PYTHONDONTWRITEBYTECODE"] == ""  # empty: Python writes bytecode again
    prefix = Path(env["PYTHONPYCACHEPREFIX"])
    assert prefix.is_absolute() and prefix == tmp_path / ".nox" / ".cache" / "pycache-tests"
    assert NOXFILE.bytecode_cache_env(CacheSession("none")) == {}  # no venv: the host's own setting stands


class InstallSession:
    """Records installs; its venv lives in a temporary folder."""

    venv_backend = "uv"

    def __init__(self, location: Path) -> None:
        self.virtualenv = type("Venv", (), {"location": str(location)})()
        self.installs: list[tuple[str, ...]] = []

    def install(self, *args: str) -> None:
        self.installs.append(args)

    def log(self, *_: Any) -> None:
        pass


@pytest.mark.parametrize("changed", ["pyproject.toml", "constraints.txt", "arguments"])
def test_a_reused_venv_installs_again_only_when_an_input_changed(tmp_path: Path, monkeypatch, changed: str) -> None:
    inputs = (tmp_path / "pyproject.toml", tmp_path / "constraints.txt")
    for path in inputs:
        path.write_text(f"{path.name}\n", encoding="utf-8")
    monkeypatch.setattr(NOXFILE, "INSTALL_INPUTS", inputs)
    session = InstallSession(tmp_path / "venv")
    (tmp_path / "venv").mkdir()
    NOXFILE.install_unless_current(session, "-e", ".[test]")
    NOXFILE.install_unless_current(session, "-e", ".[test]")
    assert [args[-2:] for args in session.installs] == [("-e", ".[test]")]  # the second run found the stamp
    args = ("-e", ".[test,plot]") if changed == "arguments" else ("-e", ".[test]")
    if changed != "arguments":
        (tmp_path / changed).write_text("pinned differently\n", encoding="utf-8")
    NOXFILE.install_unless_current(session, *args)
    assert len(session.installs) == 2 and session.installs[-1][-2:] == args
    assert all(args[:2] == NOXFILE.CONSTRAINTS for args in session.installs)  # still through the constraints
    NOXFILE.install_unless_current(CacheSession("none"), *args)  # no venv: nothing installed, nothing written
    assert len(session.installs) == 2


@pytest.mark.parametrize(("body", "code"), [("def test_ok():\n    pass\n", 0), ("def test_bad():\n    assert False\n", 1)])
def test_the_hard_exit_runner_keeps_pytests_exit_status(tmp_path: Path, body: str, code: int) -> None:
    """ci/pytest_then_exit.py skips interpreter finalization but must never turn a failure into a pass."""
    (tmp_path / "test_x.py").write_text(body, encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "ci" / "pytest_then_exit.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:specmatrix",
            "test_x.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == code, result.stdout + result.stderr
    assert ("1 passed" if code == 0 else "1 failed") in result.stdout
