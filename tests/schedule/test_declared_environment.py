"""A declared schedule's `base` and `install` keys: the environment each entry's tests run in."""

from __future__ import annotations

import posixpath
import tomllib

import pytest

from matrix.core.errors import ConfigError
from matrix.core.runner_files import load_runners
from matrix.schedule.commands.pytest_command import PytestCommandReader
from matrix.schedule.environment.model import Base, JobEnvironment
from matrix.schedule.services.declared import declared_schedule, parse_declared

PROFILES = load_runners(())
NOTHING: dict[str, str] = {}
READERS = (PytestCommandReader(),)

PLAN = """
[schedule]
source = ".github/workflows/gpu.yml"
base = "fresh"
install = ["pip install -r reqs/base.txt", "pip install widgetlib==2.1"]

[[entry]]
job = "gpu (H100)"
labels = ["h100"]
pytest = "pytest tests/"
install = ["pip install --no-deps -e ."]

[[entry]]
job = "gpu (A10G)"
labels = ["sm86"]
pytest = "pytest tests/"
base = "unknown"
install = ["pip install sprocket"]

[[entry]]
job = "cpu"
labels = ["ubuntu-latest"]
pytest = "pytest tests/"
"""

FILES = {
    "reqs/base.txt": "gearbox>=3\n",
    "pyproject.toml": '[project]\nname = "clockwork"\nversion = "1"\ndependencies = []\n',
}


def _entries() -> dict[str, JobEnvironment]:
    declared = parse_declared(tomllib.loads(PLAN), "plan.toml")
    schedule = declared_schedule(declared, PROFILES, lambda path: FILES.get(posixpath.normpath(path)), READERS)
    return {e.origin.job: e.environment for e in schedule.entries if e.environment is not None}


def test_schedule_installs_then_the_entry_installs() -> None:
    h100 = _entries()["gpu (H100)"]
    assert h100.base is Base.FRESH
    assert h100.names() == {"gearbox", "widgetlib", "clockwork"}
    widget = h100.get("widgetlib")
    assert widget is not None and widget.specifier == "==2.1"


def test_an_entry_base_starts_over() -> None:
    a10g = _entries()["gpu (A10G)"]
    assert a10g.base is Base.UNKNOWN and a10g.names() == {"sprocket"}


def test_an_entry_without_keys_gets_the_schedule_environment() -> None:
    cpu = _entries()["cpu"]
    assert cpu.names() == {"gearbox", "widgetlib"}


def test_no_keys_no_environment() -> None:
    text = '[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest tests/"\n'
    schedule = declared_schedule(parse_declared(tomllib.loads(text), "s.toml"), PROFILES, NOTHING.get, READERS)
    assert schedule.entries[0].environment is None


def test_a_command_known_only_at_run_time_is_unread() -> None:
    text = '[schedule]\nbase = "fresh"\ninstall = ["pip install \\"$EXTRA\\""]\n[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest"\n'
    schedule = declared_schedule(parse_declared(tomllib.loads(text), "s.toml"), PROFILES, NOTHING.get, READERS)
    environment = schedule.entries[0].environment
    assert environment is not None and environment.maybe is None and environment.unknown


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[schedule]\nbase = "stale"\n', "base must be fresh or unknown"),
        ('[schedule]\ninstall = "pip install x"\n', "install"),
        ('[schedule]\ninstall = ["make deps"]\n', "not an install command"),
        ('[schedule]\ninstall = ["pip install \'x"]\n', "does not tokenise"),
        ('[[entry]]\njob = "j"\nlabels = ["h100"]\npytest = "pytest"\nbase = 3\n', "entry 1: base"),
    ],
)
def test_bad_environment_keys(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_declared(tomllib.loads(text), "s.toml")
