"""The `ci/` scripts as modules, for the tests that call their functions (`ci/` is a folder of scripts, not a package)."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def ci_script(name: str) -> ModuleType:
    """`ci/NAME.py`, loaded afresh."""
    return repo_script(f"ci/{name}.py")


def repo_script(path: str) -> ModuleType:
    """The script at `path` in this repository (`ci/NAME.py`, `noxfile.py`), loaded afresh as a module."""
    stem = path.removesuffix(".py").replace("/", "_")
    spec = importlib.util.spec_from_file_location(f"specmatrix_{stem}", ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a script's dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@functools.cache
def noxfile() -> ModuleType:
    """noxfile.py as a module, loaded once per process (nox registers each session as the file runs: twice warns)."""
    return repo_script("noxfile.py")
