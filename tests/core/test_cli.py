"""The core commands end to end, and every bad input as exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.cli.main import main

B200 = '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200", "versions": {"flashinfer": "0.7.2"}}'


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("SPECMATRIX_DETECT", "SPECMATRIX_MATRIX", "SPECMATRIX_RUNNERS", "SPECMATRIX_RUNNER", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("runner", ["4-gpu-b200", "1-gpu-h200"])
def test_cells_json_lists_every_cell_with_outcome_and_reason(capsys, default_matrix, runner):
    code, out, _ = run(capsys, "cells", "--runner", runner, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "specmatrix.cells/1"
    assert doc["runner"] == runner
    assert len(doc["cells"]) == len(default_matrix.cells)
    for cell in doc["cells"]:
        assert cell["outcome"] in ("run", "skip")
        assert cell["reason"]
    assert doc["detection_overridden"] is False


def test_cells_b200_vs_h200_differ_on_fa3(capsys):
    _, b200, _ = run(capsys, "cells", "--runner", "4-gpu-b200", "--json")
    _, h200, _ = run(capsys, "cells", "--runner", "1-gpu-h200", "--json")
    b = {c["id"]: c["outcome"] for c in json.loads(b200)["cells"]}
    h = {c["id"]: c["outcome"] for c in json.loads(h200)["cells"]}
    fa3 = "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph"
    assert (b[fa3], h[fa3]) == ("skip", "run")


def test_cells_text_table(capsys):
    code, out, _ = run(
        capsys, "cells", "--runner", "4-gpu-b200", "--select", "draft-trtllm_mha-topk{1,4}-page{1,16}-hd128-gqa4-bf16-graph"
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("runner 4-gpu-b200 (4 GPU(s), sm100)")
    assert any(
        "draft-trtllm_mha-topk4-page16-hd128-gqa4-bf16-graph" in ln and " RUN " in ln and "[trtllm-gen]" in ln for ln in lines
    )
    assert any("topk1-page1-" in ln and "SKIP" in ln and "[trtllm-mha-page-size]" in ln for ln in lines)
    assert lines[-1] == "4 cells: 2 run, 2 expected skips"


def test_explain_prints_rule_trail(capsys):
    code, out, _ = run(capsys, "explain", "draft-fa3-topk1-page16-hd128-gqa4-bf16-graph", "--runner", "4-gpu-b200")
    assert code == 0
    assert "on 4-gpu-b200 (4 GPU(s), sm100): SKIP" in out
    assert "SKIP fa3-hopper-only (hardware)" in out
    assert "ok   needs-gpu" in out
    assert "source: sglang 0.5.23" in out


def test_runners_counts(capsys):
    code, out, _ = run(capsys, "runners", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["runners"]}
    assert rows["cpu"]["run"] == 0
    assert rows["4-gpu-b200"]["run"] > 0
    assert rows["4-gpu-b200"]["skip_policy"] == "strict"


def test_detect_under_override_says_so(capsys, monkeypatch):
    monkeypatch.setenv("SPECMATRIX_DETECT", B200)
    code, out, _ = run(capsys, "detect")
    assert code == 0
    assert "4 x NVIDIA B200 (sm100) [detection overridden by SPECMATRIX_DETECT]" in out
    assert "runner profile: 4-gpu-b200" in out


def test_auto_runner_output_says_detection_overridden(capsys, monkeypatch):
    monkeypatch.setenv("SPECMATRIX_DETECT", '{"gpus": 1, "capability": [9, 0], "name": "NVIDIA H200"}')
    code, out, _ = run(capsys, "cells", "--select", "draft-fa3-topk1-page16-*")
    assert code == 0
    assert out.startswith("runner 1-gpu-h200")
    assert "note: detection overridden by SPECMATRIX_DETECT" in out
    _, js, _ = run(capsys, "cells", "--json", "--select", "draft-fa3-topk1-page16-*")
    assert json.loads(js)["detection_overridden"] is True


BAD_INPUT = [
    (["cells", "--runner", "4-gpu-b300"], "unknown runner '4-gpu-b300'; nearest runners: 4-gpu-gb300, 4-gpu-b200"),
    (["cells", "--runner", "cpu", "--select", "draft-cutlass-*"], "selector 'draft-cutlass-*' matches no cell"),
    (["cells", "--runner", "cpu", "--select", "draft-{a,b"], "is never closed"),
    (["explain", "draft-*", "--runner", "cpu"], "explain needs one cell id"),
    (["cells", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["--matrix", "nope.toml", "cells", "--runner", "cpu"], "nope.toml: cannot read"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUT, ids=[m[:30] for _, m in BAD_INPUT])
def test_bad_input_exit_2_one_line(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1, err
    assert err.startswith("specmatrix: error: ")
    assert message in err


def test_malformed_matrix_file_names_line(capsys, tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text('name = "m"\n[[axis]]\nname = "a"\nvalues = [1, 2\nid = "x"\n')
    code, _, err = run(capsys, "--matrix", str(bad), "cells", "--runner", "cpu")
    assert code == 2
    assert "m.toml: malformed TOML" in err and "line" in err


def test_matrix_naming_unknown_axis(capsys, tmp_path):
    bad = tmp_path / "m.toml"
    bad.write_text(
        'name = "m"\n[[axis]]\nname = "backend"\nvalues = ["triton"]\n[[group]]\nname = "g"\nbackend = ["triton"]\n'
        '[[rule]]\nid = "r"\nkind = "kernel"\nreason = "x"\nsource = "y"\nwhen = { topk = { eq = 2 } }\nrequire = { gpus = { ge = 1 } }\n'
    )
    code, _, err = run(capsys, "--matrix", str(bad), "cells", "--runner", "cpu")
    assert code == 2
    assert "no axis or runner fact named 'topk'" in err


@pytest.mark.parametrize(
    ("detect", "message"),
    [
        ("{not json", "SPECMATRIX_DETECT: not valid JSON"),
        ('{"gpus": 2}', "gpus given without capability"),
        ('{"gpus": 1, "capability": [9, 0], "colour": "green"}', "unknown key 'colour'"),
        ('{"gpus": 3, "capability": [7, 0]}', "no runner profile fits this machine (3 x GPU (sm70)"),
    ],
)
def test_bad_detection_override(capsys, monkeypatch, detect, message):
    monkeypatch.setenv("SPECMATRIX_DETECT", detect)
    code, _, err = run(capsys, "detect")
    assert code == 2
    assert message in err


def test_console_script_and_module_entry_points(tmp_path):
    env_free = {"PATH": str(Path(sys.executable).parent)}
    for argv in (["specmatrix", "runners"], [sys.executable, "-m", "matrix", "runners"]):
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env_free, check=False)
        assert proc.returncode == 0, proc.stderr
        assert "4-gpu-b200" in proc.stdout


def test_no_traceback_for_bad_input_via_console_script(tmp_path):
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "specmatrix"), "cells", "--runner", "nope"],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("specmatrix: error: unknown runner 'nope'")
