"""Tests against the installed sglang (the `sglang` nox session). Importing sglang failing here is a hard error."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sglang  # noqa: F401  (collection must fail loudly when sglang is missing)

from matrix.core.detect import installed_versions
from matrix.core.expect import effective_versions
from matrix.core.loader import default_matrix_text, load_matrix, load_runners, parse_matrix, read_toml
from matrix.core.model import Matrix, RunnerProfile

from ..gpu.conftest import SGLANG_CPU_IMPORT_WARNINGS


def pytest_configure(config: pytest.Config) -> None:
    for line in SGLANG_CPU_IMPORT_WARNINGS:
        config.addinivalue_line("filterwarnings", line)


def pytest_report_header() -> str:
    versions = installed_versions()
    return f"sglang under test: {versions.get('sglang', 'not installed')} (torch {versions.get('torch', '?')})"


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    return load_matrix()


@pytest.fixture(scope="session")
def runners() -> dict[str, RunnerProfile]:
    return load_runners()


@pytest.fixture(scope="session")
def versions(matrix: Matrix) -> dict[str, str]:
    """The matrix pins overlaid with what is installed: the rules are judged at the sglang under test."""
    return effective_versions(matrix, installed_versions())


def _matrix_with(change: Callable[[dict[str, Any]], None]) -> Matrix:
    data = copy.deepcopy(read_toml(default_matrix_text(), "matrix.toml"))
    change(data)
    return parse_matrix(data, "planted.toml")


@pytest.fixture
def matrix_with() -> Callable[[Callable[[dict[str, Any]], None]], Matrix]:
    """The default matrix with a deliberate change (a planted wrong rule or table entry)."""
    return _matrix_with


def rule_table(data: dict[str, Any], rule_id: str) -> dict[str, Any]:
    """The raw [[rule]] table with this id (for planting a wrong rule)."""
    return next(r for r in data["rule"] if r["id"] == rule_id)


@pytest.fixture
def rule_of() -> Callable[[dict[str, Any], str], dict[str, Any]]:
    return rule_table


_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here needs sglang: marked `requires_sglang`, so a session can select or leave them with -m."""
    for item in items:
        if _HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.requires_sglang)
