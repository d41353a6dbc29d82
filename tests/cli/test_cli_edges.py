"""The core commands' rough edges a new user meets first: machine-readable explain, a closed pipe, the messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from matrix.core.machine import MachineFacts, auto_runner
from matrix.core.model import RunnerProfile
from matrix.core.selectors import nearest
from tests.cli.test_cli import run

B200 = '{"gpus": 4, "capability": [10, 0], "name": "NVIDIA B200", "versions": {"flashinfer": "0.7.2"}}'
CELL = "draft-trtllm_mha-topk2-page16-hd128-gqa4-bf16-graph"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for var in ("SPECMATRIX_DETECT", "SPECMATRIX_MATRIX", "SPECMATRIX_RUNNERS", "SPECMATRIX_RUNNER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("flag", [["--format", "json"], ["--json"]])
def test_explain_json_carries_the_outcome_and_the_whole_rule_trail(capsys, flag):
    code, out, err = run(capsys, "explain", CELL, "--runner", "4-gpu-b200", *flag)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema"] == "specmatrix.explain/1"
    assert doc["runner"] == "4-gpu-b200"
    assert doc["cell"]["id"] == CELL
    assert doc["cell"]["outcome"] == "run"
    assert doc["cell"]["rules"], "the trail is in the document"
    assert {"id", "kind", "satisfied", "detail", "reason", "source"} <= set(doc["cell"]["rules"][0])
    # The text form's lines are all there: same rules, same verdicts.
    _, text, _ = run(capsys, "explain", CELL, "--runner", "4-gpu-b200")
    assert [r["id"] for r in doc["cell"]["rules"]] == [
        line.split()[1] for line in text.splitlines() if line.startswith(("  ok  ", "  SKIP "))
    ]
    assert ("deprecated" in err) == (flag == ["--json"])


def test_explain_json_and_format_text_contradict(capsys):
    code, _, err = run(capsys, "explain", CELL, "--runner", "4-gpu-b200", "--json", "--format", "text")
    assert code == 2
    assert "explain: argument --format: not allowed with argument --json" in err


def test_cells_piped_into_head_exits_quietly():
    env = {**os.environ, "SPECMATRIX_DETECT": B200}
    command = f"{sys.executable!s} -m matrix cells --runner auto --format json | head -3; echo status=${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, check=True)
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 4
    assert done.stdout.splitlines()[-1] == "status=141"


def test_no_runner_fits_names_gpus_by_name_not_as_a_count():
    runners = {"1-gpu-5090": RunnerProfile(name="1-gpu-5090", gpus=1, capability=(12, 0), device_name="5090")}
    facts = MachineFacts(gpus=1, capabilities=((7, 5),), names=("Tesla T4",))
    with pytest.raises(Exception, match="needs GPUs named '5090', sees 'Tesla T4'") as caught:
        auto_runner(runners, facts)
    assert "5090 GPUs" not in str(caught.value)


def test_nearest_ids_rank_the_named_values_first(capsys):
    code, _, err = run(capsys, "explain", "draft-fa3-topk1", "--runner", "4-gpu-b200")
    assert code == 2
    shown = err.split("nearest ids: ")[1].strip().split(", ")
    assert len(shown) == 3
    assert [s.split("-")[2] for s in shown[:2]] == ["topk1", "topk1"]


@pytest.mark.parametrize(
    ("probe", "first"),
    [
        ("draft-fa3-topk1", "draft-fa3-topk1-page1"),
        ("draft-fa3-topk8", "draft-fa3-topk8-page1"),
        ("4-gpu-b20", "4-gpu-b200"),
    ],
)
def test_nearest_prefers_shared_id_parts_over_similar_length(probe, first):
    ids = [
        "draft-fa3-topk8-page1",
        "draft-fa3-topk2-page1",
        "draft-fa3-topk1-page1-hd256-gqa8-fp8kv",
        "draft-fa3-topk1-page1",
        "4-gpu-b200",
    ]
    assert nearest(probe, ids)[0].startswith(first)
