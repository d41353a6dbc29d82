"""A small checkout audited with and without pytest-audit's results cache, for the cache tests: what each run
collected, and a helper that edits one input and checks the cached report against a fresh one."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from matrix.core.model import RunnerProfile
from matrix.core.runner_files import load_runners
from matrix.pytest_suites import collect
from matrix.pytest_suites.audit import PytestAuditReport
from matrix.pytest_suites.run import AuditInput, run_audit
from tests.pytest_suites.conftest import write_tree

WORKFLOW = """
name: ci
on: [push]
jobs:
  gpu:
    runs-on: {label}
    env:
      PYTEST_ADDOPTS: "{addopts}"
    steps:
      - uses: actions/checkout@v4
      - run: bash scripts/run_tests.sh
"""
FILES = {
    "pytest.ini": "[pytest]\ntestpaths = tests\nmarkers =\n    slow: a slow test\n",
    ".github/workflows/ci.yml": WORKFLOW.format(label="1-gpu-h100", addopts="-p no:cacheprovider"),
    "scripts/run_tests.sh": "#!/bin/bash\nset -e\npytest tests\n",
    "tests/__init__.py": "",
    "tests/conftest.py": "import pytest\n",
    "tests/helpers.py": """
        import pytest
        import torch


        def need_gpus(n):
            if torch.cuda.device_count() < n:
                pytest.skip("needs more GPUs")
        """,
    "tests/test_helped.py": """
        from tests.helpers import need_gpus


        def test_two():
            need_gpus(2)
        """,
    "tests/test_plain.py": """
        import pytest
        import torch


        @pytest.mark.skipif(torch.cuda.device_count() < 4, reason="four GPUs")
        def test_four():
            pass


        @pytest.mark.slow
        def test_runs():
            pass
        """,
}


@dataclass
class Checkout:
    """A checkout in tmp_path, audited with and without a cache; `collected` lists the files each run collected."""

    root: Path
    cache: Path
    schedule_files: tuple[Path, ...] = ()
    installed: frozenset[str] = frozenset()
    profiles: Mapping[str, RunnerProfile] = field(default_factory=load_runners)
    collected: list[str] = field(default_factory=list)

    def write(self, files: Mapping[str, str]) -> None:
        write_tree(self.root, {name: textwrap.dedent(text) for name, text in files.items()})

    def inputs(self) -> AuditInput:
        return AuditInput(root=self.root, schedule_files=self.schedule_files, installed=self.installed)

    def cached(self, jobs: int = 1) -> PytestAuditReport:
        self.collected.clear()
        return run_audit(self.inputs(), self.profiles, jobs=jobs, cache_dir=self.cache)

    def fresh(self) -> dict[str, Any]:
        counted = list(self.collected)
        report = asdict(run_audit(self.inputs(), self.profiles))
        self.collected[:] = counted  # what the cached run collected, not this one
        return report


def make_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Checkout:
    """The checkout of FILES in tmp_path, each collection counted in `collected`."""
    tree = Checkout(root=tmp_path / "repo", cache=tmp_path / "cache")
    tree.write(FILES)
    real = collect.Collector.collect

    def counted(self: collect.Collector, path: str) -> collect.TestFile:
        tree.collected.append(path)
        return real(self, path)

    monkeypatch.setattr(collect.Collector, "collect", counted)
    return tree


def edited(tree: Checkout, edit: Callable[[], None]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the cached report before the edit, after it); each checked against a run without the cache."""
    before = asdict(tree.cached())
    assert before == tree.fresh()
    assert asdict(tree.cached()) == before and tree.collected == [], "a second run with nothing changed reads no file"
    edit()
    after = asdict(tree.cached())
    assert after == tree.fresh(), "the cached report after the edit is the report of a fresh run"
    assert after != before, "the edit changes the report (else this test shows nothing)"
    return before, after
