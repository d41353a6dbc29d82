"""ci/pytest_audit_flashinfer.py writes its page from a checkout: the script runs end to end on a small tree."""

from __future__ import annotations

from pathlib import Path

from tests.ci_scripts import ci_script

ROOT = Path(__file__).resolve().parents[2]

SUITE = """import pytest
import torch


@pytest.mark.skipif(torch.cuda.get_device_capability()[0] < 10, reason="needs sm100")
def test_blackwell_kernel():
    assert True


def test_everywhere():
    assert True
"""


def test_the_page_lists_a_silent_skip_of_a_small_checkout(tmp_path: Path) -> None:
    script = ci_script("pytest_audit_flashinfer")
    (tmp_path / "tree" / "tests").mkdir(parents=True)
    (tmp_path / "tree" / "tests" / "test_kernels.py").write_text(SUITE)
    out = tmp_path / "page.md"
    argv = ["--checkout", str(tmp_path / "tree"), "--out", str(out), "--jobs", "1", "--commit", "abc1234 2026-12-01"]
    assert script.main(argv) == 0
    page = out.read_text()
    assert "`abc1234 2026-12-01 (an extracted tree of that commit)`" in page
    assert "## Tests that skip on every runner CI sends them to (1)" in page
    assert "| <code>tests/test_kernels.py::test_blackwell_kernel</code> | compute capability |" in page
    assert "test_everywhere" not in page
