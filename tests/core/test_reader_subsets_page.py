"""docs/reader-subsets.md is written from the readers' declared subsets by ci/subset_tables.py: a page that no longer
matches the tables, a subset module the page leaves out, or a check that names no test file fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.schedule.containers import subset as containers
from matrix.schedule.make import subset as make
from matrix.schedule.shell import subset as shell
from tests.ci_scripts import ci_script

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "reader-subsets.md"


@pytest.fixture(scope="module")
def tables():
    return ci_script("subset_tables")


def test_the_page_is_what_the_subset_tables_give(tables):
    assert PAGE.read_text(encoding="utf-8") == tables.render(), "run: python ci/subset_tables.py"
    assert tables.main(["--check"]) == 0


def test_a_construct_added_to_a_table_makes_the_page_stale(tables, monkeypatch, capsys):
    page = PAGE.read_text(encoding="utf-8")
    monkeypatch.setitem(shell.BUILTINS, "zpty", shell.Builtin(effect=shell.Effect.OUTSIDE, reading="a pseudo-terminal"))
    assert tables.render() != page and "`zpty`" in tables.render()
    assert tables.main(["--check"]) == 1
    assert "run python ci/subset_tables.py" in capsys.readouterr().err


@pytest.mark.parametrize(
    "plant",
    [
        lambda m: m.setattr(containers, "OFFICIAL_IMAGES", containers.OFFICIAL_IMAGES | {"haskell"}),
        lambda m: m.setattr(make, "CONSTRUCTS", make.CONSTRUCTS[:-1]),
    ],
    ids=["an official image added", "a make construct dropped"],
)
def test_every_readers_table_is_drawn_from_its_module(tables, monkeypatch, plant):
    before = tables.render()
    plant(monkeypatch)
    assert tables.render() != before


def test_every_subset_module_of_the_schedule_has_a_section(tables):
    on_page = {Path(r.module.__file__).resolve() for r in tables.READERS}
    assert on_page == {p.resolve() for p in (ROOT / "matrix" / "schedule").glob("*/subset.py")}


def test_every_check_names_a_test_file_that_runs_its_tool(tables):
    for reader in tables.READERS:
        assert reader.checks, reader.title
        for check in reader.checks:
            text = (ROOT / check.path).read_text(encoding="utf-8")
            assert not check.tool or check.tool.split()[-1] in text, (reader.title, check.path)


def test_aliases_join_the_row_they_name(tables):
    rows = tables.rows_of([("a", "reads a"), ("b", "as a"), ("c", "as nothing here")])
    assert rows == [("`a`, `b`", "reads a"), ("`c`", "as nothing here")]
