"""`TreeFiles`: every file of an audited tree opened by walking from the root's descriptor, links resolved by hand."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from matrix.core.textfiles import READ_FILES, BadPathError, OutsideTreeError, SpecialFileError
from matrix.core.treefiles import TreeFiles

SECRET = "OUTSIDE-TREE-SECRET"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def swap_for_link(folder: Path, outside: Path) -> None:
    shutil.move(str(folder), str(outside.parent / f"moved-{folder.name}"))
    os.symlink(outside, folder)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    outside = write(tmp_path / "outside", {"secret.py": SECRET})
    root = write(tmp_path / "repo", {"tests/test_a.py": "A", "tests/sub/test_b.py": "B"})
    links = {
        "tests/abs_in.py": str(root.resolve() / "tests" / "test_a.py"),
        "tests/rel_in.py": "sub/test_b.py",
        "tests/sub/up.py": "../test_a.py",
        "tests/linked": "sub",
        "tests/abs_out.py": str(outside / "secret.py"),
        "tests/rel_out.py": "../../outside/secret.py",
        "out": str(outside),
        "loop_a": "loop_b",
        "loop_b": "loop_a",
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    os.mkfifo(root / "tests" / "fifo.py")
    return root


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("tests/test_a.py", b"A"),
        ("tests/abs_in.py", b"A"),
        ("tests/rel_in.py", b"B"),
        ("tests/sub/up.py", b"A"),
        ("tests/linked/test_b.py", b"B"),
        ("tests/linked/up.py", b"A"),
        ("tests/abs_out.py", OutsideTreeError),
        ("tests/rel_out.py", OutsideTreeError),
        ("out/secret.py", OutsideTreeError),
        ("../outside/secret.py", OutsideTreeError),
        ("/etc/hostname", OutsideTreeError),
        ("loop_a", OSError),
        ("tests/fifo.py", SpecialFileError),
        ("tests", SpecialFileError),
        ("tests/missing.py", FileNotFoundError),
        ("tests/test_a.py/x", NotADirectoryError),
        ("tests/a\0b.py", BadPathError),
    ],
)
def test_tree_files_follow_links_inside_and_refuse_the_rest(tree: Path, relative: str, expected: bytes | type) -> None:
    with TreeFiles(tree) as files:
        for _ in range(2):  # the second time through the kept folders
            if isinstance(expected, bytes):
                assert files.read(relative, 100) == expected
            else:
                with pytest.raises(expected) as caught:  # type: ignore[call-overload]
                    files.read(relative, 100)
                assert SECRET not in str(caught.value)


def test_a_kept_folder_moved_out_of_the_tree_is_walked_again(tree: Path) -> None:
    with TreeFiles(tree) as files:
        assert files.read("tests/sub/test_b.py", 100) == b"B"
        swap_for_link(tree / "tests" / "sub", tree.parent / "outside")
        with pytest.raises(OutsideTreeError):
            files.read("tests/sub/test_b.py", 100)


def test_every_file_read_is_noted_by_identity(tree: Path) -> None:
    READ_FILES.clear()
    with TreeFiles(tree) as files:
        files.read("tests/rel_in.py", 100)
    assert READ_FILES.read_as(tree / "tests" / "sub" / "test_b.py") == "tests/rel_in.py"
    assert READ_FILES.read_as(tree / "tests" / "test_a.py") is None


def test_a_deep_path_costs_one_open_per_new_folder(tmp_path: Path) -> None:
    parts = [f"d{i}" for i in range(600)]  # deeper than Python's recursion limit in folders
    deep = tmp_path.joinpath(*parts)
    deep.mkdir(parents=True)
    (deep / "test_deep.py").write_text("D", encoding="utf-8")
    with TreeFiles(tmp_path) as files:
        assert files.read("/".join([*parts, "test_deep.py"]), 10) == b"D"
