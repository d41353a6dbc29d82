"""What a job's `docker build` / `docker run` steps give the container its tests run in (`docker exec`)."""

from __future__ import annotations

import pytest

from matrix.schedule.containers.docker import container_of, dockerfile_env, read_job
from matrix.schedule.shell.commands import CONTAINER, unwrap

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
    assert env == [(CONTAINER, '["c9", [["A", "1"]], "`docker exec --env-file x.env` is read at run time"]')]


def test_the_container_env_is_image_then_run_then_exec():
    steps = [
        ("docker build -t img:1 --target runtime -f ci/app.Dockerfile .", "."),
        ("docker run -d --rm -e B=run -e C=run --name c9 img:1 sleep infinity", "."),
    ]
    files = {"ci/app.Dockerfile": "FROM debian:12 AS runtime\nENV A=image B=image C=image\n"}
    env: list[tuple[str, str]] = []
    unwrap(["docker", "exec", "-e", "C=exec", "c9", "true"], env)
    got, container = container_of(env[0][1], read_job(steps), files.get)
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
        ([], {}, "no step of the job starts the container c9"),
        (
            [("docker build -t img:1 .", "."), ("docker run --cpus 2 --name c9 img:1", ".")],
            {"Dockerfile": "FROM acme/base\n"},
            "acme/base",
        ),
    ],
)
def test_what_cannot_be_read_is_named(steps, files, unread):
    env: list[tuple[str, str]] = []
    unwrap(["docker", "exec", "c9", "true"], env)
    _, container = container_of(env[0][1], read_job(steps), files.get)
    assert unread in container.unread
