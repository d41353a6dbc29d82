"""pytest-audit's results cache over the inputs the job and checkout models read: options a conftest.py declares,
the job's installs, the checkout's own modules a guard imports, the project's name, the runs joined (`--junit`).

As in test_audit_cache.py, each input is edited in turn: the cached run after the edit must equal a fresh run and
differ from the run before it, so a cache that ignored the input is caught.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path

import pytest

from matrix.pytest_suites.run import AuditInput, run_audit
from tests.pytest_suites.cache_checkout import Checkout, edited, make_checkout


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Checkout:
    return make_checkout(tmp_path, monkeypatch)


PYPROJECT = '[project]\nname = "widgetlib"\nversion = "1.0"\n'


def _workflow(*lines: str) -> str:
    steps = ["      - uses: actions/checkout@v4", "      - uses: actions/setup-python@v5"]
    steps += [f"      - run: {line}" for line in lines]
    return "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n" + "\n".join(steps) + "\n"


def _own(checkout: Checkout, *install: str) -> None:
    """A checkout whose test imports one of the checkout's own modules, run by one workflow."""
    (checkout.root / "scripts" / "run_tests.sh").unlink()
    checkout.write(
        {
            ".github/workflows/ci.yml": _workflow(*install, "pytest tests"),
            "pyproject.toml": PYPROJECT,
            "widgetlib/__init__.py": "",
            "widgetlib/extra.py": "import os\n",
            "tests/test_own.py": "import pytest\n\n\ndef test_extra():\n    pytest.importorskip('widgetlib.extra')\n",
        }
    )


def _undetermined(report: dict[str, object]) -> object:
    return report["undetermined"]


def test_an_edit_of_the_checkouts_own_module_a_guard_imports_is_seen(checkout: Checkout) -> None:
    _own(checkout, "pip install -e .")
    # The module now imports what the job does not install: whether it imports is no longer known.
    before, after = edited(checkout, lambda: checkout.write({"widgetlib/extra.py": "import frobnicate_nowhere\n"}))
    assert _undetermined(after) != _undetermined(before)
    assert checkout.collected == ["tests/test_own.py"]


def test_an_edit_of_a_module_the_own_module_imports_is_seen_by_every_file_that_asks(checkout: Checkout) -> None:
    _own(checkout, "pip install -e .")
    checkout.write(
        {
            "widgetlib/extra.py": "from widgetlib import base\n",
            "widgetlib/base.py": "import os\n",
            "tests/test_also_own.py": "import pytest\n\n\ndef test_also():\n    pytest.importorskip('widgetlib.extra')\n",
        }
    )
    # The second file's answer is the first one's, kept: it reads base.py all the same.
    before, after = edited(checkout, lambda: checkout.write({"widgetlib/base.py": "import frobnicate_nowhere\n"}))
    assert _undetermined(after) != _undetermined(before)
    assert sorted(checkout.collected) == ["tests/test_also_own.py", "tests/test_own.py"]


def test_an_edit_of_the_projects_name_is_seen(checkout: Checkout) -> None:
    _own(checkout, "pip install widgetlib")
    # `pip install widgetlib` installs the checkout's own distribution only while the project has that name.
    edited(checkout, lambda: checkout.write({"pyproject.toml": PYPROJECT.replace("widgetlib", "gadgetlib")}))


def test_an_edit_of_what_the_job_installs_is_seen(checkout: Checkout) -> None:
    (checkout.root / "scripts" / "run_tests.sh").unlink()
    checkout.write(
        {
            ".github/workflows/ci.yml": _workflow("pytest tests"),
            "tests/test_kit.py": "import pytest\n\n\ndef test_kit():\n    pytest.importorskip('yaml')\n",
        }
    )
    edited(checkout, lambda: checkout.write({".github/workflows/ci.yml": _workflow("pip install pyyaml", "pytest tests")}))


CONFTEST_OPTIONS = """
import pytest


def pytest_addoption(parser):
    parser.addoption("--sizes", nargs="+")
"""


def test_an_edit_of_the_options_a_conftest_declares_is_seen(checkout: Checkout) -> None:
    checkout.write({"scripts/run_tests.sh": "pytest --sizes 1 2 tests/test_plain.py\n", "conftest.py": CONFTEST_OPTIONS})
    # Without the declaration the option is unknown to pytest: its values may be paths, what runs is not known.
    edited(checkout, lambda: checkout.write({"conftest.py": "import pytest\n"}))


def test_the_runs_joined_are_part_of_the_key(checkout: Checkout, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = checkout.inputs()
    joined = replace(plain, join=("1-gpu-h100",))

    def inputs(self: Checkout) -> AuditInput:
        return joined

    before = asdict(checkout.cached())
    monkeypatch.setattr(Checkout, "inputs", inputs)
    after = asdict(checkout.cached())
    assert after == asdict(run_audit(joined, checkout.profiles)) and after != before


def test_a_schedule_file_edit_is_seen(checkout: Checkout, tmp_path: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[[entry]]\njob = "j"\nlabels = ["1-gpu-h100"]\npytest = "pytest tests"\n', encoding="utf-8")
    checkout.schedule_files = (plan,)
    edited(checkout, lambda: plan.write_text(plan.read_text().replace("1-gpu-h100", "8-gpu-h200"), encoding="utf-8"))


def test_a_folder_that_becomes_a_virtual_environment_is_left_out(checkout: Checkout) -> None:
    # pytest does not recurse into a folder holding pyvenv.cfg: discovery, kept while the folders it listed and the
    # paths it probed are unchanged, sees the file appear.
    checkout.write({"tests/env/test_inside.py": "import pytest\n\n\n@pytest.mark.skip(reason='off')\ndef test_in():\n    pass\n"})
    _, after = edited(checkout, lambda: checkout.write({"tests/env/pyvenv.cfg": "home = /usr\n"}))
    assert "tests/env/test_inside.py::test_in" not in {f["finding"]["subject"] for f in after["findings"]}


def test_a_folder_added_below_a_walked_one_is_seen(checkout: Checkout) -> None:
    new = {"tests/deeper/more/test_far.py": "import pytest\n\n\n@pytest.mark.skip(reason='off')\ndef test_far():\n    pass\n"}
    edited(checkout, lambda: checkout.write(new))
    assert checkout.collected == ["tests/deeper/more/test_far.py"]
