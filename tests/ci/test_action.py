"""action.yml's steps run as a hosted runner runs them: bash, the workspace as working directory, `GITHUB_OUTPUT`,
`GITHUB_STEP_SUMMARY` and `GITHUB_ACTION_PATH`, each step's `env:` filled from the inputs and the earlier steps'
outputs. The audited repositories hold a `matrix.py` or a `matrix/` package that would turn the gate green if the
action imported it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import matrix

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
GUARD_BUG = ROOT / "tests" / "guards" / "fixture_suite" / "attention" / "test_trtllm_mha_guard_bug.py"
EXPRESSION = re.compile(r"\$\{\{ (inputs|steps)\.([\w-]+)(?:\.outputs\.([\w-]+))? \}\}")
# What a repository's own module would do in the action's place: say nothing and pass.
SHADOW = "print('shadow ran')\nraise SystemExit(0)\n"
SHADOWS: dict[str, dict[str, str]] = {
    "module": {"matrix.py": SHADOW},
    "package": {"matrix/__init__.py": SHADOW, "matrix/__main__.py": SHADOW},
}
# Skips on the GPU-less ubuntu-latest runner its one job runs on: a silent skip (an unconditional one is a warning).
SKIPPED_TEST = (
    'import pytest\nimport torch\n\npytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="off")\n\n\n'
    "def test_a():\n    pass\n"
)
WORKFLOW = "on: pull_request\njobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest tests\n"


# The modules of the package's runtime dependencies (pyproject.toml): what the install step checks for.
DEPENDENCIES = "packaging, yaml, tree_sitter, tree_sitter_bash, jq, pytest"


def _python_with_dependencies() -> str | None:
    """An interpreter (3.11+, not itself a venv) whose own site-packages hold the runtime dependencies: the action's venv,
    made from it with its packages, then needs no index. A venv's python would not do: the venv the action makes
    from it sees the base interpreter's packages, not the venv's."""
    probe = f"import sys, {DEPENDENCIES}; sys.exit(sys.version_info < (3, 11) or sys.prefix != sys.base_prefix)"
    names = [getattr(sys, "_base_executable", ""), "python3", "python3.11", "python3.12", "python3.13"]
    names += sorted(str(p) for p in (Path.home() / ".pyenv" / "versions").glob("3.*/bin/python3"))
    seen: set[str] = set()
    for name in names:
        found = shutil.which(name) if name else None
        if found is None or found in seen:
            continue
        seen.add(found)
        if subprocess.run([found, "-I", "-c", probe], capture_output=True, check=False).returncode == 0:
            return found
    return None


@dataclass(frozen=True, kw_only=True)
class Runner:
    """One job's worth of GitHub's environment in a temporary folder."""

    home: Path
    action_path: Path

    def env(
        self, step_env: Mapping[str, str], inputs: Mapping[str, str], outputs: Mapping[str, dict[str, str]]
    ) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "SPECMATRIX_", "PYTHON"))}
        # A workflow that puts its checkout on PYTHONPATH, as test jobs often do: -I must ignore it.
        env |= {
            "PYTHONPATH": str(self.home / "workspace"),
            "GITHUB_OUTPUT": str(self.home / "output"),
            "GITHUB_STEP_SUMMARY": str(self.home / "summary.md"),
            "GITHUB_ACTION_PATH": str(self.action_path),
            "GITHUB_WORKSPACE": str(self.home / "workspace"),
            "RUNNER_TEMP": str(self.home / "runner-temp"),
            "PIP_NO_INDEX": "1",  # the test never reaches a package index
        }
        for key, value in step_env.items():
            env[key] = EXPRESSION.sub(lambda m: _value(m, inputs, outputs), value)
        return env


def _value(found: re.Match[str], inputs: Mapping[str, str], outputs: Mapping[str, dict[str, str]]) -> str:
    kind, name, output = found.groups()
    if kind == "inputs":
        return inputs.get(name, ACTION["inputs"][name]["default"])
    return outputs.get(name, {}).get(output, "")


@dataclass(frozen=True, kw_only=True)
class Job:
    returncode: int
    outputs: dict[str, dict[str, str]]
    log: str
    summary: str


def run_action(runner: Runner, inputs: Mapping[str, str], done: Mapping[str, dict[str, str]] | None = None) -> Job:
    """Every `run:` step of the action in order, stopping at the first that fails (as `if: success()` does);
    steps whose outputs `done` holds already ran in this job (the install step)."""
    outputs: dict[str, dict[str, str]] = dict(done or {})
    log: list[str] = []
    returncode = 0
    for step in ACTION["runs"]["steps"]:
        if "run" not in step or step.get("id") in outputs:
            continue
        output = runner.home / "output"
        output.write_text("", encoding="utf-8")
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", step["run"]],
            cwd=runner.home / "workspace",
            env=runner.env(step.get("env", {}), inputs, outputs),
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        log.append(done.stdout + done.stderr)
        lines = output.read_text(encoding="utf-8").splitlines()
        outputs[step.get("id", step["name"])] = dict(line.split("=", 1) for line in lines)
        returncode = done.returncode
        if returncode:
            break
    summary_file = runner.home / "summary.md"
    summary = summary_file.read_text(encoding="utf-8") if summary_file.exists() else ""
    return Job(returncode=returncode, outputs=outputs, log="\n".join(log), summary=summary)


@pytest.fixture(scope="module")
def base_python() -> str:
    found = _python_with_dependencies()
    if found is None:
        pytest.skip("no Python 3.11+ here has the runtime dependencies installed; the install step would need an index")
    return found


def _make_runner(tmp_path: Path, files: Mapping[str, str]) -> Runner:
    action_path = tmp_path / "action"
    # What `uses:` fetches: the repository at the pinned commit (the parts the action reads).
    shutil.copytree(ROOT / "matrix", action_path / "matrix", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", action_path)
    (action_path / "ci").mkdir()
    shutil.copy(ROOT / "ci" / "constraints.txt", action_path / "ci")
    for name, text in files.items():
        path = tmp_path / "workspace" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (tmp_path / "runner-temp").mkdir()
    return Runner(home=tmp_path, action_path=action_path)


AUDITS = {
    "guards": {"test/registered/attention/test_bug.py": GUARD_BUG.read_text(encoding="utf-8")},
    "pytest-audit": {"tests/test_off.py": SKIPPED_TEST, ".github/workflows/ci.yml": WORKFLOW},
}


@pytest.mark.parametrize("shadow", sorted(SHADOWS))
@pytest.mark.parametrize("command", sorted(AUDITS))
def test_a_matrix_module_in_the_workspace_cannot_stand_in_for_the_tool(tmp_path, base_python, command, shadow):
    runner = _make_runner(tmp_path, {**AUDITS[command], **SHADOWS[shadow]})
    job = run_action(runner, {"command": command, "python": base_python})
    assert "shadow ran" not in job.log
    assert "audit" in job.outputs, job.log  # the install step succeeded
    # The real finding fails the job: the audit step says 1 and the last step exits 1.
    assert job.outputs["audit"]["exit-code"] == "1", job.log
    assert job.returncode == 1, job.log
    # The version of the installed tool, read from its distribution metadata, not the package's fallback.
    version = f"specmatrix {matrix.__version__}"
    assert job.outputs["install"]["version"] == version
    assert job.log.startswith(version + "\n")
    finding = "silent-skip"
    assert finding in job.log
    assert finding in job.summary


@pytest.mark.parametrize("command", sorted(AUDITS))
def test_the_sarif_names_the_installed_version_and_files_from_the_root(tmp_path, base_python, command):
    runner = _make_runner(tmp_path, {**AUDITS[command], **SHADOWS["package"]})
    job = run_action(runner, {"command": command, "sarif": "true", "python": base_python})
    assert job.outputs["audit"]["exit-code"] == "1", job.log
    sarif = json.loads(Path(job.outputs["audit"]["sarif-file"]).read_text(encoding="utf-8"))
    assert sarif["runs"][0]["tool"]["driver"]["version"] == matrix.__version__
    results = sarif["runs"][0]["results"]
    assert results
    # Code scanning resolves a relative URI against the checkout root: each must name a file there.
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for r in results for loc in r["locations"]}
    assert uris and all((runner.home / "workspace" / uri).is_file() for uri in uris), uris


REFUSED = (
    ({"command": "lint"}, "input command must be guards or pytest-audit, got 'lint'"),
    ({"command": "pytest-audit", "workflows": "."}, "input workflows applies to guards only"),
    ({"command": "guards", "junit": "cpu=junit.xml"}, "input junit applies to pytest-audit only (command: guards)"),
    ({"command": "pytest-audit", "junit": "cpu=no-such-run.xml"}, "no-such-run.xml: no such file or folder"),
    ({"command": "guards", "path": "no/such/folder"}, "no/such/folder"),
)


def test_inputs_the_command_cannot_take_are_one_line_and_exit_2(tmp_path, base_python):
    runner = _make_runner(tmp_path, AUDITS["pytest-audit"])
    installed = run_action(runner, {"command": "pytest-audit", "python": base_python})
    assert installed.outputs["audit"]["exit-code"] == "1", installed.log
    for inputs, message in REFUSED:
        job = run_action(runner, inputs, {"install": installed.outputs["install"]})
        assert job.returncode == 2, (inputs, job.log)
        assert job.outputs["audit"]["exit-code"] == "2"
        assert f"specmatrix: error: {message}" in job.log
        assert "Traceback" not in job.log


RUN = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="2" skipped="1">
<testcase classname="tests.test_off" name="test_a"><skipped type="pytest.skip" message="off">tests/test_off.py:4: off</skipped></testcase>
<testcase classname="tests.test_on" name="test_b" />
</testsuite></testsuites>
"""


def test_runs_given_as_junit_lines_are_joined(tmp_path, base_python):
    files = {**AUDITS["pytest-audit"], "tests/test_on.py": "def test_b():\n    pass\n", "artifacts/ubuntu-latest/junit.xml": RUN}
    runner = _make_runner(tmp_path, files)
    job = run_action(
        runner, {"command": "pytest-audit", "python": base_python, "junit": "\n  ubuntu-latest=artifacts/ubuntu-latest  \n\n"}
    )
    assert job.outputs["audit"]["exit-code"] == "1", job.log
    assert "(skipped-in-every-run)" in job.log  # the annotation of the test that skipped in the one run given
    assert "**Runs joined (JUnit XML)**" in job.summary
    assert "| **all** | 2 | 0 | 0 | 1 | 0 | 0 | 0 |" in job.summary  # both confirmed; the skipped one everywhere


JOIN_EXAMPLE = ROOT / "docs" / "examples" / "specmatrix-junit-join.yml"


def test_the_join_example_joins_every_runner_it_uploads_a_run_from():
    """The documented recipe: one artifact per runner of the test matrix, each joined under that runner's label."""
    doc = yaml.safe_load(JOIN_EXAMPLE.read_text(encoding="utf-8"))
    runners = doc["jobs"]["test"]["strategy"]["matrix"]["runner"]
    upload = next(s for s in doc["jobs"]["test"]["steps"] if "upload-artifact@" in s.get("uses", ""))
    assert upload["with"]["name"] == "junit-${{ matrix.runner }}"
    join = doc["jobs"]["join"]
    assert join["needs"] == "test" and join["if"] == "${{ !cancelled() }}"
    download = next(s for s in join["steps"] if "download-artifact@" in s.get("uses", ""))
    (action_step,) = [s for s in join["steps"] if "specmatrix@" in s.get("uses", "")]
    assert set(action_step["with"]) <= set(ACTION["inputs"])
    lines = action_step["with"]["junit"].split()
    assert lines == [f"{r}=junit/junit-{r}" for r in runners]
    assert download["with"] == {"pattern": "junit-*", "path": "junit"}
    # nox -s workflows runs actionlint and zizmor on it
    noxfile = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    assert 'glob("specmatrix-*.yml")' in noxfile
