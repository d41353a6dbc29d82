"""Buildkite test-area steps and declared schedule files, read into the schedule model."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from matrix.core.errors import ConfigError
from matrix.core.runner_files import load_runners
from matrix.schedule.commands.pytest_command import PytestCommandReader
from matrix.schedule.model import Gate, PytestSelection
from matrix.schedule.services.buildkite import read_test_area, repo_dir
from matrix.schedule.services.declared import declared_schedule, parse_declared

PROFILES = load_runners()
READERS = (PytestCommandReader(),)

# Written for these tests in the shape of vLLM's .buildkite/test_areas/*.yaml (group, steps with label, key,
# device, num_devices, working_dir, parallelism, optional, source_file_dependencies, commands, mirror).
AREA = textwrap.dedent(
    """
    group: Kernels
    depends_on:
      - image-build
    steps:
    - label: Attention kernels (L4) shard %N
      key: attention-l4
      device: l4
      parallelism: 3
      source_file_dependencies:
      - csrc/attention/
      commands:
        - pytest -v -s kernels/attention --shard-id=$$BUILDKITE_PARALLEL_JOB --num-shards=$$BUILDKITE_PARALLEL_JOB_COUNT
    - label: Two-GPU reduce (H100)
      key: reduce-h100
      device: h100
      num_devices: 2
      commands:
        - pytest -v -s kernels/core/test_reduce.py
    - label: Blackwell kernels
      key: kernels-b200
      device: b200-k8s
      optional: true
      working_dir: "/vllm-workspace/"
      commands:
        - nvidia-smi
        - pytest -v -s tests/kernels/test_fp4.py
            --ignore=tests/kernels/test_fp4_slow.py
    - label: IR on a MIG slice
      key: ir-mig
      device: h200_18gb
      commands:
        - pytest -v -s ir
    - label: Unknown accelerator
      key: mystery
      device: tpu_v9
      commands:
        - pytest -v -s tpu
    - label: Split by shard
      key: split
      device: h100
      parallelism: 2
      commands:
        - |
          case "$$BUILDKITE_PARALLEL_JOB" in
            0)
              pytest -v -s kernels/a.py
              ;;
            1)
              pytest -v -s kernels/b.py
              ;;
          esac
    - label: Docs
      key: docs
      commands:
        - make docs
      mirror:
        amd:
          device: mi300_1
    """
)


def test_test_area_steps() -> None:
    schedule = read_test_area(yaml.safe_load(AREA), ".buildkite/test_areas/kernels.yaml", PROFILES, READERS, {"attention-l4": 5})
    by_job: dict[str, list[PytestSelection]] = {}
    for entry in schedule.entries:
        assert isinstance(entry.selection, PytestSelection)
        by_job.setdefault(entry.origin.job, []).append(entry.selection)
    attention = by_job["attention-l4"]
    assert sorted(s.shard for s in attention if s.shard) == [(0, 3), (1, 3), (2, 3)]
    assert {s.paths for s in attention} == {("tests/kernels/attention",)}
    entries = {e.origin.job: e for e in schedule.entries}
    assert entries["attention-l4"].profiles == ("l4",) and entries["attention-l4"].origin.line == 5
    assert entries["attention-l4"].assumptions  # source_file_dependencies gate the step
    assert entries["reduce-h100"].profiles == ("h100-x2",)
    b200 = entries["kernels-b200"]
    assert b200.profiles == ("b200",) and b200.gates == (Gate.SCHEDULE, Gate.MANUAL)
    assert isinstance(b200.selection, PytestSelection)
    assert b200.selection.paths == ("tests/kernels/test_fp4.py",)
    assert b200.selection.ignore == ("tests/kernels/test_fp4_slow.py",)
    assert entries["ir-mig"].profiles == ("h200-mig-18gb",)
    assert [u.label for u in schedule.unknown_labels] == ["tpu_v9"]
    split = sorted({e.selection.paths for e in schedule.entries if e.origin.job == "split"})  # type: ignore[union-attr]
    assert split == [("tests/kernels/a.py",), ("tests/kernels/b.py",)]  # both, in every shard: over-scheduled, never under
    assert [(u.origin.job, u.reason.split(" (")[0]) for u in schedule.unread] == [
        ("split", "pytest lines under shell control flow"),
        ("docs", "no device"),
    ]


def test_container_paths() -> None:
    assert repo_dir("/vllm-workspace/tests") == "tests"
    assert repo_dir("/vllm-workspace/") == "."
    assert repo_dir("/elsewhere/x") == "elsewhere/x"


def test_not_a_test_area() -> None:
    schedule = read_test_area(["steps"], "x.yaml", PROFILES, READERS)
    assert schedule.unread and not schedule.entries


DECLARED = """
[schedule]
source = ".github/workflows/pr.yml"

[[entry]]
job = "gpu (A10G)"
line = 12
labels = ["self-hosted", "sm86"]
script = "scripts/run.sh"
gates = ["always", "label"]

[[entry]]
job = "gpu (H100)"
labels = ["self-hosted", "h100"]
pytest = "pytest tests/ --ignore=tests/big"
env = { RUN_BIG = "0" }

[[unread]]
job = "nightly (dynamic)"
line = 40
reason = "matrix from a script output"

[markers]
gpu_2 = "torch.cuda.device_count() < 2"
"""


def test_declared_schedule() -> None:
    import tomllib

    declared = parse_declared(tomllib.loads(DECLARED), "ci.toml")
    scripts = {"scripts/run.sh": "pytest tests/a.py\n"}
    schedule = declared_schedule(declared, PROFILES, scripts.get, READERS)
    a10g, h100 = schedule.entries
    assert a10g.profiles == ("a10g",) and a10g.gates == (Gate.ALWAYS, Gate.LABEL)
    assert a10g.origin.file == "scripts/run.sh" and a10g.origin.via == (".github/workflows/pr.yml:12",)
    assert h100.profiles == ("h100",) and h100.env_map == {"RUN_BIG": "0"}
    assert isinstance(h100.selection, PytestSelection) and h100.selection.ignore == ("tests/big",)
    assert [u.reason for u in schedule.unread] == ["matrix from a script output"]
    assert declared.markers == (("gpu_2", "torch.cuda.device_count() < 2"),)


def test_declared_label_no_profile_knows() -> None:
    import tomllib

    text = '[[entry]]\njob = "j"\nlabels = ["self-hosted", "gpu-x"]\npytest = "pytest"\n'
    schedule = declared_schedule(parse_declared(tomllib.loads(text), "s.toml"), PROFILES, {}.get, READERS)
    assert [u.label for u in schedule.unknown_labels] == ["gpu-x"]  # the shared resolution leaves generic labels out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[entry]]\njob = "j"\nlabels = ["h100"]\n', "exactly one of script or pytest"),
        ('[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest"\ngates = ["weekly"]\n', "gates must be among"),
        ('[[entry]]\njob = "j"\npytest = "pytest"\ncolour = 1\n', "unknown key 'colour'"),
        ('[[entry]]\njob = "j"\nprofiles = ["nope"]\npytest = "pytest"\n', "unknown profile 'nope'"),
        ('[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest \'open"\n', "does not tokenise"),
        ("[what]\n", "unknown key 'what'"),
    ],
)
def test_declared_errors(text: str, message: str) -> None:
    import tomllib

    with pytest.raises(ConfigError, match=message):
        declared_schedule(parse_declared(tomllib.loads(text), "s.toml"), PROFILES, {}.get, READERS)


def test_cli_bad_schedule_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from matrix.cli.main import main

    bad = tmp_path / "s.toml"
    bad.write_text("[[entry]]\njob = 1\n", encoding="utf-8")
    assert main(["pytest-audit", str(tmp_path), "--schedule-file", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entry 1" in err
