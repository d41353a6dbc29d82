from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.core.model import RunnerProfile
from matrix.guards.predicates import RunnerFacts

# The fixture suite is data for the audit, never a test module to import.
collect_ignore = ["fixture_suite"]

FIXTURE_SUITE = Path(__file__).parent / "fixture_suite"
# One profile per architecture the evaluator must tell apart.
ARCH_PROFILES = {"sm90": "1-gpu-h100", "sm100": "4-gpu-b200", "sm120": "1-gpu-5090", "cpu": "cpu"}


@pytest.fixture(scope="session")
def runners() -> dict[str, RunnerProfile]:
    return load_runners()


@pytest.fixture(scope="session")
def facts_for(runners: dict[str, RunnerProfile]) -> Callable[..., RunnerFacts]:
    def make(arch: str, installed: frozenset[str] = frozenset()) -> RunnerFacts:
        return RunnerFacts(profile=runners[ARCH_PROFILES.get(arch, arch)], installed=installed)

    return make


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    """A private copy of the fixture suite, so anything written beside its files lands in tmp."""
    target = tmp_path / "suite"
    shutil.copytree(FIXTURE_SUITE, target)
    return target


@pytest.fixture(scope="session")
def shared_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the fixture suite for the tests that only read it (they write only to their own tmp_path).

    A test that edits, deletes or executes a file of the suite, or checks that nothing was written beside its
    files, takes its own `suite_copy`; copying the suite costs about 30 ms, and two dozen tests only read it.
    """
    target = tmp_path_factory.mktemp("shared-suite") / "suite"
    shutil.copytree(FIXTURE_SUITE, target)
    return target


@pytest.fixture(autouse=True)
def private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every guard test gets its own results cache, never the user's ~/.cache."""
    folder = tmp_path / "guards-cache"
    monkeypatch.setenv("SPECMATRIX_CACHE_DIR", str(folder))
    return folder
