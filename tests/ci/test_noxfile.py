"""The gpu session's pytest arguments: one worker per GPU, grouped by kernel configuration, CPU-only tests left out."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.ci_scripts import noxfile

ROOT = Path(__file__).resolve().parents[2]
NOXFILE = noxfile()


class FakeSession:
    """Answers the two probes the way a host with `gpus` GPUs (None: no torch) and an installed plugin would, and
    records each probe it was asked to run."""

    def __init__(self, posargs: list[str], gpus: int | None, venv_backend: str = "none") -> None:
        self.posargs = posargs
        self.gpus = gpus
        self.venv_backend = venv_backend
        self.probes: list[str] = []

    def run(self, *args: str, **_: Any) -> str:
        code = args[-1]
        self.probes.append(code)
        if code == NOXFILE.GPU_COUNT:
            return "ModuleNotFoundError: No module named 'torch'" if self.gpus is None else f"{self.gpus}\n"
        assert code == NOXFILE.PLUGIN_INSTALLED
        return "True\n"

    def error(self, message: str) -> None:
        raise SystemExit(message)


@pytest.fixture(autouse=True)
def _no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests say what NVML answers; none reads this machine's driver."""
    monkeypatch.setattr(NOXFILE, "_nvml_gpus", lambda env: None)
    monkeypatch.delenv(NOXFILE.GPUS_ENV, raising=False)


def _args(posargs: list[str], gpus: int | None) -> list[str]:
    result: list[str] = NOXFILE.gpu_pytest_args(FakeSession(posargs, gpus), "gpu-report/report.json")
    return result


def test_no_torch_probe_when_the_job_gives_the_gpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """SPECMATRIX_GPUS=3: three workers and no process that imports torch (the probe was 5-6 s of a warm run)."""
    monkeypatch.setenv(NOXFILE.GPUS_ENV, "3")
    session = FakeSession([], gpus=1)
    args = NOXFILE.gpu_pytest_args(session, "r.json")
    assert args[args.index("-n") + 1] == "3" and NOXFILE.GPU_COUNT not in session.probes


def test_no_torch_probe_when_nvml_counts_the_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NOXFILE, "_nvml_gpus", lambda env: 2)
    session = FakeSession(["--matrix-workers-per-gpu", "4"], gpus=1)
    args = NOXFILE.gpu_pytest_args(session, "r.json")
    assert args[args.index("-n") + 1] == "8" and session.probes == []  # no venv: the plugin is asked in-process


def test_the_plugin_probe_runs_only_in_a_venv() -> None:
    """With a venv pytest runs another interpreter: only a process of that interpreter can say what it has."""
    session = FakeSession(["-n", "1"], gpus=1, venv_backend="uv")
    NOXFILE.gpu_pytest_args(session, "r.json")
    assert session.probes == [NOXFILE.PLUGIN_INSTALLED]


@pytest.mark.parametrize("value", ["two", "-1", "1e3", "9999"])
def test_a_bad_gpu_count_is_refused(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(NOXFILE.GPUS_ENV, value)
    with pytest.raises(SystemExit, match=f"SPECMATRIX_GPUS must be a GPU count, not {value!r}"):
        NOXFILE.gpu_pytest_args(FakeSession([], gpus=1), "r.json")


@pytest.mark.parametrize(("visible", "count"), [(None, 4), ("0", 1), ("2,0", 2), ("3,7", 1), ("GPU-1234", None)])
def test_nvml_count_follows_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch, visible: str | None, count: int | None) -> None:
    """The count through the stdlib-only module loaded by path, over a host NVML says has four GPUs."""
    monkeypatch.undo()  # the real _nvml_gpus
    import matrix.gpu.nvmlanswers as nvml

    four = tuple(nvml.Gpu(capability=(9, 0), name="NVIDIA H200") for _ in range(4))
    real_loader = importlib.util.spec_from_file_location
    seen: list[str] = []

    def loader(name: str, path: Path) -> Any:
        spec = real_loader(name, path)
        seen.append(str(path))
        assert spec is not None and spec.loader is not None
        exec_module = spec.loader.exec_module

        def patched(module: ModuleType) -> None:
            exec_module(module)
            module.read_nvml = lambda: four  # type: ignore[attr-defined]

        spec.loader.exec_module = patched  # type: ignore[method-assign]
        return spec

    monkeypatch.setattr(importlib.util, "spec_from_file_location", loader)
    monkeypatch.delitem(sys.modules, "specmatrix_nvml_count", raising=False)
    env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    assert NOXFILE._nvml_gpus(env) == count
    assert seen == [str(NOXFILE.NVML_MODULE)]
    sys.modules.pop("specmatrix_nvml_count", None)  # the stand-in answer stays in this test


def test_one_worker_per_gpu_grouped_by_configuration() -> None:
    args = _args([], gpus=2)
    assert args[args.index("-n") + 1] == "2"
    assert args[args.index("--dist") + 1] == "loadgroup"


@pytest.mark.parametrize(("posargs", "gpus"), [([], 2), (["-n", "1"], 2), ([], None), (["-k", "sglang"], 0)])
def test_every_gpu_run_selects_the_gpu_marker(posargs: list[str], gpus: int | None) -> None:
    args = _args(posargs, gpus)
    assert args[:5] == ["-m", "pytest", "tests/gpu", "-m", "gpu"]
    assert not any(a.startswith("--ignore") for a in args)
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


def unmarked_needs(folder: Path) -> list[str]:
    """Test files that import torch or sglang (or touch a GPU) without the marker that says so."""
    needs = {'importorskip("torch")': "requires_torch", 'importorskip("sglang")': "requires_sglang"}
    missing = []
    for path in sorted(folder.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        missing += [
            f"{path.name}: {marker}" for needle, marker in needs.items() if needle in text and f"mark.{marker}" not in text
        ]
    return missing


def test_every_gpu_test_file_carries_the_markers_of_what_it_needs() -> None:
    """What `nox -s tests` runs without torch is exactly the unmarked files; the others say what they need."""
    gpu_dir = ROOT / "tests" / "gpu"
    assert unmarked_needs(gpu_dir) == []
    assert not [p.name for p in gpu_dir.glob("test_*_cpu.py")] + [p.name for p in gpu_dir.glob("test_*_torch.py")]
    marked = sorted(p.name for p in gpu_dir.glob("test_*.py") if "mark.requires_torch" in p.read_text(encoding="utf-8"))
    assert {"test_reference.py", "test_verify.py", "test_runner.py", "test_verify_prefix.py"} <= set(marked)


def test_a_torch_test_without_its_marker_is_caught(tmp_path: Path) -> None:
    (tmp_path / "test_planted.py").write_text('import pytest\n\ntorch = pytest.importorskip("torch")\n', encoding="utf-8")
    (tmp_path / "test_fine.py").write_text(
        'import pytest\n\npytestmark = pytest.mark.requires_torch\ntorch = pytest.importorskip("torch")\n', encoding="utf-8"
    )
    assert unmarked_needs(tmp_path) == ["test_planted.py: requires_torch"]


def test_the_sglang_session_runs_every_torch_test() -> None:
    """The sglang session has CPU torch: the requires_torch tests of tests/gpu run there, so CI covers them."""
    source = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    body = source.split("def sglang(", 1)[1].split("\n@nox.session", 1)[0]
    assert '"tests/gpu", *TORCH_CPU_TESTS' in body
    assert NOXFILE.TORCH_CPU_TESTS == ("-m", "requires_torch")


def test_the_gpu_marker_selects_only_the_gpu_cells() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/gpu", "-m", "gpu", "--collect-only", "-q", "-p", "no:randomly"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    items = [line for line in out.splitlines() if "::" in line]
    assert any(line.startswith("tests/gpu/test_draft_decode.py::test_kernel_draft_decode[") for line in items)
    assert all(line.startswith("tests/gpu/test_draft_decode.py::") for line in items)


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


@pytest.mark.parametrize("given", [None, "/var/cache/py"])
def test_gpu_sessions_keep_bytecode_and_every_jit_cache_on_any_backend(tmp_path, monkeypatch, given) -> None:
    """Even without a venv (the CI job's and the GPU host's way) and under PYTHONDONTWRITEBYTECODE, the GPU sessions
    write bytecode, into the session's cache folder or the prefix the caller gave, and never beside the sources;
    the JIT caches each get a folder unless given (torch.compile's shown)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    for name in ("PYTHONPYCACHEPREFIX", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE"):
        monkeypatch.delenv(name, raising=False)
    if given:
        monkeypatch.setenv("PYTHONPYCACHEPREFIX", given)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    env = NOXFILE.gpu_session_env(CacheSession("none"))
    assert env["PYTHONDONTWRITEBYTECODE"] == ""
    assert env["PYTHONPYCACHEPREFIX"] == (given or str(tmp_path / ".nox" / ".cache" / "pycache-gpu"))
    base = tmp_path / "xdg" / "specmatrix"
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(base / "inductor") and env["TRITON_CACHE_DIR"] == str(base / "triton")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/jit/inductor")
    assert NOXFILE.gpu_session_env(CacheSession("none"))["TORCHINDUCTOR_CACHE_DIR"] == "/jit/inductor"


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


def test_tests_pythons_finds_every_other_cpython_3_11_or_newer(tmp_path: Path, monkeypatch) -> None:
    """By name only (no interpreter started): pyenv's 3.12 and 3.13 are found, 3.10 and the running one are not."""
    versions = tmp_path / "versions"
    for version in ("3.10.13", "3.12.1", "3.13.0"):
        exe = versions / version / "bin" / "python3"
        exe.parent.mkdir(parents=True)
        exe.write_text("", encoding="utf-8")
        exe.chmod(0o755)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    found = NOXFILE.other_pythons()
    assert [p for p in found if p.startswith(str(tmp_path))] == [
        str(versions / v / "bin" / "python3") for v in ("3.12.1", "3.13.0")
    ]
    assert str(Path(sys.executable).resolve()) not in [str(Path(p).resolve()) for p in found]


H100 = NOXFILE._nvml_module().Gpu(capability=(9, 0), name="NVIDIA H100")


@pytest.mark.parametrize(
    ("env", "nvml", "driver", "refused"),
    [
        ({}, "no NVML (libnvidia-ml.so.1: cannot open shared object file)", False, "no NVIDIA driver"),
        ({}, (), False, "NVML counts no GPU"),
        ({"CUDA_VISIBLE_DEVICES": "5"}, (H100,), True, "hides all 1 GPU(s)"),
        ({"SPECMATRIX_GPUS": "0"}, (H100,), True, "SPECMATRIX_GPUS is 0"),
        ({}, (H100,), True, None),
        ({"SPECMATRIX_GPUS": "2"}, "no NVML", False, None),  # the job says how many: no probe
        ({}, "NVML did not start (nvmlInit_v2 returned NVML error 9)", True, None),  # a driver is there: let the run say
    ],
)
def test_a_gpu_session_refuses_a_host_without_an_nvidia_gpu(
    capsys: pytest.CaptureFixture[str], env: dict[str, str], nvml: Any, driver: bool, refused: str | None
) -> None:
    probes = {"read_nvml": lambda: nvml, "driver_present": lambda: driver}
    if refused is None:
        assert NOXFILE.gpu_host_posargs("gpu", ["-k", "x"], env, **probes) == ["-k", "x"]
        assert capsys.readouterr().err == ""
        return
    with pytest.raises(SystemExit) as stopped:
        NOXFILE.gpu_host_posargs("gpu", ["-k", "x"], env, **probes)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("nox -s gpu: no NVIDIA GPU on this host (") and refused in err
    assert "`nox -s gpu -- --force` or SPECMATRIX_GPU_FORCE=1 installs and runs anyway" in err


@pytest.mark.parametrize(("posargs", "env"), [(["--force", "-k", "x"], {}), (["-k", "x"], {"SPECMATRIX_GPU_FORCE": "1"})])
def test_force_installs_on_any_host_and_is_not_passed_to_pytest(posargs: list[str], env: dict[str, str]) -> None:
    probes = {"read_nvml": lambda: "no NVML", "driver_present": lambda: False}
    assert NOXFILE.gpu_host_posargs("gpu", posargs, env, **probes) == ["-k", "x"]


@pytest.mark.parametrize("session", ["gpu", "bench", "gpu-mutations"])
def test_the_gpu_sessions_exit_2_before_installing_on_a_cpu_host(session: str, tmp_path: Path) -> None:
    """End to end through nox: one line, exit 2, and no install (no venv is made with the `none` backend)."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SPECMATRIX_")}, "SPECMATRIX_GPUS": "0"}
    done = subprocess.run(
        [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "-s", session, "--force-venv-backend", "none"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    refusal = [line for line in done.stderr.splitlines() if line.startswith(f"nox -s {session}: ")]
    assert len(refusal) == 1 and "no NVIDIA GPU on this host (SPECMATRIX_GPUS is 0)" in refusal[0]
    assert "Traceback" not in done.stderr and "install" not in done.stderr.replace("nothing installed", "").replace(
        "installs and runs", ""
    )
