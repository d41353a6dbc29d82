"""The import contracts of docs/architecture.md: green on the real tree, red on each planted violation.

lint-imports reads the contracts from pyproject.toml and builds the import graph from source (nothing is imported),
so a copy of the package in tmp_path with one planted module is enough; torch, sglang and flashinfer need not be
installed for an import of them to count.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# One interpreter runs lint-imports (its `lint_imports`, what the console script calls) over every tree in turn:
# importing import-linter costs about 0.14 s of CPU, checking one tree a few hundredths. Each tree is a separate
# folder first on sys.path while it is checked, so `matrix` is that copy, not the installed checkout.
LINT_EACH_TREE = """
import contextlib, importlib, io, json, os, sys
from importlinter.cli import lint_imports
results = []
for root in sys.argv[1:]:
    os.chdir(root)
    sys.path.insert(0, root)
    importlib.invalidate_caches()
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        code = lint_imports(no_cache=True, no_logo=True)
    sys.path.remove(root)
    results.append({"code": code, "output": output.getvalue()})
print(json.dumps(results))
"""


@dataclass(frozen=True, kw_only=True)
class LintRun:
    code: int
    output: str


@dataclass(frozen=True, kw_only=True)
class Plant:
    module: str
    source: str
    contract: str
    chain: str


def lint_imports(roots: list[Path]) -> list[LintRun]:
    """lint-imports over the `matrix` package and pyproject.toml found under each root, in one process."""
    done = subprocess.run(
        [sys.executable, "-c", LINT_EACH_TREE, *map(str, roots)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [LintRun(code=r["code"], output=r["output"]) for r in json.loads(done.stdout)]


def tree_copy(folder: Path) -> Path:
    shutil.copytree(ROOT / "matrix", folder / "matrix", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


PLANTS = {
    "core-imports-cli": Plant(
        module="matrix/core/planted.py",
        source="from matrix.cli import main\n",
        contract="Layers",
        chain="matrix.core.planted -> matrix.cli",
    ),
    "base-feature-imports-composed-feature": Plant(
        module="matrix/shard/planted.py",
        source="from matrix.coverage import merge\n",
        contract="Layers",
        chain="matrix.shard.planted -> matrix.coverage",
    ),
    "sibling-features-import-each-other": Plant(
        module="matrix/guards/planted.py",
        source="from matrix.audit import items\n",
        contract="Layers",
        chain="matrix.guards.planted -> matrix.audit",
    ),
    "guard-engine-imports-the-registered-suite-audit": Plant(
        module="matrix/guards/model.py",
        source="from matrix.registered_suite.gate import gate\n",
        contract="Layers",
        chain="matrix.guards.model -> matrix.registered_suite.gate",
    ),
    "pytest-audit-imports-the-registered-suite-audit": Plant(
        module="matrix/pytest_suites/planted.py",
        source="from matrix.registered_suite import tree\n",
        contract="Layers",
        chain="matrix.pytest_suites.planted -> matrix.registered_suite",
    ),
    "registered-suite-audit-imports-the-pytest-audit": Plant(
        module="matrix/registered_suite/planted.py",
        source="from matrix.pytest_suites import rules\n",
        contract="Layers",
        chain="matrix.registered_suite.planted -> matrix.pytest_suites",
    ),
    "guard-records-import-the-finder": Plant(
        module="matrix/guards/model.py",
        source="from matrix.guards.finder import analyse_source\n",
        contract="Guard engine modules",
        chain="matrix.guards.model -> matrix.guards.finder",
    ),
    "what-a-test-tests-imports-the-gate": Plant(
        module="matrix/registered_suite/tested.py",
        source="from matrix.registered_suite.gate import gate\n",
        contract="Registered-suite audit modules",
        chain="matrix.registered_suite.tested -> matrix.registered_suite.gate",
    ),
    "new-package-in-no-layer": Plant(
        module="matrix/planted.py",
        source="VALUE = 1\n",
        contract="Layers",
        chain="- matrix.planted",
    ),
    "core-imports-torch-lazily": Plant(
        module="matrix/core/planted.py",
        source="def load() -> object:\n    import torch\n\n    return torch\n",
        contract="torch only in",
        chain="matrix.core.planted -> torch",
    ),
    "cli-imports-flashinfer": Plant(
        module="matrix/cli/planted.py",
        source="from matrix.core import detect  # fine: detect's torch import is the documented exception\nimport flashinfer\n",
        contract="sglang and flashinfer only in",
        chain="matrix.cli.planted -> flashinfer",
    ),
    "feature-reaches-sglang-through-gpu": Plant(
        module="matrix/coverage/planted.py",
        source="from matrix.gpu import kernels\n",
        contract="sglang and flashinfer only in",
        chain="matrix.gpu",
    ),
}


@pytest.fixture(scope="module")
def lint_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, LintRun]:
    """Every tree below, each a copy with one plant (or none), checked by one lint-imports process."""
    trees = {"real": ROOT, "unplanted": tree_copy(tmp_path_factory.mktemp("unplanted"))}
    for name, plant in PLANTS.items():
        trees[name] = tree_copy(tmp_path_factory.mktemp(name))
        (trees[name] / plant.module).write_text(plant.source, encoding="utf-8")
    stale = trees["stale-ignore"] = tree_copy(tmp_path_factory.mktemp("stale-ignore"))
    text = (stale / "pyproject.toml").read_text(encoding="utf-8")
    planted = text.replace('"matrix.core.detect -> torch",', '"matrix.core.detect -> torch",\n    "matrix.core.model -> torch",')
    assert planted != text
    (stale / "pyproject.toml").write_text(planted, encoding="utf-8")
    return dict(zip(trees, lint_imports(list(trees.values())), strict=True))


def test_real_tree_keeps_every_contract(lint_runs: dict[str, LintRun]) -> None:
    result = lint_runs["real"]
    assert result.code == 0, result.output
    assert "0 broken" in result.output


def test_unplanted_copy_is_green(lint_runs: dict[str, LintRun]) -> None:
    """The copy itself is clean, so each red run below is caused by its plant alone."""
    result = lint_runs["unplanted"]
    assert result.code == 0, result.output


@pytest.mark.parametrize("name", PLANTS)
def test_planted_violation_turns_lint_imports_red(lint_runs: dict[str, LintRun], name: str) -> None:
    plant, result = PLANTS[name], lint_runs[name]
    assert result.code == 1, result.output
    broken = [line for line in result.output.splitlines() if line.endswith("BROKEN") or " BROKEN (" in line]
    assert any(line.startswith(plant.contract) for line in broken), result.output
    assert plant.chain in result.output


def test_stale_ignore_turns_lint_imports_red(lint_runs: dict[str, LintRun]) -> None:
    """An exception that no longer matches an import is reported, so the documented exceptions stay true."""
    result = lint_runs["stale-ignore"]
    assert result.code == 1, result.output
    assert "matrix.core.model -> torch" in result.output
