"""The sglang under test is one the docs name as checked, and the one CI pins."""

from __future__ import annotations

from pathlib import Path

from matrix.core.detect import installed_versions
from matrix.core.model import Matrix
from matrix.sglang_check import CHECKED_SGLANG_VERSIONS

REQUIREMENTS = Path(__file__).resolve().parents[2] / "ci" / "requirements-sglang.txt"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "sglang-check.md"


def test_installed_sglang_is_a_checked_release(versions: dict[str, str]) -> None:
    installed = installed_versions().get("sglang")
    assert installed in CHECKED_SGLANG_VERSIONS, f"sglang {installed} is not among the checked releases {CHECKED_SGLANG_VERSIONS}"
    assert versions["sglang"] == installed


def test_ci_pin_matrix_pin_and_docs_agree(matrix: Matrix) -> None:
    pins = dict(
        line.split("==", 1) for line in REQUIREMENTS.read_text().splitlines() if "==" in line and not line.startswith("#")
    )
    assert pins["sglang"] == matrix.pins["sglang"]
    assert matrix.pins["sglang"] in CHECKED_SGLANG_VERSIONS
    docs = DOCS.read_text()
    assert all(f"sglang {v}" in docs for v in CHECKED_SGLANG_VERSIONS)
