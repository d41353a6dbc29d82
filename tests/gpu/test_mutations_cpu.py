"""The mutation machinery on CPU: text replacement, the overlay, the verdict table, and `python -m tools.gpu.mutate`
end to end over a stand-in package (no sglang, no GPU; tests/sglang runs the same against the real sglang)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from matrix.core.loader import load_matrix
from matrix.core.report import CellResult, CellStatus
from matrix.core.selectors import Selector
from matrix.gpu.mutations import MUTATIONS, MutationError, SourceMutation, build_overlay, mutate_text, overlay_env
from tools.gpu.mutation_table import markdown, mutation_row

ROOT = Path(__file__).resolve().parents[2]
FAKE = SourceMutation(
    name="fake-sizing",
    module="fakepkg.runner.sizing",
    old="ROWS = MAX_BS * TOPK",
    new="ROWS = MAX_BS",
    red="draft-trtllm_mha-topk{2,4}-page16-hd128-gqa4-bf16-graph",
    why="stand-in",
)


def _fake_package(root: Path) -> Path:
    pkg = root / "fakepkg"
    (pkg / "runner").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "other.py").write_text("X = 1\n")
    (pkg / "runner" / "__init__.py").write_text("")
    (pkg / "runner" / "sizing.py").write_text("MAX_BS = 8\nTOPK = 4\nROWS = MAX_BS * TOPK\n")
    return pkg


def test_mutate_text_replaces_exactly_once() -> None:
    assert mutate_text("a ROWS = MAX_BS * TOPK b", FAKE, where="f") == "a ROWS = MAX_BS b"


@pytest.mark.parametrize(("text", "match"), [("nothing here", "is not in f"), ("ROWS = MAX_BS * TOPK\n" * 2, "occurs 2 times")])
def test_a_missing_or_ambiguous_old_text_is_an_error(text: str, match: str) -> None:
    with pytest.raises(MutationError, match=match):
        mutate_text(text, FAKE, where="f")


def test_overlay_links_everything_but_the_mutated_path(tmp_path: Path) -> None:
    pkg = _fake_package(tmp_path / "site")
    (pkg / "runner" / "__pycache__").mkdir()
    overlay = build_overlay(FAKE, tmp_path / "overlay", locate=lambda _: pkg)
    top = overlay / "fakepkg"
    assert (top / "__init__.py").is_symlink() and (top / "other.py").is_symlink()
    assert not (top / "runner").is_symlink() and not (top / "runner" / "__pycache__").exists()
    assert (top / "runner" / "sizing.py").read_text() == "MAX_BS = 8\nTOPK = 4\nROWS = MAX_BS\n"
    assert (pkg / "runner" / "sizing.py").read_text().endswith("ROWS = MAX_BS * TOPK\n")
    env = overlay_env(overlay, {"PYTHONPATH": "/elsewhere"})
    assert env["PYTHONPATH"] == f"{overlay}{os.pathsep}/elsewhere"
    probe = "import fakepkg.runner.sizing as s, fakepkg.other as o; print(s.ROWS, o.X)"
    done = subprocess.run([sys.executable, "-c", probe], env={**os.environ, **env}, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["8", "1"]


def test_a_module_the_package_lacks_is_an_error(tmp_path: Path) -> None:
    pkg = _fake_package(tmp_path / "site")
    with pytest.raises(MutationError, match=r"fakepkg\.runner\.gone is not in the installed fakepkg"):
        build_overlay(replace(FAKE, module="fakepkg.runner.gone"), tmp_path / "overlay", locate=lambda _: pkg)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_each_mutation_expects_red_cells_that_exist(mutation: SourceMutation) -> None:
    assert Selector.parse(mutation.red).filter(load_matrix().cells)


def _result(cell: str, status: CellStatus) -> CellResult:
    return CellResult(nodeid=f"t[{cell}]", cell=cell, test="t", expected="run", rule=None, reason="", status=status)


def test_rows_say_what_was_missed_and_what_strayed() -> None:
    cells = load_matrix().cells
    k2, k4 = (f"draft-trtllm_mha-topk{k}-page16-hd128-gqa4-bf16-graph" for k in (2, 4))
    k1 = "draft-trtllm_mha-topk1-page16-hd128-gqa4-bf16-graph"
    good = mutation_row(
        "m", FAKE.red, cells, [_result(k2, CellStatus.FAILED), _result(k4, CellStatus.CRASHED), _result(k1, CellStatus.PASSED)]
    )
    assert (good.ok, good.missed, good.stray) == (True, (), ())
    bad = mutation_row(
        "m", FAKE.red, cells, [_result(k2, CellStatus.PASSED), _result(k4, CellStatus.FAILED), _result(k1, CellStatus.FAILED)]
    )
    assert (bad.ok, bad.missed, bad.stray) == (False, (k2,), (k1,))
    skipped = mutation_row("m", FAKE.red, cells, [_result(k2, CellStatus.SKIPPED_EXPECTED)])
    assert not skipped.ok  # nothing ran: no verdict
    assert "| m | 3 | 2 | 2 | 1 | 0 | 0 | ok |" in markdown([good])


SUITE = """
import importlib

import pytest


@pytest.mark.matrix(select="draft-trtllm_mha-topk{1,2,4}-page16-hd128-gqa4-bf16-graph")
def test_cell(matrix_cell):
    sizing = importlib.import_module("fakepkg.runner.sizing")
    if matrix_cell.topk > 1:
        assert sizing.ROWS >= sizing.MAX_BS * matrix_cell.topk
"""


@pytest.mark.parametrize(("red", "code"), [(FAKE.red, 0), ("draft-trtllm_mha-topk2-page16-hd128-gqa4-bf16-graph", 1)])
def test_mutate_command_end_to_end(tmp_path: Path, red: str, code: int) -> None:
    """Baseline green, the mutation red exactly where expected (exit 0); a wrong expectation exits 1 and names the cell."""
    site = tmp_path / "site"
    _fake_package(site)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_fake.py").write_text(SUITE)
    mutations = tmp_path / "mutations.py"
    driver = (
        f"import sys\nfrom matrix.gpu import mutations\nfrom tools.gpu import mutate\nmutations.MUTATIONS = mutate.MUTATIONS = ({FAKE!r},)\n".replace(
            "red=" + repr(FAKE.red), "red=" + repr(red)
        )
        + "sys.exit(mutate.main())\n"
    )
    mutations.write_text("from matrix.gpu.mutations import SourceMutation\n" + driver)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)]),
        "SPECMATRIX_DETECT": json.dumps({"gpus": 1, "capability": [9, 0], "name": "NVIDIA H200"}),
    }
    installed = any(e.value == "matrix.plugin" for e in importlib.metadata.entry_points(group="pytest11"))
    load = [] if installed else ["-p", "matrix.plugin"]  # a plain checkout has no entry point
    args = ["--baseline", "--out", str(tmp_path / "out"), "--", "tests", *load, "-p", "no:cacheprovider"]
    args += ["-p", "no:benchmark", "--matrix-runner", "1-gpu-h200", "-q"]
    done = subprocess.run(
        [sys.executable, str(mutations), *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == code, done.stdout + done.stderr
    rows = {r["mutation"]: r for r in json.loads((tmp_path / "out" / "mutations.json").read_text())}
    assert (rows["none"]["red"], len(rows["none"]["green"])) == ([], 3)
    assert sorted(rows["fake-sizing"]["red"]) == [f"draft-trtllm_mha-topk{k}-page16-hd128-gqa4-bf16-graph" for k in (2, 4)]
    if code:
        assert "fake-sizing: red, but the mutation should not reach it: draft-trtllm_mha-topk4" in done.stdout
