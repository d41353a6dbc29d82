"""The project's CI in four sessions: the expected outcomes, the tests under the skip audit, shards, coverage.

`nox` installs specmatrix from SPECMATRIX_INSTALL (default: the checkout two folders up); with
`--force-venv-backend none` the current environment's specmatrix is used and nothing is installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.sessions = ["cells", "tests", "shard", "coverage"]
HERE = Path(__file__).parent
SPECMATRIX = os.environ.get("SPECMATRIX_INSTALL", str(HERE.parents[1]))
RUNNER = os.environ.get("SPECMATRIX_RUNNER", "cpu")


def install(session: nox.Session, *extra: str) -> None:
    if session.venv_backend != "none":
        session.install(SPECMATRIX, *extra)


@nox.session
def cells(session: nox.Session) -> None:
    """What each runner must run: the profiles, then every cell's expected outcome on RUNNER."""
    install(session)
    session.run("specmatrix", "runners")
    session.run("specmatrix", "cells", "--runner", RUNNER)


@nox.session
def tests(session: nox.Session) -> None:
    """The tests under the skip audit; the report feeds the coverage session."""
    install(session, "pytest")
    session.run("pytest", "--matrix-runner", RUNNER, "--matrix-report", f"out/{RUNNER}.json", *session.posargs)


@nox.session
def shard(session: nox.Session) -> None:
    """The cells RUNNER must run, cut into two CI jobs by the cost model."""
    install(session)
    session.run("specmatrix", "shard", "--runner", RUNNER, "--shards", "2", "--format", "json")


@nox.session
def coverage(session: nox.Session) -> None:
    """Every report merged: out/coverage/coverage.md (a heatmap too where matplotlib is installed)."""
    install(session)
    session.run("specmatrix", "coverage", f"out/{RUNNER}.json", "--out", "out/coverage")
