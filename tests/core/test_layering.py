"""The import contracts of docs/architecture.md: green on the real tree, red on each planted violation.

lint-imports reads the contracts from pyproject.toml and builds the import graph from source (nothing is imported),
so a copy of the package in tmp_path with one planted module is enough; torch, sglang and flashinfer need not be
installed for an import of them to count.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The console script's own entry, run by this interpreter: no reliance on where scripts were installed.
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the `matrix` package and pyproject.toml found under `root`."""
    env = {**os.environ, "PYTHONPATH": str(root)}  # the copy, not the installed checkout, is `matrix`
    return subprocess.run(
        [sys.executable, "-c", LINT_IMPORTS, "--no-cache", "--no-logo"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "matrix", tmp_path / "matrix", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_real_tree_keeps_every_contract() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_unplanted_copy_is_green(tree_copy: Path) -> None:
    """The copy itself is clean, so each red run below is caused by its plant alone."""
    result = lint_imports(tree_copy)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("module", "source", "contract", "chain"),
    [
        pytest.param(
            "matrix/core/planted.py",
            "from matrix.cli import main\n",
            "Layers",
            "matrix.core.planted -> matrix.cli",
            id="core-imports-cli",
        ),
        pytest.param(
            "matrix/shard/planted.py",
            "from matrix.coverage import merge\n",
            "Layers",
            "matrix.shard.planted -> matrix.coverage",
            id="base-feature-imports-composed-feature",
        ),
        pytest.param(
            "matrix/guards/planted.py",
            "from matrix.audit import nodeids\n",
            "Layers",
            "matrix.guards.planted -> matrix.audit",
            id="sibling-features-import-each-other",
        ),
        pytest.param(
            "matrix/planted.py",
            "VALUE = 1\n",
            "Layers",
            "- matrix.planted",
            id="new-package-in-no-layer",
        ),
        pytest.param(
            "matrix/core/planted.py",
            "def load() -> object:\n    import torch\n\n    return torch\n",
            "torch only in",
            "matrix.core.planted -> torch",
            id="core-imports-torch-lazily",
        ),
        pytest.param(
            "matrix/cli/planted.py",
            "from matrix.core import detect  # fine: detect's torch import is the documented exception\nimport flashinfer\n",
            "sglang and flashinfer only in",
            "matrix.cli.planted -> flashinfer",
            id="cli-imports-flashinfer",
        ),
        pytest.param(
            "matrix/coverage/planted.py",
            "from matrix.gpu import kernels\n",
            "sglang and flashinfer only in",
            "matrix.gpu",
            id="feature-reaches-sglang-through-gpu",
        ),
    ],
)
def test_planted_violation_turns_lint_imports_red(tree_copy: Path, module: str, source: str, contract: str, chain: str) -> None:
    (tree_copy / module).write_text(source, encoding="utf-8")
    result = lint_imports(tree_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN") or " BROKEN (" in line]
    assert any(line.startswith(contract) for line in broken), result.stdout
    assert chain in result.stdout


def test_stale_ignore_turns_lint_imports_red(tree_copy: Path) -> None:
    """An exception that no longer matches an import is reported, so the documented exceptions stay true."""
    pyproject = tree_copy / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    planted = text.replace('"matrix.core.detect -> torch",', '"matrix.core.detect -> torch",\n    "matrix.core.model -> torch",')
    assert planted != text
    pyproject.write_text(planted, encoding="utf-8")
    result = lint_imports(tree_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "matrix.core.model -> torch" in result.stdout + result.stderr
