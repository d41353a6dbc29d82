"""The options cascade, runner matching, and the torch-free core."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from matrix.core.detect import facts_from_override
from matrix.core.errors import ConfigError, DetectionError, UnknownRunnerError
from matrix.core.machine import MachineFacts, auto_runner, claim_runner, device_name_matches, differences
from matrix.core.options import CliOverrides, resolve_options


def write_pyproject(folder: Path, body: str) -> None:
    (folder / "pyproject.toml").write_text(f"[project]\nname = 'x'\n[tool.specmatrix]\n{body}\n")


def test_defaults_without_pyproject(tmp_path):
    opts = resolve_options(cli=CliOverrides(), env={}, cwd=tmp_path)
    assert (opts.matrix_path, opts.runner_files, opts.runner) == (None, (), "auto")


def test_cascade_order_pyproject_env_cli(tmp_path):
    write_pyproject(tmp_path, 'matrix = "m.toml"\nrunner = "1-gpu-h200"\nrunners = ["r1.toml"]')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    opts = resolve_options(cli=CliOverrides(), env={}, cwd=sub)
    assert opts.matrix_path == tmp_path / "m.toml"  # relative to the pyproject, found upward
    assert opts.runner == "1-gpu-h200"
    env = {"SPECMATRIX_RUNNER": "4-gpu-b200", "SPECMATRIX_MATRIX": "/env/m.toml", "SPECMATRIX_RUNNERS": "/env/r2.toml"}
    opts = resolve_options(cli=CliOverrides(), env=env, cwd=sub)
    assert (opts.runner, opts.matrix_path) == ("4-gpu-b200", Path("/env/m.toml"))
    opts = resolve_options(cli=CliOverrides(runner="cpu", runner_files=(Path("r3.toml"),)), env=env, cwd=sub)
    assert opts.runner == "cpu"
    assert opts.runner_files == (tmp_path / "r1.toml", Path("/env/r2.toml"), Path("r3.toml"))


def test_options_are_frozen(tmp_path):
    opts = resolve_options(cli=CliOverrides(), env={}, cwd=tmp_path)
    with pytest.raises(AttributeError):
        opts.runner = "cpu"  # type: ignore[misc]


def test_unknown_pyproject_key(tmp_path):
    write_pyproject(tmp_path, 'matrx = "m.toml"')
    with pytest.raises(ConfigError, match="unknown key 'matrx'"):
        resolve_options(cli=CliOverrides(), env={}, cwd=tmp_path)


B200x4 = MachineFacts(gpus=4, capabilities=((10, 0),) * 4, names=("NVIDIA B200",) * 4)
H200x1 = MachineFacts(gpus=1, capabilities=((9, 0),), names=("NVIDIA H200",))
H200x2 = MachineFacts(gpus=2, capabilities=((9, 0),) * 2, names=("NVIDIA H200",) * 2)
H200x4 = MachineFacts(gpus=4, capabilities=((9, 0),) * 4, names=("NVIDIA H200",) * 4)
H100x3 = MachineFacts(gpus=3, capabilities=((9, 0),) * 3, names=("NVIDIA H100 80GB HBM3",) * 3)
CPU = MachineFacts(gpus=0)


@pytest.mark.parametrize(
    ("facts", "profile"),
    [
        (B200x4, "4-gpu-b200"),
        (H200x1, "1-gpu-h200"),
        (H200x2, "2-gpu-h200"),
        (H200x4, "4-gpu-h200"),
        (MachineFacts(gpus=8, capabilities=((9, 0),) * 8, names=("NVIDIA H200",) * 8), "8-gpu-h200"),
        (MachineFacts(gpus=8, capabilities=((9, 0),) * 8, names=("NVIDIA H20",) * 8), "8-gpu-h20"),
        (CPU, "cpu"),
    ],
)
def test_auto_picks_the_most_exact_profile(runners, facts, profile):
    assert auto_runner(runners, facts).name == profile


@pytest.mark.parametrize(
    ("name", "facts", "gap"),
    [
        ("4-gpu-b200", H200x4, "needs sm100, sees sm90"),
        ("4-gpu-b200", MachineFacts(gpus=3, capabilities=((10, 0),) * 3, names=("NVIDIA B200",) * 3), "needs 4 GPU(s), sees 3"),
        (
            "1-gpu-h200",
            MachineFacts(gpus=1, capabilities=((9, 0),), names=("NVIDIA H100",)),
            "needs GPUs named 'H200', sees 'NVIDIA H100'",
        ),
        ("1-gpu-h200", CPU, "needs 1 GPU(s), sees 0"),
    ],
)
def test_claiming_an_unsatisfied_profile_names_the_difference(runners, name, facts, gap):
    assert any(gap in d for d in differences(runners[name], facts))
    with pytest.raises(DetectionError, match=re.escape(gap)):
        claim_runner(runners, name, facts)


@pytest.mark.parametrize(
    ("facts", "nearest"),
    [
        # Once: a substring match and "most GPUs that fit" picked 2-gpu-h100 for 3 x H100 and 4-gpu-h100 for 8.
        (H100x3, "2-gpu-h100: needs 2 GPU(s), sees 3"),
        (
            MachineFacts(gpus=8, capabilities=((9, 0),) * 8, names=("NVIDIA H100 80GB HBM3",) * 8),
            "4-gpu-h100: needs 4 GPU(s), sees 8",
        ),
        (MachineFacts(gpus=3, capabilities=((10, 0),) * 3, names=("NVIDIA B200",) * 3), "4-gpu-b200: needs 4 GPU(s), sees 3"),
        (MachineFacts(gpus=1, capabilities=((8, 0),), names=("NVIDIA A100-SXM4-80GB",)), "needs sm90, sees sm80"),
    ],
)
def test_auto_needs_an_exact_fit_and_names_the_nearest_profiles(runners, facts, nearest):
    with pytest.raises(DetectionError, match="no runner profile fits this machine") as info:
        auto_runner(runners, facts)
    assert nearest in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("wanted", "seen", "matches"),
    [
        ("H200", "NVIDIA H200", True),
        ("H20", "NVIDIA H200", False),
        ("H100", "NVIDIA H100 80GB HBM3", True),
        ("B200", "NVIDIA GB200", False),
        ("GB300", "NVIDIA GB300", True),
        ("h200", "NVIDIA H200 NVL", True),
        ("RTX 5090", "NVIDIA GeForce RTX 5090", True),
        ("5090", "NVIDIA GeForce RTX 50900", False),
    ],
)
def test_device_names_match_on_whole_tokens(wanted, seen, matches):
    assert device_name_matches(wanted, seen) is matches


def test_claim_satisfied_and_unknown(runners):
    assert claim_runner(runners, "4-gpu-b200", B200x4).name == "4-gpu-b200"
    assert claim_runner(runners, "auto", H200x1).name == "1-gpu-h200"
    with pytest.raises(UnknownRunnerError):
        claim_runner(runners, "9-gpu-x", B200x4)


def test_mixed_capabilities_are_reported(runners):
    facts = MachineFacts(gpus=2, capabilities=((9, 0), (10, 0)), names=("a", "b"))
    assert any("mixed compute capability" in d for d in differences(runners["2-gpu-h200"], facts))


def test_override_missing_keys_mean_not_present():
    facts = facts_from_override("{}")
    assert (facts.gpus, facts.capabilities, dict(facts.versions), facts.overridden) == (0, (), {}, True)


def test_override_rejects_non_object():
    with pytest.raises(DetectionError, match="must be a JSON object"):
        facts_from_override("[1, 2]")


def test_core_imports_without_torch(tmp_path):
    """The planning core must import and plan on a machine without torch."""
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import matrix.cli.main, matrix.core.expect, matrix.core.loader, matrix.core.planning, matrix.core.report\n"
        "from matrix.core.options import Options, load\n"
        "from matrix.core.planning import plan_for\n"
        "plan = plan_for(load(Options()), '4-gpu-b200', {})\n"
        "assert plan.expectations\n"
        "assert 'torch' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("table", "env", "builtin"),
    [
        ("", {}, True),
        ("builtin_runners = false\n", {}, False),
        ("builtin_runners = false\n", {"SPECMATRIX_BUILTIN_RUNNERS": "1"}, True),
        ("", {"SPECMATRIX_BUILTIN_RUNNERS": "false"}, False),
    ],
)
def test_builtin_runners_cascade(tmp_path, table, env, builtin):
    (tmp_path / "pyproject.toml").write_text(f"[tool.specmatrix]\n{table}", encoding="utf-8")
    assert resolve_options(cli=CliOverrides(), env=env, cwd=tmp_path).builtin_runners is builtin


@pytest.mark.parametrize(
    ("table", "env", "message"),
    [
        ('builtin_runners = "no"\n', {}, "builtin_runners: expected true or false, got 'no'"),
        ("", {"SPECMATRIX_BUILTIN_RUNNERS": "maybe"}, "SPECMATRIX_BUILTIN_RUNNERS: expected 1 or 0"),
    ],
)
def test_builtin_runners_bad_values(tmp_path, table, env, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.specmatrix]\n{table}", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_options(cli=CliOverrides(), env=env, cwd=tmp_path)
