"""The composite action and the pre-commit hook, exercised: the action's scripts run locally with a fake GitHub
environment; the hook runs through `pre-commit try-repo` against a small registered suite."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
FIXTURES = Path(__file__).parent / "fixture_suite"
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def action() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


def step(name: str) -> dict:
    return next(s for s in action()["runs"]["steps"] if s["name"] == name)


def test_action_is_composite_with_safe_inputs():
    doc = action()
    assert doc["runs"]["using"] == "composite"
    for s in doc["runs"]["steps"]:
        if "run" in s:
            assert s["shell"] == "bash"
            # Inputs reach scripts through env, never interpolated into the script text.
            assert "${{" not in s["run"], s["name"]
        else:
            assert SHA_PIN.match(s["uses"]), s["uses"]
    assert doc["outputs"]["exit-code"]["value"] == "${{ steps.audit.outputs.exit-code }}"


def _shim(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _github_env(tmp_path: Path, inputs: dict[str, str], step_env: dict[str, str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # `specmatrix` runs this checkout; `python3` records what the install step would install.
    _shim(
        bin_dir, "specmatrix", f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom matrix.cli import main\nsys.exit(main())\n"
    )
    _shim(bin_dir, "python3", f"import sys\nopen({str(tmp_path / 'pip.log')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "SPECMATRIX_"))}
    env |= {
        "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(tmp_path / "repo"),
        "RUNNER_TEMP": str(tmp_path / "runner-temp"),
    }
    for key, value in step_env.items():
        found = re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", value)
        env[key] = inputs.get(found.group(1), action()["inputs"][found.group(1)]["default"]) if found else value
    return env


def _run_step(tmp_path: Path, name: str, inputs: dict[str, str], extra: dict[str, str] | None = None):
    s = step(name)
    env = _github_env(tmp_path, inputs, {**s.get("env", {}), **(extra or {})})
    return subprocess.run(["bash", "-c", s["run"]], cwd=tmp_path / "repo", env=env, capture_output=True, text=True, check=False)


def _outputs(tmp_path: Path) -> dict[str, str]:
    lines = (tmp_path / "output").read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(FIXTURES / "attention", target / "test" / "registered" / "attention")
    (tmp_path / "runner-temp").mkdir()
    return target


def test_install_step_installs_the_version_or_the_action_checkout(tmp_path, repo):
    assert _run_step(tmp_path, "Install specmatrix", {"version": "0.1.0"}).returncode == 0
    assert _run_step(tmp_path, "Install specmatrix", {}).returncode == 0
    log = (tmp_path / "pip.log").read_text().splitlines()
    assert log == [
        "-m pip install --disable-pip-version-check specmatrix==0.1.0",
        f"-m pip install --disable-pip-version-check {ROOT}",
    ]


def test_audit_step_annotates_summarises_writes_sarif_and_the_last_step_fails(tmp_path, repo):
    done = _run_step(tmp_path, "Audit skip guards", {"sarif": "true", "workflows": ""})
    assert done.returncode == 0, done.stderr
    assert "::error file=test/registered/attention/test_trtllm_mha_guard_bug.py,line=13," in done.stdout
    outputs = _outputs(tmp_path)
    assert outputs["exit-code"] == "1"
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## Guard audit")
    assert len(summary.splitlines()) < 100
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    assert sarif["version"] == "2.1.0"
    failed = _run_step(tmp_path, "Fail on new findings", {}, {"GUARDS_EXIT": outputs["exit-code"]})
    assert failed.returncode == 1


def test_audit_step_with_a_baseline_passes(tmp_path, repo):
    env = _github_env(tmp_path, {}, {})
    subprocess.run(
        ["specmatrix", "guards", "test/registered", "--write-baseline", "guards-baseline.json"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    done = _run_step(tmp_path, "Audit skip guards", {"baseline": "guards-baseline.json", "workflows": ""})
    assert done.returncode == 0, done.stderr
    assert _outputs(tmp_path)["exit-code"] == "0"
    assert "sarif-file" not in _outputs(tmp_path)
    assert _run_step(tmp_path, "Fail on new findings", {}, {"GUARDS_EXIT": "0"}).returncode == 0


def test_audit_step_stops_on_bad_input(tmp_path, repo):
    done = _run_step(tmp_path, "Audit skip guards", {"path": "no/such/folder", "workflows": ""})
    assert done.returncode == 2
    assert _outputs(tmp_path)["exit-code"] == "2"


# --- pre-commit -----------------------------------------------------------------------------------------------


def test_hook_definition():
    (hook,) = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    assert hook["id"] == "specmatrix-guards"
    assert hook["entry"] == "specmatrix guards"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_pre_commit_try_repo_runs_the_hook(tmp_path):
    """pre-commit installs this checkout into its own environment (pip, from the package index) and runs the hook."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "attention", project / "attention")
    (project / "attention" / "test_trtllm_mha_guard_bug.py").unlink()
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "SPECMATRIX_CACHE_DIR": str(tmp_path / "cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    _git(project, env, "init", "-q")
    _git(project, env, "add", ".")
    _git(project, env, "commit", "-qm", "suite")
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "specmatrix-guards", "--all-files"]
    clean = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "specmatrix guards" in clean.stdout
    shutil.copy(FIXTURES / "attention" / "test_trtllm_mha_guard_bug.py", project / "attention")
    _git(project, env, "add", ".")
    _git(project, env, "commit", "-qm", "planted silent skip")
    dirty = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert dirty.returncode == 1, dirty.stdout + dirty.stderr
    assert "silent-skip" in dirty.stdout
    # The hook never writes into the project.
    assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True, check=True).stdout == ""
