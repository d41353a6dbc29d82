"""One import per host on CPU: xdist workers forked from the preloading server, and the plain path when unsafe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matrix.gpu.forkserver import PRELOAD_ENV, SOCKET_ENV, forked_args

ROOT = Path(__file__).resolve().parents[2]
PROBE = "import os\nSERVER_PID = os.getpid()\nHEAP = [[k] for k in range(100)]\n"
# A torch stand-in with lazy CUDA initialisation, and a library that asks for the device at import (what a preload
# must never do before fork: flashinfer 0.7.2 does, docs/gpu.md).
LAZY_TORCH = """
import types
cuda = types.ModuleType("torch.cuda")
cuda.state = {"initialised": False}
def _lazy_init():
    cuda.state["initialised"] = True
def get_device_capability():
    cuda._lazy_init()
    return (9, 0)
cuda._lazy_init = _lazy_init
cuda.get_device_capability = get_device_capability
cuda.is_initialized = lambda: cuda.state["initialised"]
"""
EAGER_LIB = "import torch\nCAPABILITY = torch.cuda.get_device_capability()\n"
# A library that catches everything around its device query and caches a degraded answer.
SWALLOWING_LIB = (
    "import torch\ntry:\n    CAPABILITY = torch.cuda.get_device_capability()\nexcept BaseException:\n    CAPABILITY = None\n"
)
TEST = """
import os, sys

def test_worker_holds_the_preloaded_module():
    probe = sys.modules.get("specmatrix_probe")
    assert probe is not None, "not preloaded"
    assert probe.SERVER_PID == os.getppid() != os.getpid()
    import gc  # the preloaded heap is frozen: a worker's collections do not walk it

    assert gc.get_freeze_count() >= len(probe.HEAP)
    assert not any(obj is probe.HEAP[0] for obj in gc.get_objects())

def test_runs_on_an_xdist_worker():
    assert os.environ.get("PYTEST_XDIST_WORKER")

def test_the_test_module_is_rewritten():
    assert "@pytest_ar" in globals()

def test_a_package_left_to_the_worker_imports_there():
    if "deep_pkg.inner.uses" not in os.environ.get("SPECMATRIX_FORK_PRELOAD", ""):
        return
    assert "deep_pkg" not in sys.modules
    import deep_pkg.inner.uses

    assert deep_pkg.inner.uses.CAPABILITY == (9, 0)
"""


def _run(tmp_path: Path, preload: str) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    (tmp_path / "specmatrix_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "torch.py").write_text(LAZY_TORCH, encoding="utf-8")
    (tmp_path / "eager_lib.py").write_text(EAGER_LIB, encoding="utf-8")
    (tmp_path / "swallowing_lib.py").write_text(SWALLOWING_LIB, encoding="utf-8")
    (tmp_path / "test_probe.py").write_text(TEST, encoding="utf-8")
    env = {**os.environ, PRELOAD_ENV: preload, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    status = tmp_path / "status.json"
    command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--status", str(status), "--"]
    command += ["-n", "2", "-p", "no:cacheprovider", "-p", "no:benchmark", "-W", "error", "-q", "test_probe.py"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    return done, json.loads(status.read_text(encoding="utf-8"))


def test_workers_are_forked_from_the_preloading_server(tmp_path: Path) -> None:
    """With a pytest plugin's package among the preloads (hypothesis here; anyio came in through transformers on the
    H200): the worker re-imports it, so pytest can still rewrite it (else: a warning, an error under -W error). pytest
    itself preloaded (as PRELOAD does) leaves the test module's asserts rewritten."""
    done, status = _run(tmp_path, "pytest,specmatrix_probe,torch,hypothesis")
    assert status["state"] == "ready", status
    assert isinstance(status["frozen_objects"], int) and status["frozen_objects"] > 100, status
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "4 passed" in done.stdout


def test_an_import_that_asks_for_cuda_is_left_to_the_workers(tmp_path: Path) -> None:
    """flashinfer 0.7.2's case, inside a package (as sglang imports it): the import is cut short before CUDA starts,
    named with its line, the half-imported package is dropped, and the server still forks with what came before; the
    worker imports the package itself, with CUDA (the last test: its device query answered)."""
    package = tmp_path / "deep_pkg"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import inner\n", encoding="utf-8")
    (package / "inner" / "__init__.py").write_text("from deep_pkg.inner import uses\n", encoding="utf-8")
    (package / "inner" / "uses.py").write_text("import eager_lib\nCAPABILITY = eager_lib.CAPABILITY\n", encoding="utf-8")
    done, status = _run(tmp_path, "specmatrix_probe,torch,deep_pkg.inner.uses,specmatrix_late")
    assert status["state"] == "ready", status
    deferred = status["deferred"]
    assert any("eager_lib.py:2" in line for line in deferred["deep_pkg.inner.uses"]), status  # type: ignore[index]
    assert deferred["specmatrix_late"] == ["after deep_pkg.inner.uses"], status  # type: ignore[index]
    assert done.returncode == 0, done.stdout[-3000:]


def test_a_library_that_swallows_the_cut_off_keeps_the_plain_path(tmp_path: Path) -> None:
    """Planted: a library catches the cut-off around its device query (it would cache a degraded answer); the server
    refuses to fork and names the import and its line; the workers import for themselves (the probe is then not
    preloaded, so that one test fails: proof of the plain path)."""
    done, status = _run(tmp_path, "specmatrix_probe,torch,swallowing_lib")
    assert status["state"] == "unsafe" and "swallowing_lib" in str(status["reason"]), status
    assert "swallowing_lib.py:3" in str(status["reason"]), status
    assert "plain path" in done.stdout
    assert "1 failed, 3 passed" in done.stdout, done.stdout[-3000:]
    assert "not preloaded" in done.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-n", "4", "x"], ["x", "--tx", "4*popen//python=C", "--dist", "load"]),
        (["-n4", "--dist", "loadgroup"], ["--dist", "loadgroup", "--tx", "4*popen//python=C"]),
        (["--numprocesses=2", "-q"], ["-q", "--tx", "2*popen//python=C", "--dist", "load"]),
        (["-q"], None),
        (["-n", "auto"], None),
    ],
)
def test_the_worker_count_becomes_forked_workers(args: list[str], expected: list[str] | None) -> None:
    assert forked_args(args, Path("C")) == expected


def _host_server(cwd: Path, sock: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`serve --socket SOCK` started, and waited for until its status file is written (or it exited)."""
    command = [sys.executable, "-m", "matrix.gpu.forkserver", "serve", "--socket", str(sock)]
    server = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    for _ in range(600):
        if Path(str(sock) + ".json").exists() or server.poll() is not None:
            break
        time.sleep(0.1)
    return server


def test_a_server_already_up_serves_every_run_on_the_host(tmp_path: Path) -> None:
    """One import per host: a server started once (`serve --socket S`) forks the workers of two runs in a row (the
    process that imported the probe is each worker's parent), each run's status names it; the run never stops it."""
    (tmp_path / "specmatrix_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "test_probe.py").write_text(TEST, encoding="utf-8")
    sock = tmp_path / "host.sock"
    env = {**os.environ, PRELOAD_ENV: "specmatrix_probe", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    server = _host_server(tmp_path, sock, env)
    try:
        for k in range(2):
            status = tmp_path / f"status{k}.json"
            command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--status", str(status), "--", "-n", "2"]
            command += ["-p", "no:cacheprovider", "-p", "no:benchmark", "-W", "error", "-q", "test_probe.py"]
            done = subprocess.run(
                command,
                cwd=tmp_path,
                env={**env, SOCKET_ENV: str(sock)},
                capture_output=True,
                text=True,
                timeout=240,
                check=False,
            )
            details = json.loads(status.read_text(encoding="utf-8"))
            assert details["state"] == "ready" and details["shared_server"] == str(sock), details
            assert "4 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
            assert server.poll() is None  # still up for the next run
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize(
    ("server_env", "client_env", "written"),
    [({"PYTHONDONTWRITEBYTECODE": "1"}, {}, True), ({}, {"PYTHONDONTWRITEBYTECODE": "1"}, False)],
    ids=["server-without-bytecode", "client-without-bytecode"],
)
def test_forked_children_write_bytecode_as_the_run_asks(tmp_path: Path, server_env, client_env, written) -> None:
    """PYTHONDONTWRITEBYTECODE and PYTHONPYCACHEPREFIX come from the run's environment, not the server's: a server
    started under the first still lets the run keep its (assert-rewritten) test module's bytecode under the prefix,
    and a run that asks for none writes none, beside the source or under the prefix."""
    (tmp_path / "specmatrix_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "test_probe.py").write_text(TEST, encoding="utf-8")
    sock, prefix = tmp_path / "host.sock", tmp_path / "pyc"
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env = {**base, PRELOAD_ENV: "specmatrix_probe", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    server = _host_server(tmp_path, sock, {**env, **server_env})
    try:
        command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--", "-n", "2", "-p", "no:cacheprovider"]
        command += ["-p", "no:benchmark", "-W", "error", "-q", "test_probe.py"]
        run_env = {**env, **client_env, SOCKET_ENV: str(sock), "PYTHONPYCACHEPREFIX": str(prefix)}
        done = subprocess.run(command, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=240, check=False)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "4 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    kept = sorted(p.name for p in prefix.rglob("test_probe*.pyc"))
    assert bool(kept) is written and all("pytest" in name for name in kept), kept
    assert not list((tmp_path / "__pycache__").glob("test_probe*"))  # never beside the source (the server's own may be)


def test_a_named_server_that_is_not_up_takes_the_plain_path(tmp_path: Path) -> None:
    (tmp_path / "test_probe.py").write_text("def test_plain():\n    pass\n", encoding="utf-8")
    status = tmp_path / "status.json"
    command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--status", str(status), "--", "-n", "2"]
    command += ["-p", "no:cacheprovider", "-p", "no:benchmark", "-q", "test_probe.py"]
    env = {**os.environ, SOCKET_ENV: str(tmp_path / "gone.sock"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert json.loads(status.read_text(encoding="utf-8"))["state"] == "failed"
    assert "plain path" in done.stdout and "1 passed" in done.stdout, done.stdout[-3000:]


CONTROLLER_CONFTEST = """
import os, sys

def pytest_configure(config):
    if not hasattr(config, "workerinput"):  # the controller
        with open(os.environ["CONTROLLER_SEEN"], "w") as handle:
            handle.write(str(int("specmatrix_probe" in sys.modules)))
"""


def test_the_controller_is_forked_from_the_server_too(tmp_path: Path) -> None:
    """The controller's runner detection imports torch: forked from the server, it finds it (here: the probe) loaded."""
    (tmp_path / "specmatrix_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "test_probe.py").write_text(TEST, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(CONTROLLER_CONFTEST, encoding="utf-8")
    seen = tmp_path / "controller.txt"
    env = {**os.environ, PRELOAD_ENV: "specmatrix_probe", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    env["CONTROLLER_SEEN"] = str(seen)
    command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--", "-n", "2", "-p", "no:cacheprovider"]
    command += ["-p", "no:benchmark", "-W", "error", "-q", "test_probe.py"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert "4 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
    assert seen.read_text(encoding="utf-8") == "1"


@pytest.mark.parametrize(
    ("name", "expected"),
    [("SIGTERM", (-15) & 0xFF), ("SIGINT", 1)],
    ids=["sigterm-kills", "sigint-interrupts-though-the-server-ignores-it"],
)
def test_a_signal_to_the_client_stops_the_forked_child(tmp_path: Path, name: str, expected: int) -> None:
    """A timed-out or cancelled run signals the processes it started, the clients: each passes it on to its forked
    child, which dies of it and the client reports that (128 + SIGTERM; KeyboardInterrupt, exit 1), instead of the
    child living on. The server here ignores SIGINT, as one started in the background by a shell does."""
    import signal

    from matrix.gpu.forkserver import write_client

    sock = tmp_path / "host.sock"
    env = {**os.environ, PRELOAD_ENV: "json", "SPECMATRIX_FORK_NVML": "off", "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "matrix.gpu.forkserver", "serve", "--socket", str(sock)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # noqa: PLW1509 (the shell's `&`)
    )
    try:
        for _ in range(600):
            if Path(str(sock) + ".json").exists() or server.poll() is not None:
                break
            time.sleep(0.1)
        started = tmp_path / "started"
        code = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(120)"
        client = subprocess.Popen([str(write_client(tmp_path)), "-c", code], env={**env, SOCKET_ENV: str(sock)})
        for _ in range(600):
            if started.exists():
                break
            time.sleep(0.1)
        client.send_signal(getattr(signal, name))
        try:
            assert client.wait(timeout=30) == expected  # the child's own end, reported
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
    finally:
        server.terminate()
        server.wait(timeout=30)


INTERRUPTED_CONFTEST = """
import os

def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        with open(os.environ["CONTROLLER_SEEN"], "w") as handle:
            handle.write(str(os.getpid()))
"""


def test_an_interrupted_run_stops_its_forked_controller(tmp_path: Path) -> None:
    """Ctrl-C or `timeout -s INT` signals the launcher's process group: the forked controller gets it through its
    client, prints pytest's interrupted summary (exit 2), and is gone when the launcher returns."""
    import signal

    (tmp_path / "specmatrix_probe.py").write_text(PROBE, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(INTERRUPTED_CONFTEST, encoding="utf-8")
    (tmp_path / "test_slow.py").write_text("import time\n\ndef test_slow():\n    time.sleep(120)\n", encoding="utf-8")
    seen = tmp_path / "controller.txt"
    env = {**os.environ, PRELOAD_ENV: "specmatrix_probe", "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    env["CONTROLLER_SEEN"] = str(seen)
    command = [sys.executable, "-m", "matrix.gpu.forkserver", "run", "--", "-n", "1", "-p", "no:cacheprovider"]
    command += ["-p", "no:benchmark", "test_slow.py"]
    launcher = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        for _ in range(1200):
            if seen.exists() and seen.read_text(encoding="utf-8"):
                break
            time.sleep(0.1)
        time.sleep(3)  # the worker is in test_slow by now
        os.killpg(launcher.pid, signal.SIGINT)
        out, _ = launcher.communicate(timeout=90)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    controller = int(seen.read_text(encoding="utf-8"))
    assert launcher.returncode == 2, out[-3000:]  # pytest's own exit status for an interrupted run
    for _ in range(50):
        try:
            os.kill(controller, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the controller {controller} outlived its run:\n{out[-2000:]}")
