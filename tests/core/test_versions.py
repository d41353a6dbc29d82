"""Versions are PEP 440 wherever they enter; an unparsable one is an error, never a reason to skip."""

from __future__ import annotations

import pytest

from matrix.core.detect import facts_from_override
from matrix.core.errors import DetectionError, VersionError
from matrix.core.expect import effective_versions, expected
from matrix.core.loader import load_runners, parse_matrix, read_toml
from matrix.core.model import Outcome
from matrix.core.versions import checked_versions, satisfies

GATED = """
[[axis]]
name = "backend"
values = ["triton"]

[[group]]
name = "g"
backend = "triton"

[[rule]]
id = "needs-new-sglang"
kind = "library"
versions = { sglang = ">=0.5.23" }
reason = "the fix landed in 0.5.23"
source = "tests/core"
"""


@pytest.mark.parametrize(
    ("installed", "spec", "ok"),
    [
        ("0.5.23", ">=0.5.23", True),
        ("0.5.22", ">=0.5.23", False),
        ("2.11.0+cu130", ">=2.9", True),  # local label of a CUDA build
        ("2.11.0+cu130", "==2.11.0", True),
        ("0.5.24.dev1", ">=0.5.23", True),  # a source build: pre-releases count
        ("0.5.23.post1", ">=0.5.23", True),
        ("0.5.23rc1", ">=0.5.23", False),
        ("1!0.1", ">=0.5.23", True),  # an epoch outranks any release
    ],
)
def test_satisfies_follows_pep_440(installed, spec, ok):
    assert satisfies("sglang", installed, spec) is ok


@pytest.mark.parametrize("bad", ["0.5.23-dirty", "garbage", "", "1.0 beta", "v" * 200])
def test_an_invalid_version_is_an_error_naming_library_and_value(bad):
    with pytest.raises(VersionError, match="sglang version"):
        checked_versions({"sglang": bad}, "somewhere")


def test_expected_never_turns_an_invalid_version_into_a_skip():
    """The bug: `except InvalidVersion: ok = False` made the rule fail, so a must-run cell became an expected skip."""
    matrix = parse_matrix(read_toml(GATED, "gated.toml"), "gated.toml")
    cpu = load_runners()["cpu"]
    cell = matrix.cells[0]
    assert expected(matrix, cell, cpu, {"sglang": "0.5.23+local"}).outcome is Outcome.RUN
    assert expected(matrix, cell, cpu, {"sglang": "0.5.22"}).outcome is Outcome.SKIP
    with pytest.raises(VersionError, match=r"'0\.5\.23-dirty'"):
        expected(matrix, cell, cpu, effective_versions(matrix, {"sglang": "0.5.23-dirty"}))


def test_detection_override_rejects_an_invalid_version():
    with pytest.raises(DetectionError, match=r"sglang version '0\.5\.23-dirty' is not a PEP 440 version"):
        facts_from_override('{"gpus": 0, "versions": {"sglang": "0.5.23-dirty"}}')
    assert facts_from_override('{"gpus": 0, "versions": {"torch": "2.11.0+cu130"}}').versions == {"torch": "2.11.0+cu130"}


def test_pins_reject_an_invalid_version():
    from matrix.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"\[pins\]: flashinfer version 'latest'"):
        parse_matrix(read_toml(GATED + '\n[pins]\nflashinfer = "latest"\n', "m.toml"), "m.toml")
