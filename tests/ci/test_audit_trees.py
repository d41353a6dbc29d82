"""ci/audit_trees.py: the decided share of a tree, its top undetermined reasons, and a declared schedule per tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ci_scripts import ci_script

TREE = {
    ".github/workflows/ci.yml": "on: [pull_request]\njobs:\n  t:\n    runs-on: 1-gpu-h100\n    steps:\n      - run: pytest tests/a\n",
    "tests/a/test_a.py": "import pytest\n\npytest.importorskip('cutlass')\n\n\ndef test_one():\n    pass\n\n\ndef test_two():\n    pass\n",
    "tests/a/test_b.py": "def test_b():\n    pass\n",
    "tests/late/test_c.py": "def test_c():\n    pass\n",
}


def _tree(root: Path) -> Path:
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_the_decided_share_and_the_top_reasons(tmp_path: Path) -> None:
    module = ci_script("audit_trees")
    lines = module.report(_tree(tmp_path / "demo"), findings=0)
    text = "\n".join(lines)
    # Four tests: two undetermined (a package the job's install does not name), one runs, one unscheduled.
    assert "- decided: 50.0% of 4 tests (1 - (2 + 0) / 4)" in text
    assert "- 2 tests: guard reads whether cutlass is installed" in text


def test_a_declared_schedule_is_given_to_its_tree_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = ci_script("audit_trees")
    tree = _tree(tmp_path / "demo")
    plan = tmp_path / "late.toml"
    plan.write_text('[[entry]]\njob = "late"\nlabels = ["1-gpu-h100"]\npytest = "pytest tests/late"\n', encoding="utf-8")
    assert module.main(["--schedule-file", f"demo={plan}", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "## demo\n" in out and f"## demo with {plan}" in out
    assert out.count("- decided: ") == 2 and "1 - (2 + 0) / 4" in out
    with pytest.raises(SystemExit):
        module.main(["--schedule-file", f"other={plan}", str(tree)])
    with pytest.raises(SystemExit):
        module.main(["--schedule-file", "demo", str(tree)])
