"""The part of docker, podman, docker compose and Dockerfiles the container reader models, declared in one place;
pure data.

Commands (`COMMANDS`): what each container command gives the command it runs. Options (`RUN_VALUED`, `RUN_FLAGS`,
`EXEC_VALUED`, `COMPOSE_*`, `BUILD_VALUED`): an option outside these tables makes the rest of the command line
unread (whether it takes a value is not known), with the option named. Dockerfile instructions (`INSTRUCTIONS`):
what each does to the environment a container of the image starts with; an instruction outside the table that
may change it makes the image's environment unread. Base images (`OFFICIAL_IMAGES`): a
Docker Official Image is assumed to set no variable of the project; any other base, a registry (`host:port/...`),
an image the job builds itself, or a name with a variable in it is not read. Sources: docker CLI reference
(https://docs.docker.com/reference/cli/docker/container/run/, .../exec/, .../compose/run/, .../compose/exec/,
.../buildx/build/, docker 27), Dockerfile reference (https://docs.docker.com/reference/dockerfile/: "Environment
replacement", ARG "Scope" and "Using ARG variables", ENV, FROM "Understand how ARG and FROM interact"), podman
run/exec (https://docs.podman.io/en/v5.2.0/markdown/podman-run.1.html: the docker options, same spellings), Docker
Official Images (https://github.com/docker-library/official-images, `library/` folder, 2026-07).
"""

from __future__ import annotations

from collections.abc import Mapping

# What a command run through each of these sees, as read.
COMMANDS: Mapping[str, str] = {
    "docker exec": "a container a step started with `docker run --name NAME`: the image's ENV, then `docker run -e`, "
    "then `docker exec -e`; `-w` its folder",
    "docker container exec": "as docker exec",
    "podman exec": "as docker exec",
    "podman container exec": "as docker exec",
    "docker run": "a new container of IMAGE running the words after it: the image's ENV, then `-e`; `-w` its folder, "
    "mapped to the checkout through a `-v` mount of it; without `-w`, a folder not known before the run",
    "docker container run": "as docker run",
    "podman run": "as docker run",
    "podman container run": "as docker run",
    "docker compose run": "a service of a compose file: the compose file is not read, so its environment is unread",
    "docker compose exec": "as docker compose run",
    "docker-compose run": "as docker compose run",
    "docker-compose exec": "as docker compose run",
    "podman compose run": "as docker compose run",
    "podman-compose run": "as docker compose run",
    "podman-compose exec": "as docker compose run",
    "docker build": "`-t TAG`, `-f FILE` (the checkout's Dockerfiles only), `--target STAGE`, `--build-arg NAME=V`",
    "docker buildx build": "as docker build",
    "podman build": "as docker build",
}

# `docker run` / `podman run` options that take the next word as their value.
RUN_VALUED = frozenset(
    [
        "-a",
        "--attach",
        "--add-host",
        "--annotation",
        "--blkio-weight",
        "--blkio-weight-device",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cgroupns",
        "--cidfile",
        "--cpu-period",
        "--cpu-quota",
        "--cpu-rt-period",
        "--cpu-rt-runtime",
        "-c",
        "--cpu-shares",
        "--cpus",
        "--cpuset-cpus",
        "--cpuset-mems",
        "--device",
        "--device-cgroup-rule",
        "--device-read-bps",
        "--device-read-iops",
        "--device-write-bps",
        "--device-write-iops",
        "--dns",
        "--dns-option",
        "--dns-search",
        "--domainname",
        "--entrypoint",
        "-e",
        "--env",
        "--env-file",
        "--expose",
        "--gpus",
        "--group-add",
        "--health-cmd",
        "--health-interval",
        "--health-retries",
        "--health-start-interval",
        "--health-start-period",
        "--health-timeout",
        "-h",
        "--hostname",
        "--ip",
        "--ip6",
        "--ipc",
        "--isolation",
        "--kernel-memory",
        "-l",
        "--label",
        "--label-file",
        "--link",
        "--link-local-ip",
        "--log-driver",
        "--log-opt",
        "--mac-address",
        "-m",
        "--memory",
        "--memory-reservation",
        "--memory-swap",
        "--memory-swappiness",
        "--mount",
        "--name",
        "--network",
        "--net",
        "--network-alias",
        "--oom-score-adj",
        "--pid",
        "--pids-limit",
        "--platform",
        "-p",
        "--publish",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--sysctl",
        "--tmpfs",
        "--ulimit",
        "-u",
        "--user",
        "--userns",
        "--uts",
        "-v",
        "--volume",
        "--volume-driver",
        "--volumes-from",
        "-w",
        "--workdir",
    ]
)
RUN_FLAGS = frozenset(
    [
        "-d",
        "--detach",
        "-i",
        "--interactive",
        "-t",
        "--tty",
        "--rm",
        "--privileged",
        "--init",
        "-P",
        "--publish-all",
        "--read-only",
        "--sig-proxy",
        "--no-healthcheck",
        "--oom-kill-disable",
        "-q",
        "--quiet",
        "--disable-content-trust",
        "--use-api-socket",
    ]
)
RUN_SHORT_FLAGS = frozenset("ditPq")  # single letters that combine (`-it`, `-dit`)

# `docker exec` options.
EXEC_VALUED = frozenset({"-e", "--env", "-w", "--workdir", "-u", "--user", "--env-file", "--detach-keys"})
EXEC_FLAGS = frozenset({"-d", "--detach", "-i", "--interactive", "-t", "--tty", "--privileged"})
EXEC_SHORT_FLAGS = frozenset("dit")

# `docker compose` options before the subcommand, and those of `run` / `exec`.
COMPOSE_GLOBAL_VALUED = frozenset(
    {
        "-f",
        "--file",
        "-p",
        "--project-name",
        "--profile",
        "--env-file",
        "--project-directory",
        "--ansi",
        "--progress",
        "--parallel",
    }
)
COMPOSE_VALUED = frozenset(
    {
        "-e",
        "--env",
        "-w",
        "--workdir",
        "-u",
        "--user",
        "--entrypoint",
        "--name",
        "-v",
        "--volume",
        "-p",
        "--publish",
        "-l",
        "--label",
        "--index",
        "--cap-add",
        "--cap-drop",
        "--pull",
    }
)
COMPOSE_FLAGS = frozenset(
    {
        "-d",
        "--detach",
        "--rm",
        "--no-deps",
        "--service-ports",
        "--use-aliases",
        "-T",
        "--no-TTY",
        "-i",
        "--interactive",
        "--build",
        "--remove-orphans",
        "-q",
        "--quiet-pull",
        "--privileged",
        "-t",
        "--tty",
    }
)

# `docker build` / `docker buildx build` / `podman build` options that take a value.
BUILD_VALUED = frozenset(
    [
        "-f",
        "--file",
        "-t",
        "--tag",
        "--build-arg",
        "--target",
        "--platform",
        "--network",
        "--label",
        "--cache-from",
        "--cache-to",
        "--secret",
        "--ssh",
        "--progress",
        "--output",
        "-o",
        "--iidfile",
        "--add-host",
        "--shm-size",
        "--ulimit",
        "--builder",
        "--build-context",
        "--metadata-file",
        "--allow",
        "--annotation",
        "--attest",
        "--sbom",
        "--provenance",
        "--call",
    ]
)

# Dockerfile instructions, and what each does to a container's starting environment.
INSTRUCTIONS: Mapping[str, str] = {
    "FROM": "starts a stage from an image or an earlier stage (`AS name`); its name may use ARGs declared before the "
    "first FROM; the environment of an earlier stage is inherited, an external image's is read only for Docker "
    "Official Images (none of the project's variables)",
    "ARG": "a build variable (`NAME`, `NAME=default`; `--build-arg NAME=V` overrides); usable in later instructions "
    "of its stage, never in the container's environment",
    "ENV": "sets variables of the container's environment (`A=1 B=2`, the older `A value`); `$NAME`, `${NAME}`, "
    "`${NAME:-w}`, `${NAME:+w}` are replaced from the stage's ARGs and ENVs (an unset one is empty)",
    "WORKDIR": "the folder commands start in (not read: a container's folder comes from `-w`)",
    "RUN": "runs at build time: changes no variable of the container's environment",
    "COPY": "files: no variable",
    "ADD": "files: no variable",
    "LABEL": "metadata",
    "EXPOSE": "metadata",
    "VOLUME": "metadata",
    "USER": "the user (not read)",
    "CMD": "the default command (a run with a command replaces it)",
    "ENTRYPOINT": "runs before the command a `docker run` gives: a run of an image with one is unread",
    "HEALTHCHECK": "metadata",
    "SHELL": "the shell RUN uses at build time: no variable",
    "ONBUILD": "an instruction for images built from this one; `ONBUILD ENV` or `ONBUILD ARG` in a stage another stage "
    "starts from: outside (not read)",
    "STOPSIGNAL": "metadata",
    "MAINTAINER": "metadata",
}

# Docker Official Images by name (no registry, no namespace, or `library/`), the common bases of CI images.
OFFICIAL_IMAGES = frozenset(
    [
        "alpine",
        "almalinux",
        "amazonlinux",
        "archlinux",
        "busybox",
        "buildpack-deps",
        "centos",
        "clearlinux",
        "debian",
        "fedora",
        "gcc",
        "golang",
        "mageia",
        "node",
        "openjdk",
        "eclipse-temurin",
        "oraclelinux",
        "photon",
        "python",
        "pypy",
        "rockylinux",
        "ruby",
        "rust",
        "sl",
        "ubuntu",
    ]
)
