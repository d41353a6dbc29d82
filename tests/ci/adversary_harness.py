"""What an adversary's case needs: a checkout written fresh, one `specmatrix` command run in a child process with
its CPU time and peak memory measured, the verdict the audit gives one test, and, where the case is a shell
script or a Makefile, the truth the real bash and GNU make give (a stub `pytest` on PATH records the environment
it was started with).

The bounds of every case: 10 s of CPU and 1 GiB of peak resident memory in the child. `os.wait4` gives that
child's own rusage (`ru_maxrss`, CPU time): `getrusage(RUSAGE_CHILDREN)` is the largest over every child the test
process has waited for, so one case past the bound would fail all those after it. Set `SPECMATRIX_ADVERSARY_TABLE`
to a file and each run appends one JSON line (case, command, CPU, MB, exit): `ci/adversary_round.py` prints the
table.
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

CPU_SECONDS = 10.0
PEAK_BYTES = 1024 * 1024 * 1024
WALL_SECONDS = 120  # a hang, not a speed target: the bounds above are the CPU's and memory's
SECRET = "ROUND6-SECRET"
TEST = "tests/test_a.py::test_gpu"
GUARDED = """\
import os

import pytest


@pytest.mark.skipif(os.environ.get("SUITE") != "gpu", reason="needs SUITE=gpu")
def test_gpu():
    pass
"""
WORKFLOW = "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n{steps}"


class Verdict(StrEnum):
    """What happens to the guarded test in CI, as the real tools say or as the audit says."""

    RUNS = "runs"  # some job runs it and it does not skip there
    SKIPS = "skips"  # every job that runs it skips it
    NEVER = "never"  # no job runs it (unscheduled, or the command that names it runs no test)
    UNDETERMINED = "undetermined"  # the audit says it cannot tell (never the truth)


def step(script: str) -> str:
    """One `run:` step holding `script` (a block scalar)."""
    return "      - run: |\n" + "".join(f"          {line}\n" for line in script.splitlines())


def workflow(*scripts: str) -> str:
    return WORKFLOW.format(steps="".join(step(s) for s in scripts))


def checkout(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    """A repository at tmp_path/repo holding `files` (the guarded test unless given), with a `.git` folder."""
    root = tmp_path / "repo"
    for name, text in {"tests/test_a.py": GUARDED, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    (root / ".git").mkdir(exist_ok=True)
    return root


@dataclass(frozen=True, kw_only=True)
class Run:
    """One command's exit, output and cost."""

    code: int
    out: str
    err: str
    cpu: float
    peak_bytes: int

    def doc(self) -> Any:
        return json.loads(self.out)

    def reasons(self) -> str:
        """Every unread and undetermined reason the JSON output gives, one text."""
        doc = self.doc()
        return "\n".join([*(u["reason"] for u in doc["unread"]), *(t["reason"] for t in doc.get("undetermined_tests", []))])


def specmatrix(case: str, *argv: object, cwd: Path) -> Run:
    """`python -m matrix ARGV` in a child process: its exit, stdout, stderr, CPU seconds and peak memory. Fails the
    test on a traceback, a secret in the output, or a bound passed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPECMATRIX_") and k != "GITHUB_STEP_SUMMARY"}
    env["SPECMATRIX_CACHE_DIR"] = str(cwd / ".specmatrix-cache")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(
            [*_python(), "-m", "matrix", *map(str, argv)],
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
        _limits(child.pid)
        deadline = time.monotonic() + WALL_SECONDS
        while True:  # reaped here, not by Popen: wait4 gives this child's own CPU time and peak memory
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                _, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.02)
        code = child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    cpu = usage.ru_utime + usage.ru_stime
    peak = usage.ru_maxrss * 1024
    table = os.environ.get("SPECMATRIX_ADVERSARY_TABLE")
    if table:
        with open(table, "a", encoding="utf-8") as handle:
            row = {"case": case, "command": str(argv[0]), "cpu": round(cpu, 2), "mb": round(peak / 2**20), "exit": code}
            handle.write(json.dumps(row) + "\n")
    assert code not in (-9, 137), f"{case}: killed (memory?)"
    assert "Traceback" not in stderr, stderr
    assert SECRET not in stdout + stderr, "read outside the tree"
    assert cpu <= CPU_SECONDS, f"{case}: {cpu:.1f} s of CPU"
    assert peak <= PEAK_BYTES, f"{case}: {peak} bytes"
    return Run(code=code, out=stdout, err=stderr, cpu=cpu, peak_bytes=peak)


def _limits(pid: int) -> None:
    """A child past its bounds is stopped well before it can hurt the machine (a doubling value once took 23 GB):
    4 GiB of address space, 60 s of CPU (set from outside: no `preexec_fn` in a process that may hold threads)."""
    resource.prlimit(pid, resource.RLIMIT_AS, (4 * PEAK_BYTES, 4 * PEAK_BYTES))
    resource.prlimit(pid, resource.RLIMIT_CPU, (60, 60))


def _python() -> list[str]:
    """The interpreter command the cases run `-m matrix` with: this one, or `SPECMATRIX_ADVERSARY_PYTHON` (words
    split on blanks; `ci/adversary_round.py --code REV` points it at another revision's package)."""
    given = os.environ.get("SPECMATRIX_ADVERSARY_PYTHON", "")
    return shlex.split(given) if given else [sys.executable]


def audit(case: str, root: Path, *argv: object) -> Run:
    """`specmatrix pytest-audit ROOT --format json ARGV`: exit 0 or 1 with a JSON document."""
    run = specmatrix(case, "pytest-audit", root, "--format", "json", *argv, cwd=root.parent)
    assert run.code in (0, 1), run.err
    return run


def verdict(run: Run, test: str = TEST) -> Verdict:
    """What the audit says of `test`."""
    doc = run.doc()
    path = test.split("::", 1)[0]
    if any(t["test"] == test for t in doc.get("undetermined_tests", [])):
        return Verdict.UNDETERMINED
    findings = doc["findings"]
    if any(f["kind"] == "silent-skip" and f["test"] == test for f in findings):
        return Verdict.SKIPS
    for finding in findings:
        # never-runs of the test (deselected), of its file when no command that names it runs a test, unscheduled
        if finding["kind"] == "never-runs" and (finding["test"] == test or (finding["test"] == path and not finding["runners"])):
            return Verdict.NEVER
        if finding["kind"] == "unscheduled" and finding["path"] == path:
            return Verdict.NEVER
    return Verdict.RUNS


# --- the real tools' truth ------------------------------------------------------------------------------------

_STUB = '#!/bin/sh\nprintf "%s\\n" "SUITE=${SUITE-<unset>}" >> "$PYTEST_LOG"\n'


def truth_by_bash(root: Path, script: str) -> Verdict:
    """What bash (and the make it starts) does with `script` in `root`: RUNS when a `pytest` it starts sees
    SUITE=gpu, SKIPS when every one it starts sees another value, NEVER when it starts none. `pytest`, `python`
    and `docker` are stubs on PATH; the environment is PATH and HOME only."""
    bash, make = shutil.which("bash"), shutil.which("make")
    assert bash is not None and make is not None, "bash and GNU make are needed (CI installs them: .ci/run)"
    stubs = root.parent / "stubs"
    stubs.mkdir(exist_ok=True)
    for name in ("pytest", "py.test"):
        (stubs / name).write_text(_STUB, encoding="utf-8")
        (stubs / name).chmod(0o755)
    log = root.parent / "pytest.log"
    log.unlink(missing_ok=True)
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(root.parent), "PYTEST_LOG": str(log)}
    subprocess.run([bash, "-c", script], cwd=root, env=env, capture_output=True, timeout=60, check=False)
    seen = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    if not seen:
        return Verdict.NEVER
    return Verdict.RUNS if "SUITE=gpu" in seen else Verdict.SKIPS
