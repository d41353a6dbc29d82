"""The baseline file format shared by the static guard audit and the runtime ledger."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from matrix.core.errors import ConfigError
from matrix.registered_suite.gate import BaselineEntry, baseline_document, fingerprint, parse_baseline


def test_round_trip_is_stable() -> None:
    entry = BaselineEntry(
        path="a/test_x.py",
        test="a/test_x.py::T",
        kind="silent-skip",
        runner="4-gpu-b200",
        reason="known",
        expires=dt.date(2027, 1, 31),
    )
    text = json.dumps(baseline_document([entry]))
    again = parse_baseline(text, "b.json")
    assert again.entries == (entry,)
    assert json.dumps(baseline_document(again.entries)) == text


IDENTITY = {
    "path": "test/registered/attention/test_x.py",
    "test": "test/registered/attention/test_x.py::TestX::test_a",
    "kind": "silent-skip",
    "runner": "4-gpu-b200",
}


def _fingerprint(identity: dict[str, str]) -> str:
    return fingerprint(identity["path"], identity["test"], identity["kind"], identity["runner"])


@pytest.mark.parametrize("part", sorted(IDENTITY))
def test_every_part_of_a_findings_identity_changes_its_fingerprint(part: str) -> None:
    assert _fingerprint(IDENTITY) != _fingerprint(IDENTITY | {part: IDENTITY[part] + "2"})


def test_the_parts_cannot_run_into_each_other() -> None:
    """`a` + `bc` and `ab` + `c` are different findings: the parts are kept apart, not concatenated."""
    assert fingerprint("ab", "c", "k", "r") != fingerprint("a", "bc", "k", "r")


def test_a_fingerprint_written_by_an_earlier_release_still_matches() -> None:
    """Baselines committed to other repositories hold these values: the hash of one known identity is pinned."""
    assert _fingerprint(IDENTITY) == "a36136cdc5d5dae8"
    assert BaselineEntry(**IDENTITY).fingerprint == "a36136cdc5d5dae8"


@pytest.mark.parametrize(
    "text",
    [
        "[",
        "[]",
        '{"schema": "x", "entries": []}',
        '{"schema": "specmatrix.guards-baseline/1", "entries": 5}',
        '{"schema": "specmatrix.guards-baseline/1", "entries": [{"path": "a"}]}',
        '{"schema": "specmatrix.guards-baseline/1", "entries": [{"path": "a", "test": "t", "kind": "k", "runner": "r", "expires": "soon"}]}',
        '{"schema": "specmatrix.guards-baseline/1", "entries": [{"path": "a", "test": "t", "kind": "k", "runner": "r", "fingerprint": "0"}]}',
        "[" * 100_000,
    ],
)
def test_bad_baselines_are_one_config_error(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_baseline(text, "b.json")
