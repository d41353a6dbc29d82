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
FIXTURES = Path(__file__).parent.parent / "guards" / "fixture_suite"
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
    # `specmatrix` runs this checkout.
    _shim(
        bin_dir, "specmatrix", f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom matrix.cli import main\nsys.exit(main())\n"
    )
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
        if value == "${{ steps.install.outputs.python }}":
            env[key] = sys.executable  # what the install step hands on: an interpreter that imports specmatrix
        else:
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


def _action_copy(tmp_path: Path) -> Path:
    """The action's checkout as `uses:` fetches it: the package and its constraints, nothing installed."""
    action_path = tmp_path / "action"
    shutil.copytree(ROOT / "matrix", action_path / "matrix", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", action_path)
    (action_path / "ci").mkdir()
    shutil.copy(ROOT / "ci" / "constraints.txt", action_path / "ci")
    return action_path


def test_install_step_refuses_a_python_older_than_3_11(tmp_path, repo):
    pyenv = sorted(str(p) for p in (Path.home() / ".pyenv" / "versions").glob("3.1[0-9].*/bin/python3") if "3.10." in str(p))
    found = (*(shutil.which(name) for name in ("python3.10", "python3.9")), *pyenv)
    old = next((p for p in found if p and subprocess.run([p, "-V"], capture_output=True, check=False).returncode == 0), None)
    if old is None:
        pytest.skip("no Python older than 3.11 on this machine")
    done = _run_step(tmp_path, "Install specmatrix", {"python": old})
    assert done.returncode == 2
    assert "needs Python 3.11 or newer" in done.stderr


def test_every_input_reaches_a_step():
    """No input the steps ignore (the old `version` input installed from an index that has no such package)."""
    text = ACTION.read_text(encoding="utf-8")
    for name in action()["inputs"]:
        assert f"inputs.{name} }}}}" in text, name


@pytest.mark.integration
@pytest.mark.skipif(not Path("/usr/bin/python3").is_file(), reason="no distribution Python at /usr/bin/python3")
def test_install_step_works_with_the_distribution_python(tmp_path, repo):
    """A PEP 668 interpreter (Debian's /usr/bin/python3): the venv is the action's own, so pip may install there."""
    done = _run_step(
        tmp_path, "Install specmatrix", {"python": "/usr/bin/python3"}, {"GITHUB_ACTION_PATH": str(_action_copy(tmp_path))}
    )
    assert done.returncode == 0, done.stdout + done.stderr
    py = _outputs(tmp_path)["python"]
    audit = subprocess.run(
        [py, "-I", "-m", "matrix", "guards", "test/registered"], cwd=repo, capture_output=True, text=True, check=False
    )
    assert audit.returncode == 1, audit.stderr
    assert "silent-skip" in audit.stdout


def test_audit_step_annotates_summarises_writes_sarif_and_the_last_step_fails(tmp_path, repo):
    done = _run_step(tmp_path, "Audit", {"sarif": "true", "workflows": ""})
    assert done.returncode == 0, done.stderr
    assert "::error file=test/registered/attention/test_trtllm_mha_guard_bug.py,line=13," in done.stdout
    outputs = _outputs(tmp_path)
    assert outputs["exit-code"] == "1"
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## Guard audit")
    assert len(summary.splitlines()) < 100
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    assert sarif["version"] == "2.1.0"
    failed = _run_step(tmp_path, "Fail on new findings", {}, {"SPECMATRIX_EXIT": outputs["exit-code"]})
    assert failed.returncode == 1


def test_audit_step_with_a_baseline_passes(tmp_path, repo):
    # A checkout, as on a runner: the baseline written locally and the Action's run key paths from its top level.
    subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    env = _github_env(tmp_path, {}, {})
    subprocess.run(
        ["specmatrix", "guards", "test/registered", "--write-baseline", "guards-baseline.json"],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    done = _run_step(tmp_path, "Audit", {"baseline": "guards-baseline.json", "workflows": ""})
    assert done.returncode == 0, done.stderr
    assert _outputs(tmp_path)["exit-code"] == "0"
    assert "sarif-file" not in _outputs(tmp_path)
    assert _run_step(tmp_path, "Fail on new findings", {}, {"SPECMATRIX_EXIT": "0"}).returncode == 0


def test_audit_step_stops_on_bad_input(tmp_path, repo):
    done = _run_step(tmp_path, "Audit", {"path": "no/such/folder", "workflows": ""})
    assert done.returncode == 2
    assert _outputs(tmp_path)["exit-code"] == "2"


# --- pre-commit -----------------------------------------------------------------------------------------------


def hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in yaml.safe_load(HOOKS.read_text(encoding="utf-8"))}


@pytest.mark.parametrize(("hook_id", "command"), [("specmatrix-guards", "guards"), ("specmatrix-pytest-audit", "pytest-audit")])
def test_hook_definition(hook_id, command):
    hook = hooks()[hook_id]
    assert hook["entry"] == f"specmatrix {command}"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False


def _git(cwd: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _pre_commit_env(tmp_path: Path) -> dict[str, str]:
    """pre-commit and git in a sandbox: their own home and cache, a committer git accepts."""
    return {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "SPECMATRIX_CACHE_DIR": str(tmp_path / "cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_pre_commit_try_repo_runs_the_hook(tmp_path):
    """pre-commit installs this checkout into its own environment (pip, from the package index) and runs the hook."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "attention", project / "attention")
    (project / "attention" / "test_trtllm_mha_guard_bug.py").unlink()
    env = _pre_commit_env(tmp_path)
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


# Paths each hook must run on: what the guard audit and the schedule read (workflows, the runner_configs table, the
# scripts steps run, local actions), and what only pytest-audit reads (pytest's configuration files).
SCHEDULE_INPUTS = [
    "test/registered/attention/test_decode.py",
    ".github/workflows/pr-test.yml",
    ".github/workflows/nightly.yaml",
    "scripts/ci/runner_configs.yml",
    ".github/runner_configs.yaml",
    "scripts/ci/run_suite.py",
    "scripts/run_tests.sh",
    ".github/actions/setup/action.yml",
    ".buildkite/test_areas/kernels.yaml",
    "ci/env/cuda.env",
    "guards-baseline.json",
    "ci/suite-map.toml",
    "ci/runners.toml",
]
NEVER = ["README.md", "docs/workflows/pr-test.yml", "docs/notes.txt"]
PYTEST_CONFIG = ["pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sub/pyproject.toml", "ci/schedule.toml"]


@pytest.mark.parametrize("path", SCHEDULE_INPUTS + NEVER + PYTEST_CONFIG)
@pytest.mark.parametrize("hook_id", ["specmatrix-guards", "specmatrix-pytest-audit"])
def test_hook_runs_when_what_decides_the_audit_changes(hook_id, path):
    """`types: [python]` let a workflow-only commit through; `scripts/ci/runner_configs.yml` (read by the schedule
    to map runner configs to labels) did not start the hook either."""
    runs = path in SCHEDULE_INPUTS or (hook_id == "specmatrix-pytest-audit" and path in PYTEST_CONFIG)
    assert bool(re.search(hooks()[hook_id]["files"], path)) is runs


def test_hook_files_cover_every_place_the_schedule_reads():
    """Derived from the readers: the runner_configs candidates and every CI script folder with every suffix."""
    from matrix.schedule.files import CI_SCRIPT_DIRS
    from matrix.schedule.runner_configs import CANDIDATES

    read = [
        *CANDIDATES,
        *(f"{folder}/sub/x{suffix}" for folder in CI_SCRIPT_DIRS for suffix in (".sh", ".py", ".yml", ".yaml", ".bash", ".env")),
    ]
    for hook in hooks().values():
        assert [p for p in read if not re.search(hook["files"], p)] == [], hook["id"]


EXAMPLE_CONFIG = ROOT / "docs" / "examples" / "pre-commit-config.yaml"


def test_pre_commit_example_is_a_local_hook_that_names_no_release():
    """specmatrix has no release tags: the example runs the installed command (`repo: local`), with the files of
    the published hook."""
    doc = yaml.safe_load(EXAMPLE_CONFIG.read_text(encoding="utf-8"))
    (entry,) = doc["repos"]
    assert entry["repo"] == "local"
    assert "rev" not in entry
    (hook,) = entry["hooks"]
    published = hooks()[hook["id"]]
    assert hook["entry"] == published["entry"]
    assert hook["files"] == published["files"]
    assert hook["language"] == "system"
    assert hook["pass_filenames"] is False
    assert "v0.1.0" not in EXAMPLE_CONFIG.read_text(encoding="utf-8")


SCRATCH_TEST = """\
import unittest

from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="base-b-test-4-gpu-b200")


class TestDecode(unittest.TestCase):
    def test_decode(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
"""
SCRATCH_WORKFLOW = """\
on: pull_request
jobs:
  stage-b:
    runs-on: 4-gpu-b200
    steps:
      - run: python3 run_suite.py --suite {suite}
"""


def _hook_repo(tmp_path: Path, env: dict[str, str]) -> tuple[Path, str]:
    """This checkout as a hook repository at one commit, the way `repo:` + `rev:` name it."""
    hook_repo = tmp_path / "hook-repo"
    ignore = shutil.ignore_patterns(".git", ".venv", ".nox", "__pycache__", "*.egg-info", "build", "dist", ".ci")
    shutil.copytree(ROOT, hook_repo, ignore=ignore, symlinks=True)
    _git(hook_repo, env, "init", "-q")
    _git(hook_repo, env, "add", ".")
    _git(hook_repo, env, "commit", "-qm", "hook repository")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True, check=True).stdout.strip()
    return hook_repo, rev


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_a_workflow_only_commit_that_unschedules_a_suite_is_refused(tmp_path):
    """The documented .pre-commit-config.yaml, installed as a git hook: renaming the suite a workflow runs fails the commit."""
    env = _pre_commit_env(tmp_path)
    hook_repo, rev = _hook_repo(tmp_path, env)
    project = tmp_path / "project"
    (project / "test" / "registered").mkdir(parents=True)
    (project / "test" / "registered" / "test_decode.py").write_text(SCRATCH_TEST, encoding="utf-8")
    workflows = project / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "pr-test.yml").write_text(SCRATCH_WORKFLOW.format(suite="base-b-test-4-gpu-b200"), encoding="utf-8")
    # The remote form docs/adoption.md describes: the example's hook id and args, pinned to a full commit SHA.
    (example,) = yaml.safe_load(EXAMPLE_CONFIG.read_text(encoding="utf-8"))["repos"][0]["hooks"]
    config = {"repos": [{"repo": str(hook_repo), "rev": rev, "hooks": [{"id": example["id"], "args": example["args"]}]}]}
    (project / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (project / "guards-baseline.json").write_text(
        json.dumps({"schema": "specmatrix.guards-baseline/1", "entries": []}, indent=2) + "\n", encoding="utf-8"
    )
    _git(project, env, "init", "-q")
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=project, env=env, check=True, capture_output=True)
    _git(project, env, "add", ".")
    first = subprocess.run(
        ["git", "commit", "-qm", "suite"], cwd=project, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    assert first.returncode == 0, first.stdout + first.stderr
    (workflows / "pr-test.yml").write_text(SCRATCH_WORKFLOW.format(suite="stage-b-test-4-gpu-b200"), encoding="utf-8")
    _git(project, env, "add", ".github/workflows/pr-test.yml")
    refused = subprocess.run(
        ["git", "commit", "-qm", "rename the suite"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert refused.returncode != 0, refused.stdout + refused.stderr
    out = refused.stdout + refused.stderr
    assert "unscheduled" in out
    assert "(no files to check)" not in out
    assert (
        subprocess.run(["git", "log", "--oneline"], cwd=project, capture_output=True, text=True, check=True).stdout.count("\n")
        == 1
    )


EXAMPLE_WORKFLOW = ROOT / "docs" / "examples" / "specmatrix-guards.yml"


def test_example_workflow_passes_only_inputs_the_action_has_and_needs_no_setup_step():
    doc = yaml.safe_load(EXAMPLE_WORKFLOW.read_text(encoding="utf-8"))
    (job,) = doc["jobs"].values()
    uses = [s for s in job["steps"] if "specmatrix@" in s.get("uses", "")]
    assert len(uses) == 1
    assert SHA_PIN.match(uses[0]["uses"]), uses[0]["uses"]
    assert set(uses[0]["with"]) <= set(action()["inputs"])
    assert not [s for s in job["steps"] if "setup-python" in s.get("uses", "")]
    # What codeql-action's upload-sarif needs: security-events to write alerts, actions to read the run (private
    # repositories), contents to read the checkout; nothing else.
    assert job["permissions"] == {"contents": "read", "security-events": "write", "actions": "read"}


# --- the documented snippets on a first commit ------------------------------------------------------------------------

GUARDS_WORKFLOW = SCRATCH_WORKFLOW.format(suite="base-b-test-4-gpu-b200")
# Each snippet's page, its example file, the baseline command the page runs before the first commit, and the project.
SNIPPETS = {
    "specmatrix-pytest-audit": (
        "docs/adoption.md",
        "docs/examples/pre-commit-pytest-audit.yaml",
        "specmatrix pytest-audit . --write-baseline specmatrix-baseline.json",
    ),
    "specmatrix-guards": (
        "docs/adopt-registered-suite.md",
        "docs/examples/pre-commit-config.yaml",
        "specmatrix guards test/registered --workflows . --write-baseline guards-baseline.json",
    ),
}


def _fresh_project(tmp_path: Path, hook_id: str) -> Path:
    """A new repository holding what the hook audits, with one finding already there (the baseline's work)."""
    project = tmp_path / "project"
    if hook_id == "specmatrix-pytest-audit":
        shutil.copytree(ROOT / "examples" / "pytest-project", project)
    else:
        shutil.copytree(FIXTURES / "attention", project / "test" / "registered" / "attention")
        (project / ".github" / "workflows").mkdir(parents=True)
        (project / ".github" / "workflows" / "pr-test.yml").write_text(GUARDS_WORKFLOW, encoding="utf-8")
    return project


NEW_SILENT_SKIP = """import pytest
import torch


@pytest.mark.skipif(torch.cuda.get_device_capability()[0] != 12, reason="sm120 only")
def test_sm120_only():
    assert True
"""
NEW_GUARDED_CLASS = """import unittest

from sglang.srt.utils import is_sm90_supported
from sglang.test.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="base-b-test-4-gpu-b200")


@unittest.skipIf(not is_sm90_supported(), "sm90 only")
class TestNewKernel(unittest.TestCase):
    def test_kernel(self):
        self.assertTrue(True)


if __name__ == "__main__":
    unittest.main()
"""


@pytest.mark.parametrize("hook_id", sorted(SNIPPETS))
def test_the_documented_snippet_passes_the_first_commit_and_refuses_a_new_finding(tmp_path, hook_id):
    """The page's order (baseline written, then the example config) on a fresh repository: the first commit passes;
    the old snippet, committed before its baseline existed, stopped it with exit 2."""
    page, example, baseline_command = SNIPPETS[hook_id]
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    assert baseline_command in text and example in text
    config = yaml.safe_load((ROOT / example).read_text(encoding="utf-8"))
    ((hook,),) = [entry["hooks"] for entry in config["repos"]]
    assert hook["id"] == hook_id and hook["entry"] == hooks()[hook_id]["entry"] and hook["files"] == hooks()[hook_id]["files"]
    baseline = hook["args"][hook["args"].index("--baseline") + 1]
    assert baseline_command.endswith(f"--write-baseline {baseline}")
    project = _fresh_project(tmp_path, hook_id)
    env = _pre_commit_env(tmp_path) | {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    _git(project, env, "init", "-q")
    written = subprocess.run(baseline_command.split(), cwd=project, env=env, capture_output=True, text=True, check=False)
    assert written.returncode == 0, written.stderr
    shutil.copy(ROOT / example, project / ".pre-commit-config.yaml")
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=project, env=env, check=True, capture_output=True)
    _git(project, env, "add", ".")
    first = subprocess.run(["git", "commit", "-qm", "adopt"], cwd=project, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stdout + first.stderr
    if hook_id == "specmatrix-pytest-audit":
        (project / "tests" / "test_sm120.py").write_text(NEW_SILENT_SKIP, encoding="utf-8")
    else:
        (project / "test" / "registered" / "attention" / "test_new_kernel.py").write_text(NEW_GUARDED_CLASS, encoding="utf-8")
    _git(project, env, "add", ".")
    refused = subprocess.run(["git", "commit", "-qm", "new"], cwd=project, env=env, capture_output=True, text=True, check=False)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    said = refused.stdout + refused.stderr
    assert "silent-skip" in said or "never-runs" in said, said
    assert (
        subprocess.run(
            ["git", "status", "--porcelain", baseline], cwd=project, capture_output=True, text=True, check=False
        ).stdout
        == ""
    )


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_pre_commit_try_repo_runs_the_pytest_audit_hook_on_a_fresh_repository(tmp_path):
    """pre-commit installs this checkout (pip, from the package index) and runs `specmatrix-pytest-audit` with its
    default arguments on a new pytest project: clean passes, a silent skip fails, nothing is written."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / "pytest-project", project)
    for planted in ("tests/test_allreduce.py", "benchmarks/test_decode_speed.py"):
        (project / planted).unlink()
    (project / "tests" / "test_attention.py").write_text("def test_decode():\n    assert True\n", encoding="utf-8")
    env = _pre_commit_env(tmp_path)
    _git(project, env, "init", "-q")
    _git(project, env, "add", ".")
    _git(project, env, "commit", "-qm", "suite")
    command = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "specmatrix-pytest-audit", "--all-files"]
    clean = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (project / "tests" / "test_sm120.py").write_text(NEW_SILENT_SKIP, encoding="utf-8")
    _git(project, env, "add", ".")
    _git(project, env, "commit", "-qm", "planted silent skip")
    dirty = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, check=False, timeout=600)
    assert dirty.returncode == 1, dirty.stdout + dirty.stderr
    assert "silent-skip" in dirty.stdout
    assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True, check=True).stdout == ""
