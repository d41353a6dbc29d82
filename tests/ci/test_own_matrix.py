"""examples/own-matrix end to end: a matrix of its own axes (model x seqlen), its own runners, no built-in profile.

cells, the skip audit (with a planted unexpected skip), shard, coverage and register, as a user runs them from the
project's folder (its pyproject.toml names the files); the noxfile itself runs under `nox -s integration`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "own-matrix"
CPU = '{"gpus": 0}'
RUN_ON_CPU = ["tiny-s128", "tiny-s512", "small-s128", "small-s512"]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    target = tmp_path / "own-matrix"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("out", "__pycache__", ".nox"))
    for var in ("SPECMATRIX_MATRIX", "SPECMATRIX_RUNNERS", "SPECMATRIX_RUNNER", "SPECMATRIX_BUILTIN_RUNNERS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPECMATRIX_DETECT", CPU)
    monkeypatch.chdir(target)
    return target


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_only_the_projects_runners_and_its_cells(capsys, project):
    code, out, _ = run(capsys, "runners", "--json")
    assert code == 0
    assert [r["name"] for r in json.loads(out)["runners"]] == ["cpu", "2-gpu-a100"]
    code, out, _ = run(capsys, "cells", "--runner", "auto", "--json")
    doc = json.loads(out)
    assert (code, doc["matrix"], doc["runner"]) == (0, "toy-attention", "cpu")
    assert [c["id"] for c in doc["cells"] if c["outcome"] == "run"] == RUN_ON_CPU
    code, _, err = run(capsys, "cells", "--runner", "4-gpu-b200")
    assert code == 2
    assert "unknown runner '4-gpu-b200'" in err


def test_builtin_runners_come_back_when_the_project_allows_them(capsys, project):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("builtin_runners = false", "builtin_runners = true"))
    code, _, err = run(capsys, "runners", "--json")
    assert code == 2  # the project's `cpu` now clashes with the built-in one of that name
    assert "runner 'cpu' is already a built-in profile" in err
    pyproject.write_text(
        pyproject.read_text().replace("builtin_runners = true", 'builtin_runners = true\nreplace_runners = ["cpu"]')
    )
    code, out, _ = run(capsys, "runners", "--json")
    names = [r["name"] for r in json.loads(out)["runners"]]
    assert code == 0
    assert {"cpu", "2-gpu-a100", "4-gpu-b200"} <= set(names)
    assert len(names) > 2


def test_builtin_runners_false_without_a_runners_file_says_what_is_missing(capsys, project):
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('runners = "runners.toml"\n', ""))
    code, _, err = run(capsys, "runners")
    assert code == 2
    assert "builtin_runners = false leaves no runner profile" in err


def test_shard_costs_cells_by_the_default_cost_model(capsys, project):
    code, out, _ = run(capsys, "shard", "--runner", "2-gpu-a100", "--shards", "3", "--format", "json")
    assert code == 0
    plan = json.loads(out)
    assert plan["cells"] == 9
    assert sorted(c for s in plan["shards"] for c in s["cells"]) == sorted(
        f"{m}-s{n}" for m in ("tiny", "small", "large") for n in (128, 512, 4096)
    )
    # [cost] cell_seconds = 2.0 and shard_seconds = 30.0; two GPUs run the cells of a shard side by side.
    assert all(s["est_seconds"] == 30.0 + 2.0 * len(s["cells"]) / 2 for s in plan["shards"])
    (project / "matrix.toml").write_text((project / "matrix.toml").read_text().split("# Optional: without [cost]")[0])
    code, out, _ = run(capsys, "shard", "--runner", "2-gpu-a100", "--shards", "3", "--format", "json")
    assert code == 0, "no [cost] table at all: the defaults"
    assert all(s["est_seconds"] == 60.0 + 1.0 * len(s["cells"]) / 2 for s in json.loads(out)["shards"])


def test_register_says_precisely_what_it_needs(capsys, project):
    code, _, err = run(capsys, "register", "--out", "gen")
    assert code == 2
    assert "none covers a cell of matrix 'toy-attention'" in err
    assert "pytest --matrix-runner" in err
    assert not (project / "gen").exists()


def test_skip_audit_then_coverage_on_the_projects_axes(pytester: pytest.Pytester, monkeypatch, capsys):
    for var in ("SPECMATRIX_MATRIX", "SPECMATRIX_RUNNERS", "SPECMATRIX_RUNNER", "SPECMATRIX_BUILTIN_RUNNERS"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SPECMATRIX_DETECT", CPU)
    for name in ("matrix.toml", "runners.toml", "pyproject.toml"):
        shutil.copy(EXAMPLE / name, pytester.path / name)
    (pytester.path / "tests").mkdir()
    shutil.copy(EXAMPLE / "tests" / "test_attention.py", pytester.path / "tests")
    result = pytester.runpytest("-p", "no:cacheprovider", "--matrix-runner", "cpu", "--matrix-report", "out/cpu.json")
    result.assert_outcomes(passed=4, skipped=5)
    result.stdout.fnmatch_lines(["planned 9 = 4 passed + 5 skipped-expected"])
    assert result.ret == 0

    code, out, _ = run(capsys, "coverage", "out/cpu.json", "--out", "cov", "--no-heatmap")
    assert code == 0, out
    doc = json.loads((pytester.path / "cov" / "coverage.json").read_text())
    assert {(b["model"], b["seqlen"]) for b in doc["buckets"]} == {
        (m, str(n)) for m in ("tiny", "small", "large") for n in (128, 512, 4096)
    }
    table = (pytester.path / "cov" / "coverage.md").read_text()
    assert "| arch | model | seqlen |" in table
    assert "None" not in table

    # Planted: a test that skips a cell the matrix says must run on cpu.
    (pytester.path / "tests" / "test_planted.py").write_text(
        "import pytest\n\n\ndef test_planted(matrix_cell):\n"
        "    if matrix_cell.model == 'tiny' and matrix_cell.seqlen == 128:\n"
        "        pytest.skip('flaky on CI')\n",
        encoding="utf-8",
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--matrix-runner", "cpu", "--matrix-report", "out/cpu.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*1 skipped-unexpected*"])
    assert "tiny-s128" in result.stdout.str()
    code, out, _ = run(capsys, "coverage", "out/cpu.json", "--out", "cov", "--no-heatmap")
    assert code == 1
    assert "tiny seqlen 128 skipped unexpectedly on cpu in tests/test_planted.py::test_planted (1 cell: tiny-s128)" in out


@pytest.mark.integration
def test_the_example_noxfile_runs_every_session(tmp_path):
    """The project's own CI, `nox --force-venv-backend none`: the specmatrix of this environment, nothing installed."""
    target = tmp_path / "own-matrix"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("out", "__pycache__", ".nox"))
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SPECMATRIX_DETECT": CPU, "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "nox", "--force-venv-backend", "none"],
        cwd=target,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Session coverage was successful" in done.stderr
    assert (target / "out" / "coverage" / "coverage.md").is_file()


def test_heatmap_layout_follows_the_projects_axes(capsys, project, monkeypatch):
    """Rows are arch x model, columns seqlen: the tick labels name the project's axes (no `None`)."""
    matplotlib = pytest.importorskip("matplotlib")
    from matrix.core.options import CliOverrides, load, resolve_options
    from matrix.coverage.heatmap import render_heatmap
    from matrix.coverage.merge import merge

    loaded = load(resolve_options(cli=CliOverrides(), env={}, cwd=project))
    result = merge(loaded.matrix, loaded.runners, [], expect_runners=[loaded.runners["cpu"]])
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text in the SVG
        svg = render_heatmap(result, ("svg",), stem="h")["h.svg"].decode()
    for label in ("seqlen 128", "seqlen 4096", "cpu tiny", "cpu large"):
        assert label in svg
    assert "None" not in svg
