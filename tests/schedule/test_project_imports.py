"""The checkout's own modules: whether one imports on a job, read from the checkout's files."""

from __future__ import annotations

import posixpath

import pytest

from matrix.schedule.environment.distributions import module_answer
from matrix.schedule.environment.model import Base, Installed, JobEnvironment
from matrix.schedule.environment.project_imports import ProjectImports, checkout_project

TREE = {
    "pyproject.toml": '[project]\nname = "Orbit_Kit"\nversion = "0"\n',
    "orbitkit/__init__.py": "from .core import spin\nfrom ._impl import *\n",
    "orbitkit/core.py": "import os\nimport gearbox\n\ndef spin():\n    import never_installed\n",
    "orbitkit/_impl.py": "__all__ = ['wobble']\ndef wobble(): ...\ndef hidden(): ...\n",
    "orbitkit/fast/__init__.py": "try:\n    import turbo\nexcept ImportError:\n    turbo = None\n",
    "orbitkit/fast/kernel.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import heavy\nfrom ..core import spin\n",
    "orbitkit/slow.py": "import mystery_dep\n",
    "orbitkit/space/gen/emit.py": "X = 1\n",
    "orbitkit/uses_space.py": "from .space.gen.emit import X\n",
}


def _imports(files: dict[str, str] = TREE) -> ProjectImports:
    def load(path: str) -> str | None:
        return files.get(posixpath.normpath(path))

    return ProjectImports(load, checkout_project(load))


def _job(*names: str, editable: bool = True, base: Base = Base.UNKNOWN) -> JobEnvironment:
    command = "pip install -e ." if editable else "pip install ."
    own = Installed(distribution="orbit-kit", command=command)
    return JobEnvironment(base=base, installed=(own, *(Installed(distribution=n, command=f"pip install {n}") for n in names)))


@pytest.mark.parametrize(
    ("module", "names", "job", "importable"),
    [
        ("orbitkit", (), _job("gearbox"), True),  # the import inside spin() does not run at import
        ("orbitkit", (), _job(), None),  # gearbox is not known installed
        ("orbitkit.fast.kernel", (), _job("gearbox"), True),  # turbo is guarded, heavy only for type checkers
        ("orbitkit.slow", (), _job("gearbox"), None),  # mystery_dep: not known
        ("orbitkit", ("wobble",), _job("gearbox"), True),  # bound through the star import's __all__
        ("orbitkit", ("hidden",), _job("gearbox"), None),  # left out of __all__
        ("orbitkit", ("fast",), _job("gearbox"), True),  # a submodule file
        ("orbitkit.uses_space", (), _job("gearbox"), True),  # space/ and gen/ are namespace folders
        ("orbitkit.uses_space", (), _job("gearbox", editable=False), None),  # a regular install may not copy them
        ("orbitkit.missing", (), _job("gearbox"), None),
    ],
)
def test_own_module(module: str, names: tuple[str, ...], job: JobEnvironment, importable: bool | None) -> None:
    found = _imports().answer(module, job, names)
    assert found is not None and found.importable is importable, found


def test_not_installed_and_not_on_the_path() -> None:
    job = JobEnvironment(installed=(Installed(distribution="gearbox", command="pip install gearbox"),))
    found = _imports().answer("orbitkit", job)
    assert found is not None and found.importable is None and "does not hold it" in found.why


def test_pythonpath_puts_it_on_the_path() -> None:
    files = {f"src/{k}" if k.startswith("orbitkit") else k: v for k, v in TREE.items()}
    load = lambda path: files.get(posixpath.normpath(path))  # noqa: E731
    imports = ProjectImports(load, checkout_project(load, ("src",)))
    job = JobEnvironment(installed=(Installed(distribution="gearbox", command="pip install gearbox"),))
    found = imports.answer("orbitkit.fast.kernel", job)
    assert found is not None and found.importable is True and "pythonpath" in found.why


def test_another_distributions_module_is_not_the_checkouts() -> None:
    assert _imports().answer("gearbox.teeth", _job("gearbox")) is None


def test_setup_py_name() -> None:
    files = {"setup.py": "from setuptools import setup\nsetup(name='orbit-kit')\n"}
    assert checkout_project(files.get).distribution == "orbit-kit"


def test_unconditional_dependency_of_an_install_is_there() -> None:
    # jinja2 always requires MarkupSafe (the table's `depends`): installed with jinja2 unless --no-deps.
    with_deps = JobEnvironment(installed=(Installed(distribution="jinja2", command="pip install jinja2", with_deps=True),))
    assert module_answer(with_deps, "markupsafe").importable is True
    without = JobEnvironment(installed=(Installed(distribution="jinja2", command="pip install --no-deps jinja2"),))
    assert module_answer(without, "markupsafe").importable is None
