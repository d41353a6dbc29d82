"""One import per host: pytest-xdist workers forked from a process that imported torch, flashinfer and sglang once.

`python -m matrix.gpu.forkserver run -- PYTEST_ARGS` starts a server that imports PRELOAD (without initialising
CUDA: a forked child of a process holding a CUDA context cannot use the GPU), then runs pytest with its `-n N`
replaced by `--tx N*popen//python=CLIENT`. execnet starts each worker as `CLIENT -u -c BOOTSTRAP`; the client hands
its stdin, stdout and stderr, argv, environment and working directory to the server over a Unix socket, the server
forks, and the child becomes that worker (`python -c BOOTSTRAP` emulated on the received descriptors), already
holding every preloaded module. xdist, `--dist loadgroup` and the reports are unchanged.

If a preload initialises CUDA, or the server does not come up, the run says so and takes the plain path (each worker
imports for itself). Nothing here imports torch or sglang at module level.
"""

from __future__ import annotations

import argparse
import contextlib
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
from dataclasses import dataclass, field
from pathlib import Path

SOCKET_ENV = "SPECMATRIX_FORK_SERVER"
READY = "SPECMATRIX-FORK-READY "
UNSAFE = "SPECMATRIX-FORK-UNSAFE "
# What the GPU checks import (matrix/gpu/*.py), in order; each is imported once, in the server, up to the first one
# that asks for CUDA at import (flashinfer 0.7.2 does: docs/gpu.md), which is left to the workers with all after it.
PRELOAD = (
    "torch",
    "triton",
    "triton.language",
    "transformers",
    "torch._dynamo",
    "torch._inductor.config",
    "flashinfer",
    "flashinfer.decode",
    "sglang.srt.layers.attention.attention_registry",
    "sglang.srt.layers.attention.triton_backend",
    "sglang.srt.layers.attention.trtllm_mha_backend",
    "sglang.srt.layers.radix_attention",
    "sglang.srt.model_executor.model_runner",
    "sglang.srt.speculative.frozen_kv_mtp_worker_v2",
    "sglang.srt.speculative.frozen_kv_mtp_cuda_graph_runner",
    "sglang.test.kits.attention_unittest.attention_methods.dense_attention",
    "sglang.test.kits.attention_unittest.runner_modes.speculative_draft_runner",
    "sglang.test.kits.attention_unittest.runner_modes.speculative_target_verify_runner",
)
PRELOAD_ENV = "SPECMATRIX_FORK_PRELOAD"  # comma-separated modules instead of PRELOAD (tests use small ones)
MAX_HEADER = 4 * 1024 * 1024  # argv + environment of one worker; anything larger is not a worker's request


# --- server -------------------------------------------------------------------------------------------------------


class CudaAtImport(BaseException):
    """Raised inside torch's lazy CUDA initialisation while preloading: the import that asked for the device is cut
    short before CUDA starts, so the server stays fork-safe; the worker imports that module itself. A BaseException,
    so that `except Exception` / `except ImportError` fallbacks in libraries do not turn it into a degraded import."""


@dataclass
class Preload:
    """What the server holds: seconds per module, the modules left to the workers, and where each asked for CUDA."""

    seconds: dict[str, float] = field(default_factory=dict)
    deferred: dict[str, list[str]] = field(default_factory=dict)  # module -> call sites of the CUDA request
    unsafe: str | None = None  # why nothing may be forked (CUDA initialised, or a library swallowed the abort)


def _call_sites() -> list[str]:
    import traceback

    frames = [f for f in traceback.extract_stack()[:-2] if "/torch/" not in f.filename and "<frozen" not in f.filename]
    return [f"{f.filename}:{f.lineno} ({f.line})" for f in frames[-3:]]


def preload(modules: Sequence[str]) -> Preload:
    """Import `modules` in order until one asks for CUDA at import: that import is cut short (CudaAtImport) before
    CUDA starts, every module it added is dropped again (a half-imported package tree breaks later imports), its call
    site is recorded, and it and every later module are left to the workers (re-running their imports here could
    repeat module-level registrations). Unsafe (fork nothing) when CUDA got initialised anyway, or a library caught
    the cut and went on (it may have cached a degraded state)."""
    import importlib

    state = Preload()
    asked: list[list[str]] = []

    def refuse() -> None:
        asked.append(_call_sites())
        raise CudaAtImport

    for k, name in enumerate(modules):
        torch = sys.modules.get("torch")
        original = torch.cuda._lazy_init if torch is not None else None
        if torch is not None:
            torch.cuda._lazy_init = refuse
        before = set(sys.modules)
        start = time.perf_counter()
        cut: list[str] | None = None
        try:
            importlib.import_module(name)
        except CudaAtImport:
            cut = asked[-1]
        except Exception as exc:
            cut = [f"{type(exc).__name__}: {exc}"]
        finally:
            if torch is not None and original is not None:
                torch.cuda._lazy_init = original
        state.seconds[name] = round(time.perf_counter() - start, 3)
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            state.unsafe = f"CUDA initialised while importing {name}"
            return state
        if cut is None and asked:
            state.unsafe = f"importing {name}: a library caught the CUDA cut-off and went on ({asked[0]})"
            return state
        if cut is not None:
            for added in set(sys.modules) - before:
                del sys.modules[added]
            state.deferred[name] = cut
            state.deferred.update({later: ["after " + name] for later in modules[k + 1 :]})
            return state
    return state


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


def _become_worker(request: dict[str, object], fds: list[int]) -> int:
    """In the forked child: take the client's descriptors, environment and directory, run `-c CODE` as python does."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
        os.close(fd)
    env = request.get("env")
    if isinstance(env, dict):
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
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
    tops = plugin_packages() | {"matrix"}
    for name in [m for m in sys.modules if m.partition(".")[0] in tops]:
        del sys.modules[name]
    sys.argv = ["-c", *argv[code_at + 1 :]]
    sys.path[0] = ""
    main = types.ModuleType("__main__")  # a fresh __main__, as `python -c` has (not this server's module)
    sys.modules["__main__"] = main
    exec(compile(argv[code_at], "<string>", "exec"), main.__dict__)
    return 0


def _serve_one(conn: socket.socket, listener: socket.socket, children: set[int]) -> None:
    msg, fds, _, _ = socket.recv_fds(conn, 8, 3)
    if len(msg) != 8 or len(fds) != 3:
        conn.close()
        return
    size = int.from_bytes(msg, "big")
    if size > MAX_HEADER:
        conn.close()
        return
    request = json.loads(_recv_exact(conn, size))
    pid = os.fork()
    if pid == 0:  # the worker
        code = 1
        try:
            listener.close()
            conn.close()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            code = _become_worker(request, fds)
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

    def report() -> None:
        _, status = os.waitpid(pid, 0)
        children.discard(pid)
        try:
            conn.sendall(os.waitstatus_to_exitcode(status).to_bytes(4, "big", signed=True))
        finally:
            conn.close()

    threading.Thread(target=report, daemon=True).start()


def serve(path: str) -> int:
    # torch.cuda.is_available() through NVML, not the driver: the CUDA driver must stay uninitialised before fork.
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
    modules = tuple(m for m in os.environ.get(PRELOAD_ENV, "").split(",") if m) or PRELOAD
    state = preload(modules)
    summary = {"preload_seconds": state.seconds, "deferred": state.deferred, "total": round(sum(state.seconds.values()), 3)}
    if state.unsafe is not None:
        print(UNSAFE + json.dumps({"reason": state.unsafe, **summary}), flush=True)
        return 3
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
    print(READY + json.dumps(summary), flush=True)
    while True:
        conn, _ = listener.accept()
        try:
            _serve_one(conn, listener, children)
        except (ConnectionError, ValueError, OSError) as exc:
            print(f"fork server: a request failed: {exc}", file=sys.stderr, flush=True)
            conn.close()


# --- client (written to a file; execnet runs it as the worker's "python") --------------------------------------------

CLIENT = """#!{python} -S
import json, os, socket, sys
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
conn.connect(os.environ[{env!r}])
header = json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}).encode()
socket.send_fds(conn, [len(header).to_bytes(8, "big")], [0, 1, 2])
conn.sendall(header)
status = b""
while len(status) < 4:
    chunk = conn.recv(4 - len(status))
    if not chunk:
        sys.exit(70)
    status += chunk
sys.exit(int.from_bytes(status, "big", signed=True) & 0xFF)
"""


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


def run(pytest_args: Sequence[str], *, timeout: float = 300.0, status_file: Path | None = None) -> int:
    """pytest with workers forked from the preloading server; the plain path when that is unsafe or impossible."""
    plain = [sys.executable, "-m", "pytest", *pytest_args]
    with tempfile.TemporaryDirectory(prefix="specmatrix-fork-") as tmp:
        client = write_client(Path(tmp))
        forked = forked_args(pytest_args, client)
        if forked is None:
            print("fork server: no -n N among the pytest arguments; plain path", flush=True)
            return subprocess.run(plain, check=False).returncode
        sock = str(Path(tmp) / "server.sock")
        start = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "matrix.gpu.forkserver", "serve", "--socket", sock], stdout=subprocess.PIPE, text=True
        )
        state, details = _wait_ready(server, timeout)
        details = {"state": state, "server_start_seconds": round(time.perf_counter() - start, 3), **details}
        print("fork server: " + json.dumps(details), flush=True)
        if status_file is not None:
            status_file.parent.mkdir(parents=True, exist_ok=True)
            status_file.write_text(json.dumps(details, indent=2) + "\n", encoding="utf-8")
        try:
            if state != "ready":
                print(f"fork server: {state}; every worker imports for itself (plain path)", flush=True)
                return subprocess.run(plain, check=False).returncode
            env = {**os.environ, SOCKET_ENV: sock}
            return subprocess.run([sys.executable, "-m", "pytest", *forked], env=env, check=False).returncode
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matrix.gpu.forkserver")
    sub = parser.add_subparsers(dest="command", required=True)
    serve_p = sub.add_parser("serve", help="preload, then fork a worker per client request (internal)")
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
