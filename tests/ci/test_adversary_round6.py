"""An adversary's sixth round against the readers that declare their subsets (Make, containers, shell, launchers),
pytest's own collection, other CI services, GitHub expressions, the bounds and the outputs.

Each case is a checkout written fresh around one guarded test (`tests/test_a.py::test_gpu`, skipped unless
SUITE=gpu) and the verdict the real tools give it. The audit may say that verdict or `undetermined` (with the
construct named where the case is outside a declared subset), never another; a case marked `exact` must be
decided. Where the CI script is plain bash and make, the truth is not asserted by hand: bash and GNU make run the
script with a stub `pytest` that records its environment (`adversary_harness.truth_by_bash`). Every command runs in
a child process under 10 s of CPU and 1 GiB, with no traceback, no read outside the tree and no overwritten input.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.ci.adversary_harness import (
    GUARDED,
    SECRET,
    WORKFLOW,
    Verdict,
    audit,
    checkout,
    specmatrix,
    truth_by_bash,
    verdict,
    workflow,
)

R, S, N, U = Verdict.RUNS, Verdict.SKIPS, Verdict.NEVER, Verdict.UNDETERMINED


@dataclass(frozen=True, kw_only=True)
class Case:
    """A script (a step's `run:`) with the files beside it, what really happens to the test, and what the audit
    must say: the truth, or (unless `exact`) undetermined with `named` in a reason."""

    script: str
    truth: Verdict
    files: dict[str, str] = field(default_factory=dict)
    exact: bool = False
    named: str = ""
    bash: bool = True  # bash and make can tell the truth (no docker, no GitHub expression)


def _mk(text: str) -> dict[str, str]:
    return {"Makefile": text}


CASES: dict[str, Case] = {
    # --- Make ----------------------------------------------------------------------------------------------
    "make-recipe-prefix-assignment": Case(script="make t", files=_mk("t:\n\tSUITE=gpu pytest tests\n"), truth=R, exact=True),
    "make-export-directive": Case(script="make t", files=_mk("export SUITE = gpu\nt:\n\tpytest tests\n"), truth=R, exact=True),
    "make-target-three-times-last-wins": Case(
        script="make t",
        files=_mk("t:\n\tSUITE=cpu pytest tests\nt:\n\tSUITE=cpu pytest tests\nt:\n\tSUITE=gpu pytest tests\n"),
        truth=R,
        exact=True,
    ),
    "make-target-twice-last-skips": Case(
        script="make t", files=_mk("t:\n\tSUITE=gpu pytest tests\nt:\n\tSUITE=cpu pytest tests\n"), truth=S, exact=True
    ),
    "make-file-assignment-beats-environment": Case(
        script="export SUITE=gpu\nmake t", files=_mk("SUITE = cpu\nexport SUITE\nt:\n\tpytest tests\n"), truth=S, exact=True
    ),
    "make-include-redefines-recipe-after": Case(
        script="make t",
        files={"Makefile": "t:\n\tSUITE=gpu pytest tests\ninclude late.mk\n", "late.mk": "t:\n\tSUITE=cpu pytest tests\n"},
        truth=S,
        exact=True,
    ),
    "make-ifndef-else-open-world": Case(
        script="make t",
        files=_mk("ifndef NOT_SET_ANYWHERE\nS = gpu\nelse\nS = cpu\nendif\nt:\n\tSUITE=$(S) pytest tests\n"),
        truth=R,
    ),
    "make-else-ifeq-chain": Case(
        script="make t",
        files=_mk(
            "A = 1\nifeq ($(A),2)\nS = cpu\nelse ifeq ($(A),1)\nS = gpu\nelse\nS = cpu\nendif\nt:\n\tSUITE=$(S) pytest tests\n"
        ),
        truth=R,
        exact=True,
    ),
    "make-brace-MAKE-sub-make": Case(
        script="make t", files=_mk("t:\n\t${MAKE} u\nu:\n\tSUITE=gpu pytest tests\n"), truth=R, exact=True
    ),
    "make-MAKEFLAGS-definition-without-dashes": Case(
        script="MAKEFLAGS=SUITE=gpu make t", files=_mk("SUITE = cpu\nexport SUITE\nt:\n\tpytest tests\n"), truth=R, exact=True
    ),
    "make-unexport": Case(
        script="make t", files=_mk("export SUITE = gpu\nunexport SUITE\nt:\n\tpytest tests\n"), truth=S, exact=True
    ),
    "make-command-line-beats-conditional-assignment": Case(
        script="make t S=gpu", files=_mk("S ?= cpu\nt:\n\tSUITE=$(S) pytest tests\n"), truth=R, exact=True
    ),
    "make-override-beats-command-line": Case(
        script="make t S=gpu", files=_mk("override S = cpu\nt:\n\tSUITE=$(S) pytest tests\n"), truth=S, exact=True
    ),
    "make-target-specific-export": Case(
        script="make t", files=_mk("t: export SUITE = gpu\nt:\n\tpytest tests\n"), truth=R, exact=True
    ),
    "make-two-recipe-lines-two-environments": Case(
        script="make t", files=_mk("t:\n\tSUITE=gpu pytest tests\n\tSUITE=cpu pytest tests\n"), truth=R, exact=True
    ),
    "make-eval-outside": Case(
        script="make t", files=_mk("$(eval S = gpu)\nt:\n\tSUITE=$(S) pytest tests\n"), truth=R, named="eval"
    ),
    "make-e-outside": Case(
        script="export SUITE=gpu\nmake -e t", files=_mk("SUITE = cpu\nexport SUITE\nt:\n\tpytest tests\n"), truth=R, named="-e"
    ),
    "make-six-deep-foreach-bound": Case(
        script="make t",
        files=_mk(
            "A = 0 1 2 3 4 5 6 7 8 9\nB = $(foreach a,$(A),$(foreach b,$(A),$(foreach c,$(A),$(foreach d,$(A),"
            "$(foreach e,$(A),$(foreach f,$(A),$a$b$c$d$e$f))))))\nt:\n\tSUITE=gpu pytest tests $(words $(B))\n"
        ),
        truth=N,  # `pytest tests 1000000`: a path that does not exist, so pytest runs nothing
        named="bound",
        bash=False,
    ),
    # --- shell on the runner ----------------------------------------------------------------------------------
    "shell-unset-quoted-name": Case(script='export SUITE=gpu\nunset "SUITE"\npytest tests', truth=S, exact=True),
    "shell-unset-joined-quotes": Case(script='export SUITE=gpu\nunset SUI"TE"\npytest tests', truth=S, exact=True),
    "shell-unset-through-a-variable": Case(script="export SUITE=gpu\nN=SUITE\nunset $N\npytest tests", truth=S, exact=True),
    "shell-unset-in-a-subshell": Case(script="export SUITE=gpu\n(unset SUITE)\npytest tests", truth=R, exact=True),
    "shell-env-u-glued": Case(script="export SUITE=gpu\nenv -uSUITE pytest tests", truth=S, exact=True),
    "shell-two-commands-of-one-script": Case(
        script="bash ci/run.sh", files={"ci/run.sh": "SUITE=gpu pytest tests\nSUITE=cpu pytest tests\n"}, truth=R, exact=True
    ),
    "shell-command-bypasses-a-function": Case(
        script='export SUITE=gpu\npytest() { unset SUITE; command pytest "$@"; }\ncommand pytest tests', truth=R, exact=True
    ),
    "shell-nullglob-matching-nothing": Case(script="shopt -s nullglob\nSUITE=gpu pytest tests/nothing_*.py", truth=R, exact=True),
    "shell-brace-expansion-outside": Case(
        script="SUITE=gpu pytest tests/test_{a,b}.py",
        files={"tests/test_b.py": "def test_b():\n    pass\n"},
        truth=R,
        named="brace",
    ),
    "shell-sudo-resets-the-environment": Case(script="export SUITE=gpu\nsudo pytest tests", truth=S, named="sudo", bash=False),
    "shell-env-chdir-glued": Case(
        script="SUITE=gpu env --chdir=sub pytest tests",
        files={"sub/tests/test_b.py": "def test_b():\n    pass\n"},
        truth=N,  # pytest runs in sub/: sub/tests, never tests/test_a.py
        exact=True,
        bash=False,
    ),
    "shell-command-substitution-rebinding": Case(script="export SUITE=cpu\nSUITE=$(echo gpu)\npytest tests", truth=R),
    "shell-xargs-launcher": Case(script="echo tests | SUITE=gpu xargs pytest", truth=R, named="xargs"),
    # --- launchers ------------------------------------------------------------------------------------------
    "launch-bash-options-before-the-script": Case(
        script="bash -ex ci/run.sh", files={"ci/run.sh": "export SUITE=gpu\npytest tests\n"}, truth=R, exact=True
    ),
    "launch-bash-o-in-a-group": Case(
        script="bash --noprofile --norc -eo pipefail ci/run.sh",
        files={"ci/run.sh": "export SUITE=gpu\npytest tests\n"},
        truth=R,
        exact=True,
    ),
    "launch-usr-bin-env-bash": Case(
        script="/usr/bin/env bash ci/run.sh", files={"ci/run.sh": "export SUITE=gpu\npytest tests\n"}, truth=R, exact=True
    ),
    "launch-python-c-subprocess": Case(
        script='SUITE=gpu python3 -c \'import subprocess, sys; subprocess.run([sys.executable, "-m", "pytest", "tests"])\'',
        truth=R,
        named="python -c",
        bash=False,
    ),
    "launch-script-pops-the-variable": Case(
        script="SUITE=gpu python3 ci/run.py",
        files={
            "ci/run.py": "import os\n\nimport pytest\n\nos.environ.pop('SUITE', None)\nraise SystemExit(pytest.main(['tests']))\n"
        },
        truth=S,
        named="os.environ.pop",
        bash=False,
    ),
    "launch-uv-run-env-file": Case(
        script="uv run --env-file ci/suite.env pytest tests",
        files={"ci/suite.env": "SUITE=gpu\n"},
        truth=R,
        named="--env-file",
        bash=False,
    ),
    "launch-python-S-m-glued": Case(script="SUITE=gpu python3 -Smpytest tests", truth=R, exact=True, bash=False),
    "launch-from-pytest-import-main-as": Case(
        script="SUITE=gpu python3 -c 'from pytest import main as m; m([\"tests\"])'", truth=R, exact=True, bash=False
    ),
    "launch-main-under-an-argv-condition-not-given": Case(
        script="SUITE=gpu python3 ci/run.py",
        files={"ci/run.py": "import sys\n\nimport pytest\n\nif '--go' in sys.argv:\n    pytest.main(['tests'])\n"},
        truth=N,
        exact=True,
        bash=False,
    ),
    "launch-exec-of-pytest-code": Case(
        script="SUITE=gpu python3 ci/run.py",
        files={"ci/run.py": "exec('import pytest; pytest.main([\"tests\"])')\n"},
        truth=R,
        named="starts pytest itself",
        bash=False,
    ),
    # --- containers -----------------------------------------------------------------------------------------
    "container-exec-e-name-replaces-the-run-value": Case(
        script="docker run -d --name box -e SUITE=gpu -v $PWD:$PWD -w $PWD python:3.11 sleep infinity\n"
        "docker exec -e SUITE box pytest tests",
        truth=S,  # the runner has no SUITE: `-e SUITE` takes it out of the container's environment
        named="SUITE",
        bash=False,
    ),
    "container-interactive-bash-reads-bashrc": Case(
        script="docker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img bash -ic 'pytest tests'",
        files={"Dockerfile": "FROM python:3.11\nRUN echo 'export SUITE=gpu' >> /root/.bashrc\n"},
        truth=R,
        named="bashrc",
        bash=False,
    ),
    "container-login-bash-reads-profile": Case(
        script="docker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img /bin/bash -l -c 'pytest tests'",
        files={"Dockerfile": "FROM python:3.11\nRUN echo 'export SUITE=gpu' > /etc/profile.d/suite.sh\n"},
        truth=R,
        named="login shell",
        bash=False,
    ),
    "container-arg-unset-in-env": Case(
        script="docker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img pytest tests",
        files={"Dockerfile": "FROM python:3.11\nARG S\nENV SUITE=${S}\n"},
        truth=S,
        bash=False,
    ),
    "container-library-prefixed-official-image": Case(
        script="docker run -v $PWD:$PWD -w $PWD docker.io/library/python:3.11 pytest tests", truth=S, bash=False
    ),
    "container-registry-base": Case(
        script="docker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img pytest tests",
        files={"Dockerfile": "FROM localhost:5000/python:3.11\n"},
        truth=S,
        named="localhost:5000",
        bash=False,
    ),
    "container-base-built-by-the-job": Case(
        script="docker build -t base -f base.Dockerfile .\ndocker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img pytest tests",
        files={"Dockerfile": "FROM base\n", "base.Dockerfile": "FROM python:3.11\nENV SUITE=gpu\n"},
        truth=R,
        bash=False,
    ),
    "container-later-run-e-in-the-same-step": Case(
        script="docker run -d --name box -v $PWD:$PWD -w $PWD python:3.11 sleep infinity\ndocker exec box pytest tests\n"
        "docker rm -f box\ndocker run -d --name box -e SUITE=gpu -v $PWD:$PWD -w $PWD python:3.11 sleep infinity",
        truth=S,
        bash=False,
    ),
    "container-podman-exec-env-u": Case(
        script="podman run -d --name box -e SUITE=gpu -v $PWD:$PWD -w $PWD python:3.11 sleep infinity\n"
        "podman exec box env -u SUITE pytest tests",
        truth=S,
        bash=False,
    ),
    "container-unset-inside": Case(
        script="docker run -d --name box -e SUITE=gpu -v $PWD:$PWD -w $PWD python:3.11 sleep infinity\n"
        "docker exec box bash -c 'unset SUITE && pytest tests'",
        truth=S,
        bash=False,
    ),
    "container-compose-run": Case(
        script="docker compose run app pytest tests",
        files={"docker-compose.yml": "services:\n  app:\n    image: python:3.11\n    environment:\n      SUITE: gpu\n"},
        truth=R,
        named="compose",
        bash=False,
    ),
    "container-option-after-the-image": Case(
        script="docker run -v $PWD:$PWD -w $PWD python:3.11 -e SUITE=gpu pytest tests", truth=N, bash=False
    ),
    "container-bash-env-from-the-image": Case(
        script="docker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img bash -c 'pytest tests'",
        files={"Dockerfile": "FROM python:3.11\nENV BASH_ENV=/etc/suite.sh\nRUN echo 'export SUITE=gpu' > /etc/suite.sh\n"},
        truth=R,
        named="BASH_ENV",
        bash=False,
    ),
    # --- pytest itself ----------------------------------------------------------------------------------------
    "pytest-conftest-pops-the-variable": Case(
        script="SUITE=gpu pytest tests",
        files={"tests/conftest.py": "import os\n\nos.environ.pop('SUITE', None)\n"},
        truth=S,
        named="SUITE",
        bash=False,
    ),
    "pytest-root-conftest-overrides-the-job": Case(
        script="SUITE=gpu pytest tests", files={"conftest.py": "import os\n\nos.environ['SUITE'] = 'cpu'\n"}, truth=S, bash=False
    ),
    "pytest-missing-node-id-among-arguments": Case(
        script="SUITE=gpu pytest tests/test_a.py::test_gone tests/test_a.py::test_gpu", truth=N, exact=True, bash=False
    ),
    "pytest-twenty-bases-deep": Case(
        script="SUITE=cpu pytest tests",
        files={
            "tests/test_a.py": GUARDED
            + "\n\nclass Base:\n    @pytest.mark.skipif(os.environ.get('SUITE') != 'gpu', reason='x')\n    def test_k(self):\n"
            "        pass\n\n\n"
            + "".join(f"class B{i}({'Base' if i == 0 else f'B{i - 1}'}):\n    pass\n\n\n" for i in range(20))
            + "class TestLast(B19):\n    pass\n"
        },
        truth=S,
        exact=True,
        bash=False,
    ),
    "pytest-ini-addopts-deselects": Case(
        script="SUITE=gpu pytest tests", files={"pytest.ini": "[pytest]\naddopts = -k nothing\n"}, truth=N, exact=True, bash=False
    ),
    "pytest-addopts-from-the-environment": Case(script="SUITE=gpu PYTEST_ADDOPTS='-k nothing' pytest tests", truth=N, bash=False),
    "pytest-conftest-collect-ignore": Case(
        script="SUITE=gpu pytest tests",
        files={"tests/conftest.py": "collect_ignore = ['test_a.py']\n"},
        truth=N,
        exact=True,
        bash=False,
    ),
    # --- other CI services ------------------------------------------------------------------------------------
    "service-buildkite-pipeline-one-folder-down": Case(
        script="echo lint",
        files={".buildkite/pipelines/gpu.yml": "steps:\n  - command: pytest tests\n"},
        truth=R,
        named="Buildkite",
        bash=False,
    ),
    "service-jenkinsfile-in-a-folder": Case(
        script="echo lint", files={"ci/Jenkinsfile": "pipeline { agent any }\n"}, truth=R, named="Jenkins", bash=False
    ),
    "service-dot-appveyor": Case(
        script="echo lint", files={".appveyor.yml": "test_script:\n  - pytest tests\n"}, truth=R, named="AppVeyor", bash=False
    ),
    "service-blossom-in-a-make-recipe": Case(
        script="make ci", files=_mk("ci:\n\tblossom-ci\n"), truth=R, named="Blossom", bash=False
    ),
    # --- bounds ---------------------------------------------------------------------------------------------
    "bound-shell-value-doubling": Case(
        script="A=xx\n" + "A=$A$A\n" * 60 + "SUITE=gpu pytest tests",
        truth=R,
        exact=True,
        bash=False,  # bash: 2**61 bytes
    ),
    "bound-dockerfile-env-doubling": Case(
        script="docker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img pytest tests",
        files={"Dockerfile": "FROM python:3.11\nENV A=xx\n" + "ENV A=${A}${A}\n" * 60 + "ENV SUITE=gpu\n"},
        truth=R,
        exact=True,
        bash=False,
    ),
    "bound-function-fan-out": Case(
        script="".join(f"f{i}() {{ f{i + 1}; f{i + 1}; }}\n" for i in range(24)) + "f24() { :; }\nf0\nSUITE=gpu pytest tests",
        truth=R,
        bash=False,  # bash makes 2**25 calls
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_certain_wrong_verdict(tmp_path: Path, name: str) -> None:
    case = CASES[name]
    root = checkout(tmp_path, {".github/workflows/ci.yml": workflow(case.script), **case.files})
    if case.bash:
        assert truth_by_bash(root, case.script) is case.truth, "the case's truth is not what bash and make do"
    run = audit(name, root)
    said = verdict(run)
    allowed = {case.truth} if case.exact else {case.truth, U}
    assert said in allowed, (said, run.reasons())
    if said is U and case.named:
        assert case.named in run.reasons(), run.reasons()


def test_the_round_covers_every_class() -> None:
    prefixes = {name.split("-", 1)[0] for name in [*CASES, *OTHER]}
    assert prefixes >= {"make", "shell", "launch", "container", "pytest", "service", "bound", "expression", "output"}
    assert len(CASES) + len(OTHER) >= 40


# --- cases that are not one script --------------------------------------------------------------------------


def _expression_inputs_case(tmp_path: Path) -> None:
    called = (
        "on:\n  workflow_call:\n    inputs:\n      suite:\n        type: string\n        default: cpu\njobs:\n  j:\n"
        "    runs-on: ubuntu-latest\n    steps:\n      - run: SUITE=${{ inputs.SUITE }} pytest tests\n"
    )
    caller = "on: push\njobs:\n  c:\n    uses: ./.github/workflows/reuse.yml\n    with:\n      SUITE: gpu\n"
    root = checkout(tmp_path, {".github/workflows/reuse.yml": called, ".github/workflows/ci.yml": caller})
    assert verdict(audit("expression-inputs-case", root)) is R


def _expression_matrix_case(tmp_path: Path) -> None:
    text = (
        "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n        Suite: [gpu]\n"
        "    steps:\n      - run: SUITE=${{ matrix.suite }} pytest tests\n"
    )
    assert verdict(audit("expression-matrix-case", checkout(tmp_path, {".github/workflows/ci.yml": text}))) is R


def _expression_env_is_case_sensitive(tmp_path: Path) -> None:
    text = (
        "on: push\nenv:\n  suite: gpu\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: SUITE=${{ env.SUITE }} pytest tests\n"
    )
    assert verdict(audit("expression-env-case", checkout(tmp_path, {".github/workflows/ci.yml": text}))) is S


def _github_shell_python_step(tmp_path: Path) -> None:
    step = "      - shell: python\n        run: |\n          import os, pytest\n          os.environ['SUITE'] = 'gpu'\n"
    step += "          pytest.main(['tests'])\n"
    result = audit("expression-shell-python-step", checkout(tmp_path, {".github/workflows/ci.yml": WORKFLOW.format(steps=step)}))
    assert verdict(result) is U and "shell: python" in result.reasons()  # it was unscheduled: the step was read as bash


def _github_job_container_image_not_read(tmp_path: Path) -> None:
    text = "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    container:\n      image: localhost:5000/ci\n"
    text += "    steps:\n      - run: pytest tests\n"
    result = audit("expression-job-container-image", checkout(tmp_path, {".github/workflows/ci.yml": text}))
    assert verdict(result) is U and "localhost:5000/ci" in result.reasons()  # it was a certain skip


def _github_job_container_env(tmp_path: Path) -> None:
    text = "on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    container:\n      image: python:3.11\n"
    text += "      env:\n        SUITE: gpu\n    steps:\n      - run: pytest tests\n"
    assert verdict(audit("expression-job-container-env", checkout(tmp_path, {".github/workflows/ci.yml": text}))) is R


def _action(steps: str) -> str:
    return "runs:\n  using: composite\n  steps:\n" + steps


def _bound_mutually_recursive_actions(tmp_path: Path) -> None:
    uses = "    - uses: ./.github/actions/{}\n"
    run = "    - shell: bash\n      run: SUITE=gpu pytest tests\n"
    files = {
        ".github/actions/a/action.yml": _action(uses.format("b") * 2 + run),
        ".github/actions/b/action.yml": _action(uses.format("a") * 2 + run),
        ".github/workflows/ci.yml": WORKFLOW.format(steps="      - uses: ./.github/actions/a\n"),
    }
    result = audit("bound-mutually-recursive-actions", checkout(tmp_path, files))
    assert verdict(result) in (R, U) and "uses itself" in result.reasons()


def _bound_action_steps_of_lists(tmp_path: Path) -> None:
    files = {
        ".github/actions/a/action.yml": _action("    - [1, 2]\n    - run: 5\n      shell: 7\n"),
        ".github/workflows/ci.yml": WORKFLOW.format(steps="      - uses: ./.github/actions/a\n"),
    }
    result = audit("bound-action-steps-of-lists", checkout(tmp_path, files))
    assert verdict(result) is U and "must be a list of steps" in result.reasons()


def _bound_yaml_aliases(tmp_path: Path) -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    root = checkout(tmp_path, {".github/workflows/ci.yml": laughs + workflow("SUITE=gpu pytest tests")})
    run = specmatrix("bound-yaml-aliases", "pytest-audit", root, cwd=root.parent)
    assert run.code == 2 and "aliases" in run.err


def _bound_nul_in_a_makefile(tmp_path: Path) -> None:
    root = checkout(tmp_path, {".github/workflows/ci.yml": workflow("make t"), "Makefile": "t:\n\tSUITE=gpu py\x00test tests\n"})
    assert verdict(audit("bound-nul-in-a-makefile", root)) in (N, U)  # make reads no such program: nothing runs


def _outside_links(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "run.sh").write_text(f"# {SECRET}\nSUITE=gpu pytest tests\n", encoding="utf-8")
    (folder / "part.mk").write_text(f"# {SECRET}\nt:\n\tSUITE=gpu pytest tests\n", encoding="utf-8")
    (folder / "Dockerfile").write_text(f"FROM python:3.11\nENV SUITE={SECRET}\n", encoding="utf-8")
    return folder


def _containment_followed_files_linked_outside(tmp_path: Path) -> None:
    folder = _outside_links(tmp_path)
    script = "bash ci/run.sh\nmake t\ndocker build -t img .\ndocker run -v $PWD:$PWD -w $PWD img pytest tests"
    root = checkout(tmp_path, {".github/workflows/ci.yml": workflow(script), "Makefile": "include part.mk\n"})
    (root / "ci").mkdir()
    os.symlink(folder / "run.sh", root / "ci" / "run.sh")
    os.symlink(folder / "part.mk", root / "part.mk")
    os.symlink(folder / "Dockerfile", root / "Dockerfile")
    result = audit("containment-followed-files-linked-outside", root)
    assert verdict(result) in (R, U)  # in CI the links run the test with SUITE=gpu; here what they hold is never read


def _output_onto_every_kind_of_file_read(tmp_path: Path) -> None:
    files = {
        ".github/workflows/ci.yml": workflow(
            "make t\nbash ci/run.sh\ndocker build -f ci/Dockerfile -t img .\ndocker run -v $PWD:$PWD -w $PWD img pytest tests"
        ),
        "Makefile": "include sub.mk\nt:\n\tpytest tests\n",
        "sub.mk": "Z = 1\n",
        "ci/run.sh": "source ci/env.sh\npytest tests\n",
        "ci/env.sh": "export A=1\n",
        "ci/Dockerfile": "FROM python:3.11\n",
        "tests/conftest.py": "X = 1\n",
        "pytest.ini": "[pytest]\n",
    }
    root = checkout(tmp_path, files)
    for target in ("sub.mk", "ci/env.sh", "ci/Dockerfile", "tests/conftest.py", "pytest.ini", "tests/test_a.py"):
        before = (root / target).read_bytes()
        for option in ("--output", "--summary", "--write-baseline"):
            run = specmatrix("output-onto-a-file-read", "pytest-audit", root, option, root / target, cwd=root.parent)
            assert run.code == 2 and run.err.count("specmatrix: error:") == 1, run.err
            assert (root / target).read_bytes() == before


_FORGED = re.compile(r"^\s*::", re.M)


def _every_format(case: str, root: Path) -> None:
    for fmt in ("text", "github", "md", "junit", "json", "sarif"):
        run = specmatrix(case, "pytest-audit", root, "--format", fmt, cwd=root.parent)
        lines = run.out.splitlines()
        if fmt == "github":
            assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines if line.strip()), run.out
        else:
            assert not _FORGED.findall(run.out), (fmt, run.out)


def _output_newline_in_a_followed_script_name(tmp_path: Path) -> None:
    text = 'on: push\njobs:\n  j:\n    runs-on: ubuntu-latest\n    steps:\n      - run: bash "ci/x\\n::error::forged.sh"\n'
    _every_format("output-newline-in-a-script-name", checkout(tmp_path, {".github/workflows/ci.yml": text}))


def _output_newline_in_a_job_id(tmp_path: Path) -> None:
    text = 'on: push\njobs:\n  "j\\n::error::forged":\n    runs-on: ubuntu-latest\n    steps:\n      - run: bash ci/gone.sh\n'
    _every_format("output-newline-in-a-job-id", checkout(tmp_path, {".github/workflows/ci.yml": text}))


def _output_newline_in_a_workflow_and_folder_name(tmp_path: Path) -> None:
    root = checkout(tmp_path, {"tests/d\n::error::x/test_b.py": GUARDED})
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / ".github" / "workflows" / "a\n::error::forged.yml").write_text(workflow("pytest tests"), encoding="utf-8")
    _every_format("output-newline-in-names", root)


def _output_runners_through_a_parent_folder(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text(f'[runner.a]\ngpus = 1\ncapability = [10, 0]\nlabels = ["{SECRET}"]\n', encoding="utf-8")
    root = checkout(tmp_path, {"pyproject.toml": '[tool.specmatrix]\nrunners = "sub/../../x.toml"\n'})
    run = specmatrix("output-runners-through-a-parent-folder", "runners", cwd=root)
    assert run.code == 2 and "outside the project" in run.err


OTHER: dict[str, Callable[[Path], None]] = {
    "expression-inputs-case": _expression_inputs_case,
    "expression-matrix-case": _expression_matrix_case,
    "expression-env-is-case-sensitive": _expression_env_is_case_sensitive,
    "expression-shell-python-step": _github_shell_python_step,
    "expression-job-container-image-not-read": _github_job_container_image_not_read,
    "expression-job-container-env": _github_job_container_env,
    "bound-mutually-recursive-actions": _bound_mutually_recursive_actions,
    "bound-action-steps-of-lists": _bound_action_steps_of_lists,
    "bound-yaml-aliases": _bound_yaml_aliases,
    "bound-nul-in-a-makefile": _bound_nul_in_a_makefile,
    "containment-followed-files-linked-outside": _containment_followed_files_linked_outside,
    "output-onto-every-kind-of-file-read": _output_onto_every_kind_of_file_read,
    "output-newline-in-a-followed-script-name": _output_newline_in_a_followed_script_name,
    "output-newline-in-a-job-id": _output_newline_in_a_job_id,
    "output-newline-in-a-workflow-and-folder-name": _output_newline_in_a_workflow_and_folder_name,
    "output-runners-through-a-parent-folder": _output_runners_through_a_parent_folder,
}


@pytest.mark.parametrize("name", sorted(OTHER))
def test_no_wrong_verdict_overwrite_or_forged_line(tmp_path: Path, name: str) -> None:
    OTHER[name](tmp_path)
