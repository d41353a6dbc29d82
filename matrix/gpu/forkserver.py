"""One import per host: pytest-xdist workers forked from a process that imported torch, flashinfer and sglang once.

`python -m matrix.gpu.forkserver run -- PYTEST_ARGS` starts a server that imports PRELOAD (without initialising
CUDA: a forked child of a process holding a CUDA context cannot use the GPU), then runs pytest with its `-n N`
replaced by `--tx N*popen//python=CLIENT`. execnet starts each worker as `CLIENT -u -c BOOTSTRAP`; the client hands
its stdin, stdout and stderr, argv, environment and working directory to the server over a Unix socket, the server
forks, and the child becomes that worker (`python -c BOOTSTRAP` emulated on the received descriptors), already
holding every preloaded module. pytest's controller starts the same way (`CLIENT -c CONTROLLER ARGS`), so its runner
detection finds torch imported. The client forwards SIGINT, SIGTERM and SIGHUP to its forked child (the server sends
the child's pid first, its exit status last), so an interrupted or timed-out run stops its controller and workers.
xdist, `--dist loadgroup` and the reports are unchanged.

Device capability and name questions asked at import are answered from NVML during the preload
(matrix/gpu/preload.py, matrix/gpu/nvmlanswers.py). If a preload initialises CUDA, or the server does not come up,
the run says so and takes the plain path (each worker imports for itself). Nothing here imports torch or sglang at
module level.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from collections.abc import Sequence
from pathlib import Path

from matrix.core.atomic import write_text_atomic
from matrix.gpu.nvmlanswers import NVML_LIBRARY, read_nvml, uniform
from matrix.gpu.preload import PRELOAD, CudaAtImport, Preload, preload

__all__ = ["PRELOAD", "CudaAtImport", "Preload", "main", "preload", "run"]

SOCKET_ENV = "SPECMATRIX_FORK_SERVER"
READY = "SPECMATRIX-FORK-READY "
UNSAFE = "SPECMATRIX-FORK-UNSAFE "
PRELOAD_ENV = "SPECMATRIX_FORK_PRELOAD"  # comma-separated modules instead of PRELOAD (tests use small ones)
NVML_ENV = "SPECMATRIX_FORK_NVML"  # the NVML library to read instead of libnvidia-ml.so.1 ("off": none)
MAX_HEADER = 4 * 1024 * 1024  # argv + environment of one worker; anything larger is not a worker's request


# --- server -------------------------------------------------------------------------------------------------------


def plugin_packages() -> set[str]:
    """Top-level module names shipped by the distributions that register pytest plugins (entry points `pytest11`)."""
    import importlib.metadata

    tops: set[str] = set()
    for dist in importlib.metadata.distributions():
        if not any(ep.group == "pytest11" for ep in dist.entry_points):
            continue
        for path in dist.files or ():
            head = path.parts[0] if path.parts else ""
            if head.endswith(".py"):
                tops.add(head[:-3])
            elif head and "." not in head and not head.endswith("-info"):
                tops.add(head)
    return tops


def _recv_exact(conn: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = conn.recv(min(1 << 16, size - len(chunks)))
        if not chunk:
            raise ConnectionError("client went away")
        chunks.extend(chunk)
    return bytes(chunks)


def _become_worker(request: dict[str, object], fds: list[int], plugins: frozenset[str]) -> int:
    """In the forked child: take the client's descriptors, environment and directory, run `-c CODE` as python does."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
        os.close(fd)
    env = request.get("env")
    if isinstance(env, dict):
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
    # The interpreter reads these two at start-up; the child takes them from the client's environment, as a process
    # started with it would (a server started under PYTHONDONTWRITEBYTECODE must not stop the run's bytecode cache).
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    sys.pycache_prefix = os.environ.get("PYTHONPYCACHEPREFIX") or None
    cwd = request.get("cwd")
    if isinstance(cwd, str):
        os.chdir(cwd)
    argv = [str(a) for a in request.get("argv", []) if isinstance(a, str)]  # type: ignore[attr-defined]
    code_at = argv.index("-c") + 1 if "-c" in argv else -1
    if code_at <= 0 or code_at >= len(argv):
        return 2
    # python -u -c CODE: unbuffered text stdio on the received descriptors, argv ['-c', ...], '' first on sys.path.
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (the interpreter's own stdin)
    sys.stdout = open(1, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", buffering=1, closefd=False)  # noqa: SIM115
    # pytest rewrites the asserts of every pytest plugin's distribution and refuses (a warning, an error under
    # -W error) a module imported before it starts: this package (imported to run the server) and any plugin a
    # preload pulled in (anyio, through transformers, on the H200) are imported afresh by the worker.
    tops = plugins | {"matrix"}
    for name in [m for m in sys.modules if m.partition(".")[0] in tops]:
        del sys.modules[name]
    sys.argv = ["-c", *argv[code_at + 1 :]]
    sys.path[0] = ""
    main = types.ModuleType("__main__")  # a fresh __main__, as `python -c` has (not this server's module)
    sys.modules["__main__"] = main
    exec(compile(argv[code_at], "<string>", "exec"), main.__dict__)
    return 0


def _serve_one(conn: socket.socket, listener: socket.socket, children: set[int], plugins: frozenset[str]) -> None:
    msg, fds, _, _ = socket.recv_fds(conn, 8, 3)
    if len(msg) != 8 or len(fds) != 3:
        conn.close()
        return
    size = int.from_bytes(msg, "big")
    if size > MAX_HEADER:
        conn.close()
        return
    request = json.loads(_recv_exact(conn, size))
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():  # never fork a CUDA context (the preload checked; again)
        conn.close()
        return
    pid = os.fork()
    if pid == 0:  # the worker
        code = 1
        try:
            listener.close()
            conn.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            # Python's own Ctrl-C handling, whatever the server had: a server started in the background by a shell
            # ignores SIGINT, and a forked child would inherit that and never see the interrupt its client passes on.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            code = _become_worker(request, fds, plugins)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    for fd in fds:
        os.close(fd)
    children.add(pid)
    conn.sendall(pid.to_bytes(4, "big"))  # the client forwards its signals to this pid

    def report() -> None:
        _, status = os.waitpid(pid, 0)
        children.discard(pid)
        try:
            conn.sendall(os.waitstatus_to_exitcode(status).to_bytes(4, "big", signed=True))
        finally:
            conn.close()

    threading.Thread(target=report, daemon=True).start()


def _preload_summary() -> tuple[str | None, dict[str, object]]:
    """Preload (PRELOAD, or the modules of SPECMATRIX_FORK_PRELOAD) with device questions answered from NVML where
    the host has one kind of GPU; (why forking is unsafe or None, the status)."""
    # torch.cuda.is_available() through NVML, not the driver: the CUDA driver must stay uninitialised before fork.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    modules = tuple(m for m in os.environ.get(PRELOAD_ENV, "").split(",") if m) or PRELOAD
    library = os.environ.get(NVML_ENV, NVML_LIBRARY)
    gpus = read_nvml(library) if library != "off" else "NVML not read"
    kind = uniform(gpus) if isinstance(gpus, tuple) else None
    if isinstance(gpus, str):
        nvml = gpus
    elif kind is None:
        nvml = f"{len(gpus)} GPU(s), not all of one kind: not answered"
    else:
        nvml = f"{len(gpus)} GPU(s), all {kind.name} sm{kind.capability[0]}{kind.capability[1]}"
    state = preload(modules, kind, len(gpus) if isinstance(gpus, tuple) else 0)
    return state.unsafe, {
        "preload_seconds": state.seconds,
        "deferred": state.deferred,
        "total": round(sum(state.seconds.values()), 3),
        "nvml": nvml,
        "answered_from_nvml": state.answered,
        "threads": state.threads,
        "cuda_driver_mapped_by": state.driver_mapped_by,
    }


def freeze_preloaded_heap() -> int:
    """Move every object the preload left (torch, sglang, transformers: modules, classes, their tables) to the
    collector's permanent generation, which every forked worker inherits; the number of objects moved.

    sglang's graph capture starts with a full `gc.collect()` (its `freeze_gc`); in one process holding the preload
    each took about 0.26 s (cProfile, results/gpu-h200.md). Frozen, a worker's collections walk what the worker made since it
    started, until sglang's own `gc.unfreeze()` after a capture (taken when the run's graph settings leave
    `enable_cudagraph_gc` off) puts everything back. What the preload made lives as long as the process anyway; what
    a worker's cells make is still collected. (Python's gc docs: `gc.freeze()` right before fork for a pre-fork
    server.)
    """
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def serve(path: str) -> int:
    """Preload, then fork a worker per request on the socket `path` until SIGTERM; the status goes to stdout (the
    launcher reads it) and, once ready, to `path`.json (a launcher that finds the server already up reads it)."""
    unsafe, summary = _preload_summary()
    if unsafe is not None:
        print(UNSAFE + json.dumps({"reason": unsafe, **summary}), flush=True)
        return 3
    # Read once here, not in every worker: the distributions on the server's sys.path, which each forked worker keeps.
    plugins = frozenset(plugin_packages())
    summary["frozen_objects"] = freeze_preloaded_heap()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    children: set[int] = set()

    def stop(*_: object) -> None:
        for pid in list(children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    write_text_atomic(Path(path + ".json"), json.dumps({"state": "ready", **summary}, indent=2) + "\n")
    print(READY + json.dumps(summary), flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            _serve_one(conn, listener, children, plugins)
        except (ConnectionError, ValueError, OSError) as exc:
            print(f"fork server: a request failed: {exc}", file=sys.stderr, flush=True)
            conn.close()


# --- client (written to a file; execnet runs it as the worker's "python") --------------------------------------------

CLIENT = """#!{python} -S
import json, os, signal, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(os.environ[{env!r}])
header = json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}).encode()
socket.send_fds(conn, [len(header).to_bytes(8, "big")], [0, 1, 2])
conn.sendall(header)
def read(size):
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            sys.exit(70)
        data += chunk
    return data
child = int.from_bytes(read(4), "big")
def forward(signum, frame):
    try:
        os.kill(child, signum)
    except OSError:
        pass
for name in ("SIGINT", "SIGTERM", "SIGHUP"):
    signal.signal(getattr(signal, name), forward)
sys.exit(int.from_bytes(read(4), "big", signed=True) & 0xFF)
"""


# What the controller runs, as `python -c CONTROLLER PYTEST_ARGS` (pytest.main reads sys.argv[1:], as `-m pytest` does).
CONTROLLER = "import sys, pytest; sys.exit(int(pytest.main()))"


def write_client(directory: Path) -> Path:
    path = directory / "worker-python"
    path.write_text(CLIENT.format(python=sys.executable, env=SOCKET_ENV), encoding="utf-8")
    path.chmod(0o755)
    return path


# --- launcher -----------------------------------------------------------------------------------------------------


def forked_args(args: Sequence[str], client: Path) -> list[str] | None:
    """`args` with `-n N` / `--numprocesses N` replaced by `--tx N*popen//python=CLIENT`; None without a worker count."""
    out: list[str] = []
    workers: str | None = None
    skip = False
    for k, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in ("-n", "--numprocesses") and k + 1 < len(args):
            workers, skip = args[k + 1], True
        elif arg.startswith("--numprocesses="):
            workers = arg.partition("=")[2]
        elif arg.startswith("-n") and arg[2:].isdigit():
            workers = arg[2:]
        else:
            out.append(arg)
    if workers is None or not workers.isdigit() or int(workers) < 1:
        return None
    # --tx alone distributes nothing: pytest-xdist needs a --dist mode (-n implies `load`).
    dist = [] if any(a == "-d" or a.startswith("--dist") for a in out) else ["--dist", "load"]
    return [*out, "--tx", f"{int(workers)}*popen//python={client}", *dist]


def _wait_ready(proc: subprocess.Popen[str], timeout: float) -> tuple[str, dict[str, object]]:
    """('ready'|'unsafe'|'failed', details) from the server's first status line."""
    assert proc.stdout is not None
    found: list[tuple[str, dict[str, object]]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(READY):
                found.append(("ready", json.loads(line[len(READY) :])))
                return
            if line.startswith(UNSAFE):
                found.append(("unsafe", json.loads(line[len(UNSAFE) :])))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if found:
        return found[0]
    return "failed", {"message": f"no status line within {timeout:.0f} s (exit {proc.poll()})"}


def _shared_server(sock: str) -> tuple[str, dict[str, object]]:
    """A server already up on this host (started with `serve --socket SOCK`, named by SPECMATRIX_FORK_SERVER): its
    status from SOCK.json, the import paid once for every run that uses it."""
    status = Path(sock + ".json")
    try:
        details = json.loads(status.read_text(encoding="utf-8")) if Path(sock).is_socket() else None
    except (OSError, ValueError):
        details = None
    if not isinstance(details, dict) or details.get("state") != "ready":
        return "failed", {"message": f"no ready fork server at {sock}"}
    return "ready", {**{k: v for k, v in details.items() if k != "state"}, "shared_server": sock}


def _wait_interrupted(client: subprocess.Popen[bytes]) -> int:
    """The client's exit status. Interrupted (Ctrl-C, `timeout -s INT`: one signal to the whole process group), the
    client got the same signal and passed it on to the controller: wait for the controller's interrupted summary
    rather than kill the client (subprocess.run would), which would leave the controller running."""
    try:
        return client.wait()
    except KeyboardInterrupt:
        try:
            return client.wait(timeout=60)
        except subprocess.TimeoutExpired:
            client.kill()
            raise


def run(pytest_args: Sequence[str], *, timeout: float = 300.0, status_file: Path | None = None) -> int:
    """pytest with workers forked from the preloading server (the one SPECMATRIX_FORK_SERVER names, else one started
    for this run); the plain path when that is unsafe or impossible."""
    plain = [sys.executable, "-m", "pytest", *pytest_args]
    with tempfile.TemporaryDirectory(prefix="specmatrix-fork-") as tmp:
        client = write_client(Path(tmp))
        forked = forked_args(pytest_args, client)
        if forked is None:
            print("fork server: no -n N among the pytest arguments; plain path", flush=True)
            return subprocess.run(plain, check=False).returncode
        start = time.perf_counter()
        server: subprocess.Popen[str] | None = None
        sock = os.environ.get(SOCKET_ENV, "")
        if sock:
            state, details = _shared_server(sock)
        else:
            sock = str(Path(tmp) / "server.sock")
            command = [sys.executable, "-m", "matrix.gpu.forkserver", "serve", "--socket", sock]
            # Its own session: an interrupt of the run reaches the controller (through its client), not the server,
            # which this launcher stops itself once the controller has finished.
            server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
            state, details = _wait_ready(server, timeout)
        details = {"state": state, "server_start_seconds": round(time.perf_counter() - start, 3), **details}
        print("fork server: " + json.dumps(details), flush=True)
        if status_file is not None:
            write_text_atomic(status_file, json.dumps(details, indent=2) + "\n")
        try:
            if state != "ready":
                print(f"fork server: {state}; every worker imports for itself (plain path)", flush=True)
                return subprocess.run(plain, check=False).returncode
            env = {**os.environ, SOCKET_ENV: sock}
            # The controller is forked from the server too: the runner detection it starts with (matrix.core.detect,
            # `import torch`: 4-7 s of every warm run's step on the H200, results/gpu-h200.md) finds torch imported.
            return _wait_interrupted(subprocess.Popen([str(client), "-c", CONTROLLER, *forked], env=env))
        finally:
            if server is not None:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matrix.gpu.forkserver")
    sub = parser.add_subparsers(dest="command", required=True)
    serve_p = sub.add_parser("serve", help="preload, then fork a worker per client request (status in SOCKET.json)")
    serve_p.add_argument("--socket", required=True)
    run_p = sub.add_parser("run", help="pytest with its xdist workers forked from one preloading process")
    run_p.add_argument("--status", type=Path, default=None, help="write the server's preload status (JSON) here")
    run_p.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args.socket)
    rest = list(args.pytest_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return run(rest, status_file=args.status)


if __name__ == "__main__":
    sys.exit(main())
