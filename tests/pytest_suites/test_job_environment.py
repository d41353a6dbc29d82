"""Guards on imports and versions judged against what the job that runs the test installs (its steps, the project's
extras, requirement files), each case a small checkout with one workflow."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from matrix.guards.model import GuardFindingKind
from matrix.pytest_suites.audit import PytestAuditReport

Audit = Callable[..., PytestAuditReport]

PYPROJECT = """
[project]
name = "widgetlib"
version = "1.0"
dependencies = ["pyyaml"]

[project.optional-dependencies]
dev = ["pytest", "frobnicate>=2.1"]
"""


def _workflow(*lines: str, setup_python: bool = True) -> str:
    steps = ["      - uses: actions/checkout@v4"]
    if setup_python:
        steps.append("      - uses: actions/setup-python@v5")
    steps += [f"      - run: {line}" for line in lines]
    return "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n" + "\n".join(steps) + "\n"


def _files(workflow: str, test: str, **extra: str) -> dict[str, str]:
    return {".github/workflows/ci.yml": workflow, "checks/test_mod.py": test, "pyproject.toml": PYPROJECT, **extra}


def _verdict(report: PytestAuditReport) -> str:
    if report.of_kind(GuardFindingKind.SILENT_SKIP):
        return "skips"
    return "undetermined" if report.undetermined else "runs"


IMPORTORSKIP = "import pytest\n\ndef test_it():\n    pytest.importorskip({!r})\n"
FIND_SPEC = (
    "import importlib.util\nimport pytest\n\n@pytest.mark.skipif(importlib.util.find_spec({!r}) is None, reason='x')\n"
    "def test_it():\n    pass\n"
)
TRY_IMPORT = "import pytest\n\ntry:\n    import {}\nexcept ImportError:\n    pytest.skip('no', allow_module_level=True)\n\ndef test_it():\n    pass\n"
VERSION = (
    "import frobnicate\nimport pytest\nfrom packaging import version\n\n"
    "@pytest.mark.skipif(version.parse(frobnicate.__version__) < version.parse({!r}), reason='old')\ndef test_it():\n    pass\n"
)


@pytest.mark.parametrize(
    ("steps", "test", "expected"),
    [
        pytest.param(
            ("pip install -e '.[dev]'", "pytest checks"), IMPORTORSKIP.format("frobnicate"), "runs", id="extra-installs-it"
        ),
        pytest.param(("pip install -e .", "pytest checks"), IMPORTORSKIP.format("yaml"), "runs", id="dependency-through-table"),
        pytest.param(("pip install -e '.[dev]'", "pytest checks"), FIND_SPEC.format("frobnicate"), "runs", id="find-spec"),
        pytest.param(("pip install -e '.[dev]'", "pytest checks"), TRY_IMPORT.format("frobnicate"), "runs", id="try-import"),
        pytest.param(
            ("pip install -r requirements-ci.txt", "pytest checks"), IMPORTORSKIP.format("gizmo"), "runs", id="requirements-file"
        ),
        pytest.param(("uv sync --extra dev", "pytest checks"), IMPORTORSKIP.format("frobnicate"), "runs", id="uv-sync-extra"),
        pytest.param(("conda install -y gizmo", "pytest checks"), IMPORTORSKIP.format("gizmo"), "runs", id="conda"),
        # Fresh interpreter, and only distributions whose dependencies the table knows: sklearn is certainly absent.
        pytest.param(
            ("pip install pyyaml pillow", "pytest checks"), IMPORTORSKIP.format("sklearn"), "skips", id="not-installed-shown"
        ),
        # `.[dev]` installs frobnicate, whose dependencies are not known: whether sklearn comes with it is not known.
        pytest.param(
            ("pip install -e '.[dev]'", "pytest checks"),
            IMPORTORSKIP.format("sklearn"),
            "undetermined",
            id="not-installed-unknown",
        ),
        pytest.param(("pip install -e '.[dev]'", "pytest checks"), VERSION.format("2.0"), "runs", id="version-range-decides"),
        pytest.param(("pip install 'frobnicate==1.5'", "pytest checks"), VERSION.format("2.0"), "skips", id="version-pinned"),
        pytest.param(
            ("pip install -e '.[dev]'", "pytest checks"), VERSION.format("3.0"), "undetermined", id="version-range-open"
        ),
    ],
)
def test_an_import_guard_is_judged_on_what_the_job_installs(
    audit: Audit, steps: tuple[str, ...], test: str, expected: str
) -> None:
    files = _files(
        _workflow(*steps), test, **{"requirements-ci.txt": "-r requirements-base.txt\n", "requirements-base.txt": "gizmo>=1\n"}
    )
    assert _verdict(audit(files)) == expected


def test_a_runner_whose_interpreter_is_not_known_never_shows_a_module_absent(audit: Audit) -> None:
    files = _files(_workflow("pip install pyyaml", "pytest checks", setup_python=False), IMPORTORSKIP.format("sklearn"))
    assert _verdict(audit(files)) == "undetermined"


SETUP_PY = """
from setuptools import setup


def extras():
    test_deps = ["pytest", "frobnicate"]
    return {"test": test_deps}


setup(name="widgetlib", install_requires=["pyyaml"], extras_require=extras())
"""


def test_a_literal_setup_py_list_bound_in_a_function_gives_the_extra(audit: Audit) -> None:
    files = _files(
        _workflow("pip install -e '.[test]'", "pytest checks"), IMPORTORSKIP.format("frobnicate"), **{"setup.py": SETUP_PY}
    )
    files["pyproject.toml"] = (
        '[project]\nname = "widgetlib"\nversion = "1"\ndynamic = ["dependencies", "optional-dependencies"]\n'
    )
    assert _verdict(audit(files)) == "runs"


HELPER_CALL = """
import pytest


def _backend():
    pytest.importorskip("frobnicate")
    return object


def test_it():
    name = _backend().mro()
    assert name
"""


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        (("pip install -e '.[dev]'",), "runs"),
        # The project's own requirements are read from its files and its dependencies' rows are in the table:
        # nothing the job installs brings frobnicate.
        (("pip install -e .",), "skips"),
        (("pip install -e .", "pip install unlisted-wheel"), "undetermined"),
    ],
)
def test_a_helper_called_inside_an_expression_is_followed(audit: Audit, steps: tuple[str, ...], expected: str) -> None:
    # `name = _backend().mro()`: the helper runs first, and its importorskip skips where frobnicate is not installed.
    assert _verdict(audit(_files(_workflow(*steps, "pytest checks"), HELPER_CALL))) == expected


def _container_workflow(dockerfile: str) -> dict[str, str]:
    workflow = (
        "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - run: docker build -t ci-image -f docker/ci.Dockerfile .\n"
        "      - run: docker run -d --name box ci-image sleep infinity\n"
        "      - run: docker exec box pytest checks\n"
    )
    return {".github/workflows/ci.yml": workflow, "docker/ci.Dockerfile": dockerfile, "pyproject.toml": PYPROJECT}


@pytest.mark.parametrize(
    ("dockerfile", "module", "expected"),
    [
        pytest.param("FROM python:3.12-slim\nRUN pip install --no-cache-dir pyyaml\n", "yaml", "runs", id="installed-in-image"),
        pytest.param(
            "FROM python:3.12-slim\nRUN pip install pyyaml && pip install pillow\n", "sklearn", "skips", id="absent-from-image"
        ),
        pytest.param(
            "FROM python:3.12-slim AS base\nRUN pip install pyyaml\nFROM base\nRUN echo done\n", "yaml", "runs", id="stage"
        ),
        pytest.param("FROM registry.example/team/gpu:1\nRUN pip install pyyaml\n", "sklearn", "undetermined", id="unknown-base"),
    ],
)
def test_the_image_a_job_builds_says_what_its_container_holds(audit: Audit, dockerfile: str, module: str, expected: str) -> None:
    files = {**_container_workflow(dockerfile), "checks/test_mod.py": IMPORTORSKIP.format(module)}
    assert _verdict(audit(files)) == expected


def test_setup_python_on_a_self_hosted_runner_is_not_a_fresh_interpreter(audit: Audit) -> None:
    workflow = _workflow("pip install pyyaml", "pytest checks").replace("ubuntu-latest", "[self-hosted, linux, gpu]")
    assert _verdict(audit(_files(workflow, IMPORTORSKIP.format("sklearn")))) == "undetermined"
    hosted = _workflow("pip install pyyaml", "pytest checks")
    assert _verdict(audit(_files(hosted, IMPORTORSKIP.format("sklearn")))) == "skips"


@pytest.mark.parametrize(
    ("installs", "expected"),
    [
        ("pip install pytest pytest-xdist", "runs"),
        # pytest and what it requires are in the distribution table: none of them is xdist.
        ("pip install pytest", "skips"),
        ("pip install pytest unlisted-wheel", "undetermined"),
    ],
)
def test_a_plugin_presence_guard_reads_the_jobs_installs(audit: Audit, installs: str, expected: str) -> None:
    # pytest-xdist installs the module `xdist` (matrix/data/distributions.toml); without it the job's other installs
    # (pytest, whose dependencies the table does not know) may still bring it.
    test = "import pytest\n\nxdist = pytest.importorskip('xdist')\n\ndef test_it():\n    pass\n"
    assert _verdict(audit(_files(_workflow(installs, "pytest checks"), test))) == expected


MODEL_HELPER = """import pytest


def has_model():
    try:
        import {module}  # noqa: F401

        return True
    except ImportError:
        return False


@pytest.mark.skipif(not has_model(), reason="model family not in this transformers")
def test_it():
    pass
"""
FROM_MODEL = "import pytest\n\ntry:\n    from {module} import {name}\nexcept ImportError:\n    pytest.skip('no', allow_module_level=True)\n\ndef test_it():\n    pass\n"


@pytest.mark.parametrize(
    ("install", "test", "expected"),
    [
        # The table read from the released wheels: transformers 4.52.0 has models/mllama, and no models/qwen3_vl.
        pytest.param("transformers==4.52.0", MODEL_HELPER.format(module="transformers.models.mllama"), "runs", id="held"),
        pytest.param("transformers==4.52.0", MODEL_HELPER.format(module="transformers.models.qwen3_vl"), "skips", id="absent"),
        # A range: which release is installed is not known, so neither is what it holds.
        pytest.param(
            "transformers>=4.52.0", MODEL_HELPER.format(module="transformers.models.mllama"), "undetermined", id="range"
        ),
        # A release the table did not read, and a module below a model package: not answered.
        pytest.param(
            "transformers==4.52.2", MODEL_HELPER.format(module="transformers.models.mllama"), "undetermined", id="unread"
        ),
        pytest.param(
            "transformers==4.52.0",
            MODEL_HELPER.format(module="transformers.models.mllama.configuration_mllama"),
            "undetermined",
            id="deeper-module",
        ),
        # `from M import Name`: the release holds M, but which names M binds is not read.
        pytest.param(
            "transformers==4.52.0",
            FROM_MODEL.format(module="transformers.models.mllama", name="MllamaConfig"),
            "undetermined",
            id="name-not-read",
        ),
        pytest.param(
            "transformers==4.52.0",
            FROM_MODEL.format(module="transformers.models.qwen3_vl", name="Qwen3VLConfig"),
            "skips",
            id="name-of-absent-module",
        ),
    ],
)
def test_a_pinned_release_says_which_model_packages_import(audit: Audit, install: str, test: str, expected: str) -> None:
    files = _files(_workflow(f"pip install '{install}' pytest", "pytest checks"), test)
    assert _verdict(audit(files)) == expected


def test_a_helper_try_on_an_import_takes_the_reason_of_that_import(audit: Audit) -> None:
    files = _files(
        _workflow("pip install 'transformers>=4.52.0' pytest", "pytest checks"),
        MODEL_HELPER.format(module="transformers.models.mllama"),
    )
    reasons = [u.reason for u in audit(files).undetermined_tests]
    assert reasons and all("transformers.models.mllama" in r and "branches disagree" not in r for r in reasons), reasons


SKIPPING_HELPER = """import pytest


def needs_model():
    try:
        import transformers.models.qwen3_vl  # noqa: F401
    except ImportError:
        pytest.skip("model family not in this transformers")
    return True


@pytest.mark.skipif(not needs_model(), reason="never false")
def test_it():
    pass
"""


def test_a_helper_whose_handler_skips_is_not_read_as_returning_after_it(audit: Audit) -> None:
    # The import fails on 4.52.0, so the handler's `pytest.skip` ends collection; reading the handler as a statement
    # with no effect would have the helper return True and the test "run".
    files = _files(_workflow("pip install 'transformers==4.52.0' pytest", "pytest checks"), SKIPPING_HELPER)
    assert _verdict(audit(files)) != "runs"
