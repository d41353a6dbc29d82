"""What pytest-audit reads once and reuses gives the answers of reading again: a command line's parse (cached by
its words, and for a line of paths only built from the parse of the empty line), a file's resolved path (its
folder walked once) and its text (kept by the loader)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from matrix.core.textfiles import OutsideTreeError, read_limited, resolve_in_tree
from matrix.core.treefiles import TreeFiles
from matrix.pytest_suites import invocation
from matrix.pytest_suites.run import SourceLoader

COMMAND_LINES = [
    ["tests"],
    ["tests/unit/test_a.py::TestX::test_y[case-1]", "tests/b", "a b", "ünï"],
    ["1", "a=b", "x,y"],
    ["-x", "tests"],
    ["tests", "-k", "not slow", "-m", "gpu"],
    ["--ignore=tests/b", "tests", "--deselect", "tests/a.py::t"],
    ["-n", "4", "tests"],
    ["tests", "-"],
    ["tests", "--", "-x"],
]


@pytest.mark.parametrize("words", COMMAND_LINES, ids=" ".join)
def test_a_cached_parse_is_pytests_parse(words: list[str]) -> None:
    fresh = invocation._parse_words(list(words))
    first = invocation._parse(list(words))
    again = invocation._parse(list(words))
    assert vars(first[0]) == vars(fresh[0]) and first[1] == fresh[1]
    assert vars(again[0]) == vars(fresh[0]) and again[1] == fresh[1]


def test_a_caller_changing_its_parse_leaves_the_cache_alone() -> None:
    namespace, _ = invocation._parse(["tests/x"])
    namespace.file_or_dir = ["elsewhere"]
    namespace.keyword = "changed"
    assert invocation._parse(["tests/x"])[0].file_or_dir == ["tests/x"]
    assert not invocation._parse(["tests/x"])[0].keyword


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "tests" / "sub").mkdir(parents=True)
    (root / "tests" / "test_a.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "test_o.py").write_text("y = 2\n")
    os.symlink(outside, root / "tests" / "linked_out")
    os.symlink(root / "tests" / "sub", root / "tests" / "linked_in")
    os.symlink(outside / "test_o.py", root / "tests" / "test_out.py")
    os.symlink(root / "tests" / "test_a.py", root / "tests" / "sub" / "test_in.py")
    os.symlink("../test_a.py", root / "tests" / "sub" / "test_rel.py")
    return root


PATHS = [
    "tests/test_a.py",
    "tests/missing.py",
    "missing/deeper/test_x.py",
    "tests/linked_out/test_o.py",
    "tests/linked_out/missing.py",
    "tests/linked_in/test_in.py",
    "tests/linked_in/test_rel.py",
    "tests/test_out.py",
    "tests/sub/test_in.py",
    "tests/sub/test_rel.py",
    "tests/../tests/test_a.py",
    "/etc/hostname",
    "tests/",
    "tests/.",
    "test_top.py",
]


def _answer(read: object, relative: str) -> bytes | str:
    try:
        return read(relative)  # type: ignore[operator, no-any-return]
    except OutsideTreeError as exc:
        return f"refused: {exc}"
    except OSError as exc:
        return f"not read: {type(exc).__name__}"


@pytest.mark.parametrize("relative", PATHS)
def test_a_folder_walked_once_reads_as_the_whole_path_resolved(tmp_path: Path, relative: str) -> None:
    root = _tree(tmp_path)
    files = TreeFiles(root)
    for _ in range(2):  # the second time from the kept folder
        expected = _answer(lambda r: read_limited(resolve_in_tree(root, r), 100), relative)
        got = _answer(lambda r: files.read(r, 100), relative)
        if isinstance(expected, str) and expected.startswith("refused"):
            assert isinstance(got, str) and got.startswith("refused")
        else:
            assert got == expected


def test_the_loader_reads_a_file_once_and_keeps_why_one_was_not_read(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    load = SourceLoader(root)
    assert load("tests/test_a.py") == "x = 1\n"
    (root / "tests" / "test_a.py").write_text("x = 3\n")
    assert load("tests/test_a.py") == "x = 1\n"  # the text it audits is the one it read first
    assert load("tests/test_out.py") is None
    assert load("tests/test_out.py") is None
    assert load.problem("tests/test_out.py") == "a symlink to a file outside the audited tree; not read"
    assert load("tests/missing.py") is None and load.problem("tests/missing.py") is None
