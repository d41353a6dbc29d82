"""docs/architecture.md's module tables are generated from the code: a table that no longer matches fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ci_scripts import ci_script

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def tables():
    return ci_script("module_tables")


def test_every_module_table_matches_the_code(tables):
    text = DOC.read_text(encoding="utf-8")
    found = {m.group("package") or m.group("imports") for m in tables.SECTION.finditer(text)}
    assert found >= {"matrix.guards", "matrix.registered_suite", "matrix.cli", "matrix.core", "feature imports"}
    assert tables.drifted(text) == [], "run: python ci/module_tables.py"


def test_a_stale_line_count_or_a_missing_module_is_drift(tables):
    text = DOC.read_text(encoding="utf-8")
    stale = re.sub(r"(\| `gate\.py` \| )(\d+)", lambda m: m.group(1) + str(int(m.group(2)) + 1), text, count=1)
    assert tables.drifted(stale) == ["matrix.registered_suite"]
    missing = re.sub(r"\| `tables\.py` \|[^\n]*\n", "", text, count=1)
    assert tables.drifted(missing) == ["matrix.cli"]
    assert tables.regenerate(missing) == text


def test_the_guards_tables_follow_their_import_contracts(tables):
    engine = re.findall(r"^\| `(\w+)\.py`", tables.module_table("matrix.guards"), re.M)
    assert engine[:2] == ["evaluate", "finder"] and engine[-2:] == ["model", "__init__"]
    audit = re.findall(r"^\| `(\w+)\.py`", tables.module_table("matrix.registered_suite"), re.M)
    # The registered-suite contract ends with "scripted | gated" (either order within it), then "exits".
    assert audit[:2] == ["tree", "gate"] and set(audit[-4:-2]) == {"scripted", "gated"} and audit[-2:] == ["exits", "__init__"]


def test_an_import_between_features_the_table_does_not_describe_is_drift(tables, monkeypatch):
    text = DOC.read_text(encoding="utf-8")
    assert tables.UNDESCRIBED not in text
    monkeypatch.delitem(tables.WHAT_FOR, ("register", "shard"))
    assert tables.drifted(text) == ["feature imports"]
    assert tables.UNDESCRIBED in tables.regenerate(text)
