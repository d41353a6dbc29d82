"""Reads from an audited tree resolve symlinks first: a target outside the root is refused, named by its path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from matrix.core.textfiles import OutsideTreeError
from matrix.core.treefiles import read_tree_bytes
from matrix.pytest_suites.run import SourceLoader
from matrix.schedule.load import TreeLoader


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "run.sh").write_text("pytest tests/secret_path\n", encoding="utf-8")
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "own.sh").write_text("pytest tests\n", encoding="utf-8")
    os.symlink(outside / "run.sh", root / "scripts" / "run.sh")
    os.symlink(root / "scripts" / "own.sh", root / "scripts" / "alias.sh")
    os.symlink(outside, root / "linked")
    return root


@pytest.mark.parametrize("relative", ["scripts/run.sh", "linked/run.sh", "../outside/run.sh", "/etc/hostname"])
def test_a_target_outside_the_root_is_refused(tree: Path, relative: str) -> None:
    with pytest.raises(OutsideTreeError) as caught:
        read_tree_bytes(tree, relative, 1024)
    assert "secret_path" not in str(caught.value)
    assert TreeLoader(tree)(relative) is None
    loader = SourceLoader(tree)
    assert loader(relative) is None


def test_a_symlink_inside_the_root_is_followed(tree: Path) -> None:
    assert TreeLoader(tree)("scripts/alias.sh") == "pytest tests\n"
    assert read_tree_bytes(tree, "scripts/own.sh", 1024) == b"pytest tests\n"


def test_the_source_loader_names_why_it_refused(tree: Path) -> None:
    loader = SourceLoader(tree)
    assert loader("scripts/run.sh") is None
    assert loader.problem("scripts/run.sh") == "a symlink to a file outside the audited tree; not read"
