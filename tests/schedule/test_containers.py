"""What a job's `docker build` / `docker run` steps give the container its tests run in (`docker exec`, `docker run`,
`podman`, `docker compose`), read in order, and what is named unread instead of guessed."""

from __future__ import annotations

import json

import pytest

from matrix.schedule.containers.calls import ContainerCall, container_call, marker
from matrix.schedule.containers.docker import DockerStep, container_of, dockerfile_env, read_job
from matrix.schedule.containers.dockerfile import official, stage_env
from matrix.schedule.shell.commands import CONTAINER, commands, unwrap
from matrix.schedule.shell.words import is_run_time

STAGES = """\
# syntax=docker/dockerfile:1
FROM python:3.12-slim AS deps
ENV PIP_NO_CACHE_DIR=1 \\
    # a comment inside the continued line
    TOOL_HOME="/opt/tool dir"
FROM deps AS runtime
ENV LEGACY_STYLE value with spaces
FROM runtime AS extra
ENV ONLY_EXTRA=1
FROM runtime
RUN true
"""


@pytest.mark.parametrize(
    ("target", "env", "base"),
    [
        (None, {"PIP_NO_CACHE_DIR": "1", "TOOL_HOME": "/opt/tool dir", "LEGACY_STYLE": "value with spaces"}, "python:3.12-slim"),
        (
            "extra",
            {"PIP_NO_CACHE_DIR": "1", "TOOL_HOME": "/opt/tool dir", "LEGACY_STYLE": "value with spaces", "ONLY_EXTRA": "1"},
            "python:3.12-slim",
        ),
        ("deps", {"PIP_NO_CACHE_DIR": "1", "TOOL_HOME": "/opt/tool dir"}, "python:3.12-slim"),
        ("missing", {}, None),
    ],
)
def test_the_env_of_a_stage_is_inherited_through_from_stage(target, env, base):
    assert dockerfile_env(STAGES, target) == (env, base)


def test_docker_exec_hands_its_container_and_options_on():
    env: list[tuple[str, str]] = []
    words, folder = unwrap(["docker", "exec", "-w", "/w", "-e", "A=1", "--env-file", "x.env", "c9", "python3", "t.py"], env)
    assert (words, folder) == (["python3", "t.py"], "/w")
    expected = ContainerCall(
        kind="exec", name="c9", env=(("A", "1"),), unread=("`docker exec --env-file x.env` is read at run time",)
    )
    assert env == [(CONTAINER, marker(expected))]


def _exec_marker(*words: str) -> str:
    env: list[tuple[str, str]] = []
    unwrap(["docker", "exec", *words], env)
    return env[0][1]


def test_the_container_env_is_image_then_run_then_exec():
    steps = [
        ("docker build -t img:1 --target runtime -f ci/app.Dockerfile .", "."),
        ("docker run -d --rm -e B=run -e C=run --name c9 img:1 sleep infinity", "."),
    ]
    files = {"ci/app.Dockerfile": "FROM debian:12 AS runtime\nENV A=image B=image C=image\n"}
    got, container = container_of(_exec_marker("-e", "C=exec", "c9", "true"), read_job(steps), files.get)
    assert dict(got) == {"A": "image", "B": "run", "C": "exec"}
    assert (container.name, container.unread) == ("c9", "")
    assert "debian:12" in container.notes[0]


@pytest.mark.parametrize(
    ("steps", "files", "unread"),
    [
        ([("docker run -d --name c9 img:1", ".")], {}, "the image img:1 is not built by the job"),
        (
            [("docker build -t img:1 .", "."), ("docker run -d --name c9 img:1", ".")],
            {},
            "Dockerfile Dockerfile of the image img:1 is not read",
        ),
        ([], {}, "no step of the job before it starts the container c9"),
        (
            [("docker build -t img:1 .", "."), ("docker run --cpus 2 --name c9 img:1", ".")],
            {"Dockerfile": "FROM acme/base\n"},
            "acme/base",
        ),
    ],
)
def test_what_cannot_be_read_is_named(steps, files, unread):
    _, container = container_of(_exec_marker("c9", "true"), read_job(steps), files.get)
    assert unread in container.unread


# --- Dockerfile ARG and ENV replacement (Dockerfile reference, "Environment replacement", ARG "Scope") ----------


@pytest.mark.parametrize(
    ("dockerfile", "build_args", "expected"),
    [
        ("FROM debian:12\nARG LEVEL\nENV LEVEL_SEEN=${LEVEL}\n", {}, ""),  # declared, never given: empty
        ("FROM debian:12\nARG LEVEL=low\nENV LEVEL_SEEN=${LEVEL}\n", {}, "low"),
        ("FROM debian:12\nARG LEVEL=low\nENV LEVEL_SEEN=${LEVEL}\n", {"LEVEL": "high"}, "high"),
        ("FROM debian:12\nARG LEVEL=low\nENV LEVEL_SEEN=${LEVEL}\n", {"LEVEL": None}, None),  # from the runner
        ("ARG LEVEL=top\nFROM debian:12\nENV LEVEL_SEEN=${LEVEL}\n", {}, None),  # not declared again: the base's own
        ("ARG LEVEL=top\nFROM debian:12\nARG LEVEL\nENV LEVEL_SEEN=${LEVEL}\n", {}, "top"),
        ("FROM debian:12\nENV LEVEL_SEEN=${NOWHERE:-fallback}\n", {}, None),  # the base image's own: not known
        ("FROM scratch\nENV LEVEL_SEEN=${NOWHERE:-fallback}\n", {}, "fallback"),
        ("FROM debian:12\nENV LEVEL_SEEN=/opt/bin:$PATH\n", {}, None),
        ("FROM debian:12\nENV A=1\nENV LEVEL_SEEN=${A:+set} \n", {}, "set"),
        ("FROM debian:12\nARG TARGETARCH\nENV LEVEL_SEEN=$TARGETARCH\n", {}, None),  # BuildKit sets it
        ("FROM debian:12\nENV LEVEL_SEEN='${LEVEL}'\n", {}, "${LEVEL}"),  # single quotes: no replacement
        ("FROM debian:12\nENV LEVEL_SEEN=\\$LEVEL\n", {}, "$LEVEL"),
        ("FROM debian:12\nENV LEVEL_SEEN=${LEVEL/a/b}\n", {}, None),  # another replacement form
    ],
)
def test_env_reads_args_as_buildkit_does(dockerfile, build_args, expected):
    env = stage_env(dockerfile, None, build_args).env
    if expected is None:
        assert is_run_time(env["LEVEL_SEEN"])
    else:
        assert env["LEVEL_SEEN"] == expected


def test_one_env_instruction_replaces_from_the_state_before_it():
    assert dict(stage_env("FROM debian:12\nENV A=1\nENV A=2 B=$A\n").env) == {"A": "2", "B": "1"}


def test_a_build_arg_of_the_job_reaches_the_image_env():
    steps = [
        ("docker build --build-arg LEVEL=high --build-arg FROM_RUNNER -t img .", "."),
        ("docker run -d --name c9 img sleep infinity", "."),
    ]
    files = {"Dockerfile": "FROM debian:12\nARG LEVEL=low\nARG FROM_RUNNER=x\nENV LEVEL_SEEN=$LEVEL RUNNER_SEEN=$FROM_RUNNER\n"}
    got, _ = container_of(_exec_marker("c9", "true"), read_job(steps), files.get)
    assert dict(got)["LEVEL_SEEN"] == "high" and is_run_time(dict(got)["RUNNER_SEEN"])


# --- base images --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "is_official"),
    [
        ("ubuntu:24.04", True),
        ("library/python:3.12", True),
        ("debian@sha256:0123", True),
        ("localhost:5000/ubuntu", False),
        ("localhost:5000/ubuntu:24.04", False),
        ("registry.example.com/python:3.12", False),
        ("acme/base", False),
        ("mybase", False),  # not a Docker Official Image this reader knows
        ("${BASE}", False),
    ],
)
def test_only_a_docker_official_image_counts_as_one(image, is_official):
    assert official(image) is is_official


def test_an_image_the_job_builds_is_no_official_image_and_its_own_env_is_read():
    steps = [
        ("docker build -t ubuntu -f base.Dockerfile .", "."),
        ("docker build -t app -f app.Dockerfile .", "."),
        ("docker run -d --name c9 app sleep infinity", "."),
    ]
    files = {"base.Dockerfile": "FROM acme/cuda\nENV FROM_BASE=1\n", "app.Dockerfile": "FROM ubuntu\nENV FROM_APP=1\n"}
    got, container = container_of(_exec_marker("c9", "true"), read_job(steps), files.get)
    assert dict(got) == {"FROM_BASE": "1", "FROM_APP": "1"}
    assert "acme/cuda" in container.unread and not container.notes


# --- order, conditions and values the runner gives ---------------------------------------------------------


def test_a_container_started_later_in_the_same_step_is_not_the_one_an_earlier_exec_reaches():
    script = "docker exec c9 pytest tests\ndocker run -d -e LATE=1 --name c9 img sleep infinity\n"
    (command,) = [c for c in commands(script, ".", None) if c.words[:1] == ("pytest",)]
    job = read_job([DockerStep(script=script)], until=lambda c: c.words == command.words)
    _, container = container_of(_exec_marker("c9", "pytest", "tests"), job, {}.get)
    assert "no step of the job before it starts the container c9" in container.unread


def test_a_container_started_on_a_branch_known_only_at_run_time_is_unread():
    script = 'if [ "$GPU" = 1 ]; then docker run -d -e MODE=gpu --name c9 img sleep 1; fi\n'
    _, container = container_of(_exec_marker("c9", "true"), read_job([DockerStep(script=script)]), {}.get)
    assert "started only under a condition" in container.unread


def test_a_value_the_runner_gives_is_run_time_not_the_literal_text():
    env: list[tuple[str, str]] = []
    unwrap(["docker", "run", "-e", "X=$X", "-e", "Y=1", "img", "pytest"], env)
    call = json.loads(env[0][1])
    assert call["env"][1] == ["Y", "1"] and is_run_time(call["env"][0][1])


# --- container commands read (or named) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "inner", "kind", "folder"),
    [
        (["docker", "run", "--rm", "-v", "$PWD:/w", "-w", "/w/tests", "img", "pytest", "a"], ["pytest", "a"], "run", "tests"),
        (["docker", "container", "run", "img", "pytest"], ["pytest"], "run", "$(the image's WORKDIR)"),
        (["podman", "run", "-it", "img", "pytest"], ["pytest"], "run", "$(the image's WORKDIR)"),
        (["docker", "container", "exec", "box", "pytest"], ["pytest"], "exec", None),
        (["podman", "exec", "-w", "/x", "box", "pytest"], ["pytest"], "exec", "/x"),
        (["docker", "compose", "-f", "ci.yml", "run", "--rm", "unit", "pytest", "t"], ["pytest", "t"], "compose", None),
        (["docker-compose", "exec", "-T", "unit", "pytest"], ["pytest"], "compose", None),
    ],
)
def test_container_commands_run_the_words_after_them(words, inner, kind, folder):
    found = container_call(words)
    assert found is not None
    got_inner, got_folder, call = found
    assert got_inner == inner and call.kind == kind
    if kind == "compose":
        assert "compose file is not read" in call.unread[0]
    else:
        assert got_folder == folder


def test_docker_build_and_ps_are_no_container_commands():
    assert container_call(["docker", "build", "-t", "x", "."]) is None
    assert container_call(["docker", "ps"]) is None
