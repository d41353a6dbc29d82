"""A test's only check gated on the CI environment, judged with the environment the job really gives the tests:
the container's when the job runs them through `docker exec`, never the runner profile's."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.guards.model import GuardFindingKind
from matrix.registered_suite import audit_tree
from matrix.schedule.load import load_schedule

K = GuardFindingKind
RUNNERS = load_runners()

# A CPU test whose one check runs only when CI says so (the shape of a score threshold kept off laptops).
GATED_TEST = """\
import unittest

from sglang.test.ci.ci_register import register_cpu_ci
from sglang.test.test_utils import is_in_ci
from harness import start_engine, score_of

register_cpu_ci(est_time=30, suite="stage-x-cpu")


class TestEngineScore(unittest.TestCase):
    def test_score_is_high(self):
        engine = start_engine("tiny")
        try:
            value = score_of(engine)
            if is_in_ci():
                self.assertGreater(value, 0.5)
        finally:
            engine.close()

    def test_checked_everywhere(self):
        value = score_of(None)
        if is_in_ci():
            self.assertGreater(value, 0.5)
        self.assertGreaterEqual(value, 0)


if __name__ == "__main__":
    unittest.main()
"""

BOX_STEPS = """\
      - name: image
        run: docker build --no-cache -t engine-img -f docker/engine.Dockerfile .
      - name: start
        run: |
          docker run -dt --ipc=host -v ${{{{ github.workspace }}}}:/ws {run_options} --name box-${{{{ matrix.host }}}} engine-img
      - name: tests
        run: |
          docker exec -w /ws {exec_options} box-${{{{ matrix.host }}}} bash -c "source /venv/bin/activate && cd test && python3 run_suite.py --hw cpu --suite stage-x-cpu"
"""


def write_repo(
    root: Path,
    *,
    steps: str | None = None,
    run_options: str = "-e TOKEN=abc",
    exec_options: str = "",
    dockerfile: str = "FROM debian:12\nENV ENGINE_HOME=/opt/engine \\\n    OMP_NUM_THREADS=4\nRUN true\n",
    job_env: str = "",
) -> Path:
    (root / ".github" / "workflows").mkdir(parents=True)
    body = steps if steps is not None else BOX_STEPS.format(run_options=run_options, exec_options=exec_options)
    (root / ".github" / "workflows" / "cpu.yml").write_text(
        "on: pull_request\njobs:\n  engine-cpu:\n    runs-on: ubuntu-24.04\n"
        + job_env
        + "    strategy:\n      matrix:\n        host: [amx]\n    steps:\n"
        + body,
        encoding="utf-8",
    )
    (root / "docker").mkdir()
    (root / "docker" / "engine.Dockerfile").write_text(dockerfile, encoding="utf-8")
    (root / "test" / "cpu").mkdir(parents=True)
    (root / "test" / "cpu" / "test_engine_score.py").write_text(GATED_TEST, encoding="utf-8")
    return root


def findings(root: Path):
    report = audit_tree(root / "test", RUNNERS, schedule=load_schedule(root, RUNNERS))
    return [f for f in report.findings if f.path.endswith("test_engine_score.py")]


def test_container_without_the_variable_is_a_silent_pass_naming_it_and_the_job(tmp_path):
    found = findings(write_repo(tmp_path))
    passes = [f for f in found if f.kind == K.SILENT_PASS]
    assert [f.scope for f in passes] == ["cpu/test_engine_score.py::TestEngineScore::test_score_is_high"]
    (only,) = passes
    assert only.line == 15  # the `if is_in_ci():` line
    assert only.runners == ("cpu",)
    assert "SGLANG_IS_IN_CI" in only.message
    assert "job engine-cpu" in only.message and "box-amx" in only.message
    assert "debian:12" not in only.message or "Official" in only.message


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"exec_options": "-e SGLANG_IS_IN_CI=true"}, "docker exec -e"),
        ({"run_options": "-e SGLANG_IS_IN_CI=1"}, "docker run -e"),
        ({"dockerfile": "FROM debian:12\nENV SGLANG_IS_IN_CI=true\n"}, "the image's ENV"),
        ({"dockerfile": "FROM debian:12 AS base\nENV SGLANG_IS_IN_CI true\nFROM base\nRUN true\n"}, "an inherited stage"),
    ],
)
def test_container_given_the_variable_checks(tmp_path, change, why):
    assert not [f for f in findings(write_repo(tmp_path, **change)) if f.kind == K.SILENT_PASS], why


@pytest.mark.parametrize(
    ("change", "unread"),
    [
        ({"run_options": "--env-file ci.env"}, "--env-file ci.env"),
        ({"exec_options": "-e SGLANG_IS_IN_CI"}, "passes the runner's SGLANG_IS_IN_CI"),
        ({"dockerfile": "FROM ghcr.io/acme/engine-base:2\nRUN true\n"}, "ghcr.io/acme/engine-base:2"),
        ({"run_options": "--made-up-flag"}, "--made-up-flag"),
    ],
)
def test_a_container_environment_that_cannot_be_read_is_undetermined(tmp_path, change, unread):
    found = findings(write_repo(tmp_path, **change))
    assert not [f for f in found if f.kind == K.SILENT_PASS]
    (maybe,) = [f for f in found if f.kind == K.UNDETERMINED and f.scope.endswith("test_score_is_high")]
    assert unread in maybe.message


def test_an_image_the_job_does_not_build_is_undetermined(tmp_path):
    steps = BOX_STEPS.format(run_options="", exec_options="").replace(" engine-img\n", " registry.example/engine:nightly\n")
    found = findings(write_repo(tmp_path, steps=steps))
    (maybe,) = [f for f in found if f.kind == K.UNDETERMINED and f.scope.endswith("test_score_is_high")]
    assert "registry.example/engine:nightly is not built by the job" in maybe.message


def test_on_the_runner_itself_the_job_env_decides(tmp_path):
    direct = "      - run: cd test && python3 run_suite.py --hw cpu --suite stage-x-cpu\n"
    assert [
        f.kind for f in findings(write_repo(tmp_path / "a", steps=direct, job_env="    env:\n      SGLANG_IS_IN_CI: '0'\n"))
    ] == [K.SILENT_PASS]
    # Not set by the job: the runner profile's in_ci (true for the CPU profile) decides, as before.
    assert not [f for f in findings(write_repo(tmp_path / "b", steps=direct)) if f.kind == K.SILENT_PASS]


@pytest.mark.parametrize(
    ("body", "gated"),
    [
        ("    if os.environ.get('CI'):\n        assert x\n", True),
        ("    if is_in_ci():\n        assert x\n    else:\n        pass\n", True),
        ("    if is_in_ci():\n        assert x\n    assert y\n", False),  # checked everywhere
        ("    self_check(x)\n    if is_in_ci():\n        assert x\n", False),  # a helper named like a check
        ("    local_helper()\n    if is_in_ci():\n        assert x\n", False),  # a function of the file may check
        ("    if x > 1:\n        assert x\n", False),  # not a CI condition
        ("    x = 1\n", False),  # no check at all
    ],
)
def test_which_tests_check_only_in_ci(body, gated):
    from matrix.guards.finder import analyse_source
    from matrix.registered_suite.gated import gated_guards

    text = f"import os\nfrom u import is_in_ci\n\n\ndef local_helper():\n    pass\n\n\ndef test_one(x=0, y=0):\n{body}"
    assert bool(gated_guards(analyse_source("test_g.py", text), text)) is gated
