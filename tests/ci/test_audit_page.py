"""results/pytest-audit.md is written by two scripts: ci/pytest_audit_flashinfer.py rewrites the page down to its
kept line, ci/pytest_audit_sample.py replaces one sample section. Each must keep what the other wrote."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.ci_scripts import ci_script

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "results" / "pytest-audit.md"


def script(name: str) -> ModuleType:
    return ci_script(name)


def test_the_sample_sections_lie_below_the_line_the_flashinfer_page_keeps() -> None:
    kept = script("pytest_audit_flashinfer").KEPT
    text = PAGE.read_text(encoding="utf-8")
    assert kept in text
    for name in ("ao", "Liger-Kernel"):
        start = f"<!-- sample {name} start -->"
        assert start in text and text.index(kept) < text.index(start)


def test_regenerating_either_part_keeps_the_other(tmp_path: Path) -> None:
    flashinfer, sample = script("pytest_audit_flashinfer"), script("pytest_audit_sample")
    page = tmp_path / "page.md"
    page.write_text(f"# head\n\nold counts\n{flashinfer.KEPT}\n\n## samples\n", encoding="utf-8")
    sample.write_section(page, "widgets", "<!-- sample widgets start -->\nfirst\n<!-- sample widgets end -->\n")
    sample.write_section(page, "widgets", "<!-- sample widgets start -->\nsecond\n<!-- sample widgets end -->\n")
    page.write_text("# head\n\nnew counts\n" + flashinfer.kept_sections(page), encoding="utf-8")
    text = page.read_text(encoding="utf-8")
    assert "new counts" in text and "old counts" not in text
    assert "second" in text and "first" not in text and text.count(flashinfer.KEPT) == 1
