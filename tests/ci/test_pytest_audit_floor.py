"""ci/pytest_audit_floor.py: which files its "helpers by name" rule must parse whole, and its one-line refusal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.ci_scripts import ROOT, ci_script

FILES = {
    "tests/support.py": "import pytest\n\n\ndef require_device():\n    pytest.skip('no device')\n\n\n"
    "def through():\n    require_device()\n",
    # A blanked test body that calls a skipping helper two calls down: parsed whole.
    "tests/test_chain.py": "from support import through\n\n\ndef test_chain():\n    value = 2\n    through()\n",
    # A test that calls another test: parsed whole.
    "tests/test_calls_test.py": "def test_base():\n    assert 1\n\n\ndef test_again():\n    test_base()\n",
    # Bodies that call nothing that skips: blanked.
    "tests/test_plain.py": "def helper():\n    return 3\n\n\ndef test_plain():\n    assert helper() == 3\n",
}


def _measure(tree: Path) -> list[float]:
    module = ci_script("pytest_audit_floor")
    done = subprocess.run(
        [sys.executable, "-c", module.MEASURE, str(tree), str(ROOT)], capture_output=True, text=True, check=True
    )
    return [float(x) for x in done.stdout.split()]


def test_the_helpers_rule_parses_whole_the_files_whose_blanked_bodies_reach_a_skip(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    figures = _measure(tmp_path)
    files, says, whole = figures[0], figures[-2], figures[-1]
    assert files == 4
    assert says == 3  # require_device says skip; through and test_chain reach it
    # support.py has no body to blank (its only bodies reach the skip); test_chain and test_calls_test reach one.
    assert whole == 3
    # The skip-word rule parses fewer nodes than the whole text, the helpers rule no fewer than the skip-word rule.
    nodes, words_nodes, helpers_nodes = figures[4], figures[7], figures[10]
    assert words_nodes < nodes
    assert words_nodes <= helpers_nodes <= nodes


def test_a_missing_checkout_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = ci_script("pytest_audit_floor")
    assert module.main(["--checkout", str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a folder" in err
