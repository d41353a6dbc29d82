"""The baseline file format shared by the static guard audit and the runtime ledger."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from matrix.core.errors import ConfigError
from matrix.guards.gate import BaselineEntry, baseline_document, fingerprint, parse_baseline


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


def test_fingerprint_ignores_nothing_but_lines() -> None:
    assert fingerprint("a", "t", "k", "r") != fingerprint("a", "t", "k", "r2")
    assert fingerprint("a", "t", "k", "r") == fingerprint("a", "t", "k", "r")


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
