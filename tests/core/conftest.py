from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Matrix, RunnerProfile


@pytest.fixture(scope="session")
def default_matrix() -> Matrix:
    return load_matrix()


@pytest.fixture(scope="session")
def runners() -> dict[str, RunnerProfile]:
    return load_runners()


@pytest.fixture
def write_toml(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(text: str, name: str = "matrix.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write
