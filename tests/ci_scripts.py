"""The `ci/` scripts as modules, for the tests that call their functions (`ci/` is a folder of scripts, not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def ci_script(name: str) -> ModuleType:
    """`ci/NAME.py`, loaded afresh."""
    spec = importlib.util.spec_from_file_location(f"specmatrix_ci_{name}", ROOT / "ci" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
