"""Shared pieces for the plugin's pytester tests: a tiny matrix, faked machines, report helpers."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from matrix.core.report import read_report

# Two backends x two sizes. On sm100 (4-gpu-b200, strict) alpha must run and beta is an expected skip;
# on sm90 (1-gpu-h100, lenient) everything must run; on cpu (lenient) alpha must run, beta skips.
TINY_MATRIX = """
name = "tiny"

[[axis]]
name = "backend"
values = ["alpha", "beta"]
id = "{}"

[[axis]]
name = "size"
values = [1, 2]
id = "s{}"

[[group]]
name = "all"
backend = ["alpha", "beta"]
size = [1, 2]

[[rule]]
id = "beta-hopper"
kind = "hardware"
when = { backend = { in = ["beta"] } }
require = { sm = { in = [90] } }
reason = "beta kernels are built for Hopper only"
source = "tests/audit"
"""

ALPHA = ("alpha-s1", "alpha-s2")
BETA = ("beta-s1", "beta-s2")
CPU = json.dumps({"gpus": 0})
B200 = json.dumps({"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"})
H100 = json.dumps({"gpus": 1, "capability": [9, 0], "name": "NVIDIA H100 80GB HBM3"})
STRICT = ("--matrix-runner", "4-gpu-b200")


def leaks_in(name: str) -> bool:
    """An outer environment variable a nested run must not see (a CI step summary, a runner name, GPUs, a worker)."""
    return name.startswith(("SPECMATRIX_", "PYTEST_XDIST_")) or name in (
        "GITHUB_STEP_SUMMARY",
        "CUDA_VISIBLE_DEVICES",
        "PYTEST_ADDOPTS",
    )


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the outer environment leaks in; the machine is a CPU box unless a test says otherwise."""
    for name in list(os.environ):
        if leaks_in(name):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SPECMATRIX_DETECT", CPU)


@pytest.fixture
def tiny(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tiny matrix, selected through the environment like a CI job would."""
    path = pytester.path / "tiny.toml"
    path.write_text(TINY_MATRIX, encoding="utf-8")
    monkeypatch.setenv("SPECMATRIX_MATRIX", str(path))
    return path


@pytest.fixture
def b200(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)


def write(pytester: pytest.Pytester, name: str, source: str) -> Path:
    path = pytester.path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def report_of(pytester: pytest.Pytester, name: str = "out/report.json") -> dict[str, Any]:
    """The JSON report, validated by the schema reader, with planned == sum of statuses checked."""
    return report_at(pytester.path / name)


def report_at(path: Path) -> dict[str, Any]:
    """`report_of` for a report outside a pytester folder."""
    read_report(path)
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert doc["planned"] == len(doc["cells"]) == sum(doc["counts"].values())
    return doc


def statuses(doc: dict[str, Any]) -> dict[str, str]:
    """nodeid -> status for every planned item."""
    return {c["nodeid"]: c["status"] for c in doc["cells"]}


def by_cell(doc: dict[str, Any]) -> dict[str, str]:
    """cell id -> status, for reports with one matrix test."""
    return {c["cell"]: c["status"] for c in doc["cells"]}


def literal(text: str) -> str:
    """Escape `[` and `]` for fnmatch_lines (node ids and rule ids are full of them)."""
    return "".join({"[": "[[]", "]": "[]]"}.get(ch, ch) for ch in text)
