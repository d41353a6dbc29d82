"""Each construct of the shell, container and launcher readers, end to end through `pytest-audit`: a verdict the
text decides is given (and is right), and a construct not read makes the test `undetermined`, never a definite
verdict. One test file per case, guarded on `MODE`; every fixture is written here.

Verdicts: "runs" (scheduled, no finding), "skips" (a silent skip on every runner it is sent to), "unscheduled",
"undetermined" (scheduled through something not read)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from matrix.cli.main import main

GUARDED = (
    "import os\nimport pytest\n\n\n"
    "@pytest.mark.skipif(os.environ.get('MODE') != 'fast', reason='needs MODE=fast')\n"
    "def test_mode():\n    pass\n"
)
PLAIN = "def test_plain():\n    pass\n"


def workflow(*steps: str, env: str = "MODE: fast") -> str:
    """One job on an sm86 runner with `env` and these `run:` steps (each a block; a step may start with `if:`)."""
    body = ""
    for step in steps:
        condition, _, run = step.rpartition("\n---\n") if "\n---\n" in step else ("", "", step)
        body += "      - " + (f"if: {condition}\n        " if condition else "") + "run: |\n"
        body += textwrap.indent(textwrap.dedent(run).strip("\n"), " " * 10) + "\n"
    return f"on: [push]\njobs:\n  gpu:\n    runs-on: [self-hosted, sm86]\n    env:\n      {env}\n    steps:\n{body}"


def verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str]) -> str:
    root = tmp_path / "repo"
    for name, text in {**files, "tests/test_mode.py": files.get("tests/test_mode.py", GUARDED)}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    main(["pytest-audit", str(root), "--format", "json", "--jobs", "1"])
    doc = json.loads(capsys.readouterr().out)
    kinds = {f["kind"] for f in doc["findings"] if f["path"] == "tests/test_mode.py"}
    if "unscheduled" in kinds:
        return "unscheduled"
    if "silent-skip" in kinds:
        return "skips"
    if doc["undetermined"] or doc["undetermined_unread"]:
        return "undetermined"
    return "runs" if doc["scheduled_tests"] else "?"


def case(name: str, expected: str, steps: tuple[str, ...], files: dict[str, str] | None = None, env: str = "MODE: fast"):  # type: ignore[no-untyped-def]
    return pytest.param({".github/workflows/ci.yml": workflow(*steps, env=env), **(files or {})}, expected, id=name)


APP = "FROM debian:12\nENV TOOL=1\n"

SHELL_ON_THE_RUNNER = [
    case("unset", "skips", ("unset MODE\npytest tests",)),
    case("env -u", "skips", ("env -u MODE pytest tests",)),
    case("env -i", "skips", ("env -i PATH=/usr/bin pytest tests",)),
    case("export -n", "skips", ("export -n MODE\npytest tests",)),
    case("empty prefix", "skips", ("MODE= pytest tests",)),
    case("empty prefix in a followed script", "skips", ("bash ci/run.sh",), {"ci/run.sh": "MODE= pytest tests\n"}),
    case("unset in a followed script", "skips", ("bash ci/run.sh",), {"ci/run.sh": "unset MODE\npytest tests\n"}),
    case(
        "export in a followed script", "runs", ("bash ci/run.sh",), {"ci/run.sh": "export MODE=fast\npytest tests\n"}, "OTHER: 1"
    ),
    case("unset in a function", "skips", ("clean() {\n  unset MODE\n}\nclean\npytest tests",)),
]

CONTAINERS = [
    case(
        "ENV from an ARG never given",
        "runs",
        ("docker build -t img .\ndocker run -d --name box img sleep infinity", "docker exec box pytest tests"),
        {"Dockerfile": "FROM debian:12\nARG LEVEL\nENV MODE=fast${LEVEL}\n"},
    ),
    case(
        "ENV from a build-arg",
        "runs",
        ("docker build --build-arg LEVEL=fast -t img .\ndocker run -d --name box img sleep 1", "docker exec box pytest tests"),
        {"Dockerfile": "FROM debian:12\nARG LEVEL=slow\nENV MODE=${LEVEL}\n"},
    ),
    case(
        "a registry base",
        "undetermined",
        ("docker build -t img .\ndocker run -d --name box img sleep infinity", "docker exec box pytest tests"),
        {"Dockerfile": "FROM localhost:5000/ubuntu\nENV TOOL=1\n"},
    ),
    case(
        "a base the job builds",
        "runs",
        (
            "docker build -t ubuntu -f base.Dockerfile .\ndocker build -t img .\ndocker run -d --name box img sleep 1",
            "docker exec box pytest tests",
        ),
        {"base.Dockerfile": "FROM debian:12\nENV MODE=fast\n", "Dockerfile": "FROM ubuntu\nENV TOOL=1\n"},
    ),
    case(
        "a start in a step that never runs",
        "skips",
        (
            "docker build -t img .\ndocker run -d --name box img sleep 1",
            "false\n---\ndocker rm -f box\ndocker run -d --name box -e MODE=fast img sleep 1",
            "docker exec box pytest tests",
        ),
        {"Dockerfile": APP},
    ),
    case(
        "a start after the exec in the same step",
        "skips",
        (
            "docker build -t img .\ndocker run -d --name box img sleep 1",
            "docker exec box pytest tests\ndocker rm -f box\ndocker run -d --name box -e MODE=fast img sleep 1",
        ),
        {"Dockerfile": APP},
    ),
    case(
        "-e from the runner's shell",
        "undetermined",
        ('docker build -t img .\ndocker run -d --name box -e MODE="$PICKED" img sleep 1', "docker exec box pytest tests"),
        {"Dockerfile": APP},
    ),
    case(
        "a login shell in the container",
        "undetermined",
        ("docker build -t img .\ndocker run -d --name box img sleep 1", "docker exec box bash -lc 'pytest tests'"),
        {"Dockerfile": APP},
    ),
    case(
        "BASH_ENV in the container",
        "undetermined",
        ("docker build -t img .\ndocker run -d --name box img sleep 1", "docker exec box bash -c 'pytest tests'"),
        {"Dockerfile": "FROM debian:12\nENV BASH_ENV=/etc/ci-env.sh\n"},
    ),
    case(
        "unset inside the container",
        "skips",
        (
            "docker build -t img .\ndocker run -d --name box -e MODE=fast img sleep 1",
            "docker exec box bash -c 'unset MODE; pytest tests'",
        ),
        {"Dockerfile": APP},
    ),
    case(
        "docker run IMAGE pytest, the checkout mounted",
        "runs",
        ('docker build -t img .\ndocker run --rm -e MODE=fast -v "$PWD":/w -w /w img pytest tests',),
        {"Dockerfile": APP},
    ),
    case("docker run IMAGE pytest, no folder", "undetermined", ("docker run --rm img pytest tests",)),
    case("docker compose run", "undetermined", ("docker compose run --rm unit pytest tests",)),
    case("docker compose exec", "undetermined", ("docker compose exec -T unit pytest tests",)),
    case(
        "docker container exec",
        "runs",
        (
            "docker build -t img .\ndocker run -d --name box -e MODE=fast img sleep 1",
            "docker container exec box pytest tests",
        ),
        {"Dockerfile": APP},
    ),
    case(
        "podman run and exec",
        "runs",
        ("podman build -t img .\npodman run -d --name box -e MODE=fast img sleep 1", "podman exec box pytest tests"),
        {"Dockerfile": APP},
    ),
]

LAUNCHERS = [
    case("python3 -mpytest", "runs", ("python3 -mpytest tests",)),
    case("python -c pytest.main", "runs", ("python -c \"import pytest; pytest.main(['tests'])\"",)),
    case(
        "from pytest import main",
        "runs",
        ("python ci/run_tests.py",),
        {"ci/run_tests.py": "import sys\nfrom pytest import main\n\nsys.exit(main(['tests', '-q']))\n"},
    ),
    case(
        "import pytest as pt",
        "runs",
        ("python ci/run_tests.py",),
        {"ci/run_tests.py": "import pytest as pt\n\nif __name__ == '__main__':\n    pt.main(['tests'])\n"},
    ),
    case("bash a script without a suffix", "runs", ("bash ci/run-tests",), {"ci/run-tests": "pytest tests\n"}),
    case("bash x.bash", "runs", ("bash ci/run.bash",), {"ci/run.bash": "pytest tests\n"}),
    case("./x with a bash shebang", "runs", ("./ci/run",), {"ci/run": "#!/usr/bin/env bash\nset -e\npytest tests\n"}),
    case(
        "./x with a python shebang",
        "runs",
        ("./ci/run",),
        {"ci/run": "#!/usr/bin/env python3\nimport pytest\npytest.main(['tests'])\n"},
    ),
    case(
        "pytest.main only under a flag the command does not pass",
        "unscheduled",
        ("python ci/run_tests.py --lint",),
        {"ci/run_tests.py": "import sys\nimport pytest\n\nif '--run' in sys.argv:\n    pytest.main(['tests'])\n"},
    ),
    case(
        "pytest.main under an argparse flag the command passes",
        "runs",
        ("python ci/run_tests.py --gpu",),
        {
            "ci/run_tests.py": (
                "import argparse\nimport pytest\n\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--gpu', action='store_true')\nargs = parser.parse_args()\n"
                "if args.gpu:\n    pytest.main(['tests'])\n"
            )
        },
    ),
    case(
        "pytest.main under an argparse flag the command does not pass",
        "unscheduled",
        ("python ci/run_tests.py",),
        {
            "ci/run_tests.py": (
                "import argparse\nimport pytest\n\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--gpu', action='store_true')\nargs = parser.parse_args()\n"
                "if args.gpu:\n    pytest.main(['tests'])\n"
            )
        },
    ),
    case(
        "a test file run as a script, pytest.main under a flag not passed",
        "unscheduled",
        ("python tests/test_mode.py",),
        {
            "tests/test_mode.py": (
                "import sys\nimport pytest\n\ndef test_mode():\n    pass\n\n"
                "if __name__ == '__main__' and '--run' in sys.argv:\n    pytest.main([__file__])\n"
            )
        },
    ),
    case(
        "a hand-off to another CI service inside a followed script",
        "undetermined",
        ("bash ci/trigger.sh",),
        {"ci/trigger.sh": "blossom-ci --operation START-CI-JOB\n"},
    ),
]

REBINDING_AND_PATTERNS = [
    case(
        "K=$(...) over the job's K", "undetermined", ('K=$(cat ci/filter.txt)\npytest tests -k "$K"',), env="K: nothing_matches"
    ),
    case(
        "read K over the job's K", "undetermined", ('read -r K < ci/filter.txt\npytest tests -k "$K"',), env="K: nothing_matches"
    ),
    case(
        "mapfile over the job's K",
        "undetermined",
        ('mapfile -t K < ci/filter.txt\npytest tests -k "$K"',),
        env="K: nothing_matches",
    ),
    case(
        "printf -v over the job's K",
        "undetermined",
        ('printf -v K "%s" "$(cat f)"\npytest tests -k "$K"',),
        env="K: nothing_matches",
    ),
    case(
        "declare -l over the job's K",
        "undetermined",
        ('declare -l K="$(cat f)"\npytest tests -k "$K"',),
        env="K: nothing_matches",
    ),
    case("a glob of a folder", "runs", ("pytest tests/*",)),
    case("a glob of files", "runs", ("pytest tests/test_*.py",)),
    case("globstar", "runs", ("shopt -s globstar\npytest tests/**/test_mode.py",)),
    case("** without globstar is *", "unscheduled", ("pytest tests/**/test_mode.py",), {"tests/sub/test_other.py": PLAIN}),
    case("a quoted pattern stays literal", "unscheduled", ("pytest 'tests/*'",)),
]


@pytest.mark.parametrize(("files", "expected"), SHELL_ON_THE_RUNNER)
def test_the_shell_environment_on_the_runner(tmp_path, capsys, files, expected):
    assert verdict(tmp_path, capsys, files) == expected


@pytest.mark.parametrize(("files", "expected"), CONTAINERS)
def test_containers_and_images(tmp_path, capsys, files, expected):
    assert verdict(tmp_path, capsys, {**files, "tests/test_mode.py": GUARDED}) == expected


@pytest.mark.parametrize(("files", "expected"), LAUNCHERS)
def test_launchers(tmp_path, capsys, files, expected):
    assert verdict(tmp_path, capsys, files) == expected


@pytest.mark.parametrize(("files", "expected"), REBINDING_AND_PATTERNS)
def test_rebinding_and_pathname_patterns(tmp_path, capsys, files, expected):
    tests = {"tests/test_mode.py": "def test_mode():\n    pass\n"}
    assert verdict(tmp_path, capsys, {**tests, **files}) == expected
