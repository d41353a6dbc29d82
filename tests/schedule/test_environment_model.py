"""The job environment model's readers, one construct per case: install commands, project extras, requirement files,
the fold of a job's steps, Dockerfiles, conftest-declared options."""

from __future__ import annotations

import posixpath
import shlex

import pytest

from matrix.schedule.environment import distributions
from matrix.schedule.environment.build import environment_of, requirement_file
from matrix.schedule.environment.conftest_options import declared_options
from matrix.schedule.environment.distributions import Distribution, module_answer
from matrix.schedule.environment.images import dockerfile_steps
from matrix.schedule.environment.installs import fresh_python, install_step
from matrix.schedule.environment.model import (
    Base,
    JobEnvironment,
    StepKind,
    environment_fields,
    environment_of_fields,
)
from matrix.schedule.environment.plugins import Arity
from matrix.schedule.environment.projects import project_requirements


@pytest.mark.parametrize(
    ("command", "requirements", "projects", "files"),
    [
        pytest.param("pip install -e '.[dev,test]'", (), ((".", ("dev", "test")),), (), id="editable-extras"),
        pytest.param("pip3 install .[gpu]", (), ((".", ("gpu",)),), (), id="pip3-extra"),
        pytest.param("python -m pip install -U 'numpy<2' scipy==1.13", ("numpy<2", "scipy==1.13"), (), (), id="python-m-pip"),
        pytest.param("uv pip install --system -r ci/reqs.txt", (), (), ("ci/reqs.txt",), id="uv-pip-system"),
        pytest.param("pip install --no-deps ./plugins/extra[fast]", (), (("plugins/extra", ("fast",)),), (), id="sub-project"),
        pytest.param("conda install -y -c conda-forge gizmo=1.2 widget", ("gizmo==1.2", "widget"), (), (), id="conda"),
        pytest.param("mamba install frob", ("frob",), (), (), id="mamba"),
    ],
)
def test_an_install_command_is_read(command: str, requirements: tuple[str, ...], projects: object, files: object) -> None:
    step = install_step(shlex.split(command))
    assert step is not None and not step.unread
    assert (step.requirements, step.projects, step.files) == (requirements, projects, files)


@pytest.mark.parametrize(
    ("command", "why"),
    [
        pytest.param("pip install --target vendor gizmo", "--target installs outside", id="target"),
        pytest.param("pip install $EXTRA", "known only at run time", id="variable"),
        pytest.param("pip install git+https://example.org/x.git", "named by a URL", id="url"),
        pytest.param("pip install --frobnicate gizmo", "is not read", id="unknown-option"),
    ],
)
def test_an_install_not_understood_is_unread(command: str, why: str) -> None:
    step = install_step(shlex.split(command))
    assert step is not None and why in step.unread


def test_cpu_torch_no_deps_and_not_an_install() -> None:
    step = install_step(shlex.split("pip install torch --index-url https://download.pytorch.org/whl/cpu --no-deps"))
    assert step is not None and step.cpu_torch and step.no_deps
    assert install_step(["pip", "list"]) is None
    assert install_step(["python", "-m", "venv", ".venv"]) is not None  # a new environment: the base is not known


def test_uv_sync_extras_and_groups() -> None:
    step = install_step(shlex.split("uv sync --extra gpu --all-extras --group lint --no-dev"))
    assert step is not None
    assert step.projects == ((".", ("gpu", "*")),)
    assert step.groups == ((".", ("lint",)),)


PYPROJECT = """
[project]
name = "gadget"
dependencies = ["numpy>=1.26"]
[project.optional-dependencies]
dev = ["pytest", "gizmo==2.0"]
gpu = ["triton"]
[dependency-groups]
lint = ["ruff", {include-group = "typing"}]
typing = ["mypy"]
"""

SETUP = """
from setuptools import setup

def base():
    if detect() == "gpu":
        return ["torch", "triton"]
    return ["torch"]

def optional():
    dev_deps = ["pytest", "gizmo"]
    return {"dev": dev_deps, "docs": DOCS}

DOCS = ["sphinx"]
setup(name="gadget", install_requires=base(), extras_require=optional())
"""


def test_pyproject_extras_and_groups() -> None:
    found = project_requirements(PYPROJECT, None, ["dev"], ["lint"])
    assert found.surely == ("numpy>=1.26", "pytest", "gizmo==2.0", "ruff", "mypy")
    assert found.name == "gadget"
    assert project_requirements(PYPROJECT, None, ["*"]).surely[1:] == ("pytest", "gizmo==2.0", "triton")
    assert project_requirements(PYPROJECT, None, ["nope"]).unknown


def test_a_literal_setup_py_through_functions_and_names() -> None:
    found = project_requirements(None, SETUP, ["dev", "docs"])
    # both returns of base() name torch; triton only one: possible, not certain
    assert found.surely == ("torch", "pytest", "gizmo", "sphinx")
    assert found.maybe == ("triton",)


def test_a_computed_setup_py_value_is_unknown() -> None:
    found = project_requirements(None, "from setuptools import setup\nsetup(install_requires=read_reqs())\n", [])
    assert found.unknown and not found.surely


def test_requirement_files_nest_and_stop() -> None:
    files = {"r/ci.txt": "-r base.txt\n-c constraints.txt\ngizmo>=1  # pinned later\n", "r/base.txt": "numpy\n-e .\n"}
    found = requirement_file("r/ci.txt", files.get)
    assert found.surely == ("numpy", "gizmo>=1")
    assert any("-e ." in u for u in found.unknown)
    loop = requirement_file("a.txt", {"a.txt": "-r a.txt\n"}.get)
    assert loop.unknown


def _steps(*commands: str) -> list:  # type: ignore[type-arg]
    out = [fresh_python("uses: actions/setup-python@v5")]
    for command in commands:
        step = install_step(shlex.split(command))
        assert step is not None
        out.append(step)
    return out


def test_the_fold_keeps_the_last_explicit_version() -> None:
    env = environment_of(_steps("pip install 'gizmo>=2'", "pip install 'gizmo==2.3'"), {}.get)
    assert env.base is Base.FRESH
    found = env.get("Gizmo")
    assert found is not None and found.specifier == "==2.3"


def test_a_later_install_may_change_an_earlier_version() -> None:
    env = environment_of(_steps("pip install 'gizmo>=2'", "pip install widget"), {}.get)
    found = env.get("gizmo")
    assert found is not None and found.specifier == ""


def test_an_unread_install_unbounds_the_environment_and_uninstall_removes() -> None:
    env = environment_of(_steps("pip install gizmo", "pip install $MORE"), {}.get)
    assert env.maybe is None and env.unknown
    gone = environment_of(_steps("pip install gizmo widget", "pip uninstall -y gizmo"), {}.get)
    assert gone.names() == {"widget"}


def test_a_new_virtual_environment_drops_what_was_installed_before() -> None:
    env = environment_of(_steps("pip install gizmo", "python -m venv .venv", "pip install widget"), {}.get)
    assert env.base is Base.UNKNOWN and env.names() == {"widget"}


@pytest.mark.parametrize(
    ("create", "fresh"),
    [
        pytest.param("conda create -n work python=3.11 -y", True, id="python-only"),
        pytest.param("conda create -y -n work python=3.11 libstdcxx-ng=12.1 pip", True, id="c-runtime-and-pip"),
        pytest.param("conda create -n work python=3.11 numpy -y", False, id="a-python-package"),
        pytest.param("conda create -n work python=3.11 --file spec.txt", False, id="a-spec-file"),
    ],
)
def test_a_conda_environment_the_job_made_holds_what_it_installs_after_activating(create: str, fresh: bool) -> None:
    env = environment_of(_steps(create, "conda activate work", "pip install pyyaml pillow"), {}.get)
    assert (env.base is Base.FRESH) is fresh and env.python == "3.11"
    answer = module_answer(env, "sklearn")
    assert answer.importable is (False if fresh else None), answer.why


@pytest.mark.parametrize(
    ("steps", "module", "importable"),
    [
        pytest.param(("pip install pyyaml",), "yaml", True, id="table-import-name"),
        pytest.param(("pip install gizmo",), "gizmo", True, id="own-name"),
        pytest.param(("pip install pyyaml pillow",), "sklearn", False, id="absent-closure-known"),
        pytest.param(("pip install gizmo",), "sklearn", None, id="closure-not-known"),
        pytest.param(("pip install nvidia-cutlass-dsl",), "cutlass", True, id="cutlass-dsl"),
        pytest.param(("pip install pyyaml",), "json", True, id="stdlib"),
    ],
)
def test_module_answers(steps: tuple[str, ...], module: str, importable: bool | None) -> None:
    answer = module_answer(environment_of(_steps(*steps), {}.get), module)
    assert answer.importable is importable, answer.why


def test_an_unknown_base_never_shows_a_module_absent() -> None:
    steps = _steps("pip install pyyaml")[1:]
    answer = module_answer(environment_of(steps, {}.get), "sklearn")
    assert answer.importable is None and "not known" in answer.why


def test_environment_fields_round_trip() -> None:
    env = environment_of(_steps("pip install 'gizmo==1'"), {}.get)
    assert environment_of_fields(environment_fields(env)) == env
    assert environment_of_fields(environment_fields(JobEnvironment())) == JobEnvironment()


@pytest.mark.parametrize(
    ("dockerfile", "kinds"),
    [
        pytest.param("FROM python:3.11-slim\nRUN pip install gizmo\n", [StepKind.FRESH, StepKind.INSTALL], id="slim"),
        pytest.param("FROM ubuntu:24.04\nRUN pip install gizmo\n", [StepKind.UNKNOWN_BASE, StepKind.INSTALL], id="other-base"),
        pytest.param(
            "FROM python:3.12 AS b\nRUN pip install a && \\\n    pip install b\nFROM b\n",
            [StepKind.FRESH, StepKind.INSTALL, StepKind.INSTALL],
            id="stage-continued",
        ),
    ],
)
def test_dockerfile_steps(dockerfile: str, kinds: list[StepKind]) -> None:
    assert [s.kind for s in dockerfile_steps(dockerfile, "Dockerfile")] == kinds


def test_declared_options() -> None:
    text = (
        "def pytest_addoption(parser):\n"
        "    parser.addoption('--run-perf', action='store_true')\n"
        "    parser.addoption('--torch_ver', default='2.7')\n"
        "    parser.getgroup('g').addoption('--sizes', nargs='*')\n"
        "    parser.addoption(FLAG)\n"
    )
    found = declared_options(text)
    assert [(o.flags, o.arity) for o in found[:3]] == [
        (("--run-perf",), Arity.NONE),
        (("--torch_ver",), Arity.ONE),
        (("--sizes",), Arity.ANY),
    ]
    assert found[3].arity is None and found[3].unread
    assert declared_options("def other(parser):\n    parser.addoption('--x')\n") == ()


@pytest.mark.parametrize(
    ("specifier", "op", "version", "decided"),
    [
        (">=4.52.0", "Lt", "4.52.0", False),
        (">=4.52.0", "GtE", "4.52.0", True),
        (">=4.52.0", "GtE", "5.0.0", None),
        (">4.52.0", "Gt", "4.52.0", True),
        ("<2,>=1.5", "Lt", "2.0", True),
        ("<=2", "Gt", "2", False),
        ("==1.5", "LtE", "1.5", True),
        ("~=1.4", "Lt", "1.4", False),
        ("!=1.5", "Lt", "2", None),
        ("==1.*", "Lt", "2", None),
    ],
)
def test_a_version_range_decides_only_what_its_bounds_decide(specifier: str, op: str, version: str, decided: bool | None) -> None:
    from packaging.version import Version

    from matrix.schedule.environment.versions import range_decides

    assert range_decides(specifier, op, Version(version)) is decided


def test_an_install_into_another_interpreter_is_unread() -> None:
    step = install_step(shlex.split("uv pip install --python /opt/venv/bin/python gizmo"))
    assert step is not None and "outside" in step.unread


def test_an_install_on_a_branch_of_the_script_is_not_known_to_run() -> None:
    from matrix.schedule.commands.pytest_command import install_lines

    found = install_lines('if [ "$GPU" = 1 ]; then pip install gizmo; fi\npip install widget\n', ".", {})
    assert [(step.requirements, bool(step.unread)) for _, _, step, _ in found] == [(("gizmo",), True), (("widget",), False)]


def _table(monkeypatch: pytest.MonkeyPatch, rows: list[Distribution]) -> None:
    monkeypatch.setattr(distributions, "distribution_table", lambda: {r.name: r for r in rows})


def test_a_row_that_does_not_vouch_for_submodules(monkeypatch: pytest.MonkeyPatch) -> None:
    # A row read from one version's RECORD: the package is there, its submodules are not known to be.
    _table(monkeypatch, [Distribution(name="lensmaker", imports=("lensmaker",), requires=(), depends=(), submodules=False)])
    environment = environment_of(_steps("pip install lensmaker"), {}.get)
    assert module_answer(environment, "lensmaker").importable is True
    answer = module_answer(environment, "lensmaker.models.prism")
    assert answer.importable is None and "which submodules the installed version has" in answer.why


def test_a_namespace_row_provides_only_what_it_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [
        Distribution(name="optics-core", imports=("optics.core",), requires=("optics-base",), depends=("optics-base",)),
        Distribution(name="optics-base", imports=("optics_base",), requires=(), depends=()),
    ]
    _table(monkeypatch, rows)
    environment = environment_of(_steps("pip install optics-core"), {}.get)
    # `optics` is a namespace folder: optics.core's wheel does not hold optics.lens.
    assert module_answer(environment, "optics.lens").importable is False
    assert module_answer(environment, "optics.core").importable is True
    assert module_answer(environment, "optics").importable is not False


def test_the_checkouts_own_project_pulls_in_only_what_its_files_say(monkeypatch: pytest.MonkeyPatch) -> None:
    # `pip install -e .` of a project whose requirements are read from its pyproject: the closure needs no table row
    # for the project itself, so a module nothing provides is shown absent.
    _table(monkeypatch, [Distribution(name="lensmaker", imports=("lensmaker",), requires=(), depends=())])
    files = {"pyproject.toml": '[project]\nname = "orbit-kit"\nversion = "0"\ndependencies = ["lensmaker"]\n'}
    environment = environment_of(_steps("pip install -e ."), lambda path: files.get(posixpath.normpath(path)))
    assert environment.local == ("orbit-kit",)
    assert module_answer(environment, "cutlass").importable is False
    assert module_answer(environment, "lensmaker").importable is True


def test_the_release_table_is_well_formed() -> None:
    """Every span of `matrix/data/distribution_modules.toml` runs between two releases the row read, in order; every
    release it lists an eager package for is one it read; and a release between two read ones is not answered."""
    from packaging.version import Version

    from matrix.schedule.environment.releases import release_holds, release_table

    rows = release_table()
    assert rows, "no rows"
    for row in rows.values():
        assert row.spans, row.name
        for spans in row.spans.values():
            for first, last in spans:
                assert first in row.versions and last in row.versions and first <= last
        assert set(row.eager) <= row.versions
    transformers = rows["transformers"]
    assert Version("4.52.0") in transformers.versions and Version("4.52.2") not in transformers.versions
    assert release_holds("transformers", "4.52.2", "transformers.models.mllama") is None
    assert release_holds("transformers", "not-a-version", "transformers.models.mllama") is None
    assert release_holds("transformers", "4.52.0", "transformers.models") is None
    assert release_holds("another-dist", "4.52.0", "transformers.models.mllama") is None
    held = release_holds("Transformers", "4.52.0", "transformers.models.mllama")  # names compare normalized
    assert held is not None and held[0] is True
