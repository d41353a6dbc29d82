"""What a computation read, recorded whatever function it read with, and whether it still reads the same."""

from __future__ import annotations

import configparser
import glob
import os
import time
import tomllib
from pathlib import Path

import pytest

from matrix.pytest_suites import recorded


def _tree(root: Path) -> Path:
    (root / "ci").mkdir(parents=True)
    (root / "ci" / "run.sh").write_text("pytest tests\n", encoding="utf-8")
    (root / "tox.ini").write_text("[tox]\n", encoding="utf-8")
    (root / "pyproject.toml").write_text("[tool.x]\n", encoding="utf-8")
    (root / "tests").mkdir()
    return root


def _record(root: Path) -> tuple[dict[str, bool], tuple[recorded.Seen, ...]]:
    with recorded.recording() as recorder:
        (root / "ci" / "run.sh").read_text(encoding="utf-8")  # pathlib
        with (root / "pyproject.toml").open("rb") as handle:  # io.open, through tomllib
            tomllib.load(handle)
        configparser.ConfigParser().read(root / "tox.ini")  # builtins.open
        glob.glob("*.yml", root_dir=root / "ci")  # os.scandir
        sorted(os.listdir(root / "tests"))
        (root / "scripts" / "ci.sh").is_file()  # a probe of a path that is not there
        os.path.exists(root / "Makefile")
    seen = recorded.manifest(recorder.touched.items(), since_ns=recorder.started_ns)
    assert seen is not None
    return recorder.touched, seen


def test_every_way_of_reading_is_recorded(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    touched, _ = _record(root)
    expected = {
        "ci/run.sh": False,
        "pyproject.toml": False,
        "tox.ini": False,
        "ci": True,
        "tests": True,
        "scripts/ci.sh": False,
        "Makefile": False,
    }
    assert {k: touched[str(root / k)] for k in expected} == expected


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: (r / "ci" / "run.sh").write_text("pytest other\n", encoding="utf-8"),
        lambda r: (r / "tox.ini").unlink(),
        lambda r: (r / "ci" / "new.yml").write_text("x: 1\n", encoding="utf-8"),
        lambda r: (r / "tests" / "test_new.py").write_text("", encoding="utf-8"),
        lambda r: ((r / "scripts").mkdir(), (r / "scripts" / "ci.sh").write_text("", encoding="utf-8")),
        lambda r: (r / "Makefile").mkdir(),
        lambda r: ((r / "ci" / "run.sh").unlink(), (r / "ci" / "run.sh").symlink_to(r / "tox.ini")),
    ],
    ids=[
        "content",
        "removed",
        "listed folder gains a file",
        "listing",
        "probed path created",
        "probed path a folder",
        "relinked",
    ],
)
def test_any_change_to_what_was_read_is_seen(tmp_path: Path, edit: object) -> None:
    root = _tree(tmp_path / "repo")
    _, seen = _record(root)
    assert recorded.unchanged(seen)
    edit(root)  # type: ignore[operator]
    assert not recorded.unchanged(seen)


def test_a_settled_file_is_trusted_by_its_status_and_a_recent_one_is_read_again(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    old = time.time_ns() - 10 * recorded.RACY_NS
    os.utime(root / "tox.ini", ns=(old, old))
    _, seen = _record(root)
    by_path = {Path(s.path).name: s for s in seen}
    # ctime is now for every file (written just now): none is trusted by status yet, so each is read again.
    assert by_path["tox.ini"].status is None and by_path["run.sh"].status is None
    settled = recorded.Seen(path=str(root / "tox.ini"), listed=False, fingerprint="f:not-its-content", status=None)
    assert not recorded.unchanged([settled])
    status = recorded.current_status(str(root / "tox.ini"))
    assert recorded.unchanged([recorded.Seen(path=settled.path, listed=False, fingerprint="f:not-its-content", status=status)])


def test_a_file_changed_while_it_was_read_is_not_kept(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    with recorded.recording() as recorder:
        (root / "ci" / "run.sh").read_text(encoding="utf-8")
    (root / "ci" / "run.sh").write_text("changed after the read\n", encoding="utf-8")
    assert recorded.manifest(recorder.touched.items(), since_ns=recorder.started_ns) is None


def test_nothing_is_recorded_outside_a_recording_and_the_calls_are_restored(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    stat, lstat = os.stat, os.lstat
    with recorded.recording() as recorder:
        pass
    (root / "tox.ini").read_text(encoding="utf-8")
    assert recorder.touched == {}
    assert (os.stat, os.lstat) == (stat, lstat)


def test_imports_and_this_package_are_not_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lazily_imported_module.py").write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with recorded.recording() as recorder:
        import lazily_imported_module  # noqa: F401  (imported on first use, as the readers import theirs)

        Path(recorded.__file__).read_text(encoding="utf-8")
    assert recorder.touched == {}


def test_a_file_read_through_the_trees_descriptor_is_recorded_under_its_path(tmp_path: Path) -> None:
    # The tree reader opens each component relative to the folder before it (`os.open(name, dir_fd=...)`): the
    # open event names only the component, the recording names the whole path.
    from matrix.core.treefiles import TreeFiles

    root = _tree(tmp_path / "repo")
    with recorded.recording() as recorder, TreeFiles(root) as files:
        files.read("ci/run.sh", 1024)
        with pytest.raises(FileNotFoundError):
            files.read("ci/absent.sh", 1024)
    assert str(root / "ci" / "run.sh") in recorder.opened
    assert str(root / "ci" / "absent.sh") in recorder.touched
    assert not any(p.endswith("/run.sh") and not p.startswith(str(root)) for p in recorder.touched)
    seen = recorded.manifest(recorder.touched.items(), since_ns=recorder.started_ns, opened=recorder.opened)
    assert seen is not None and recorded.unchanged(seen)
    (root / "ci" / "run.sh").write_text("pytest elsewhere\n", encoding="utf-8")
    assert not recorded.unchanged(seen)


def test_a_file_only_probed_is_recorded_by_its_kind(tmp_path: Path) -> None:
    root = _tree(tmp_path / "repo")
    with recorded.recording() as recorder:
        (root / "tox.ini").is_file()
        (root / "ci" / "run.sh").read_text(encoding="utf-8")
    seen = recorded.manifest(recorder.touched.items(), since_ns=recorder.started_ns, opened=recorder.opened)
    assert seen is not None
    (root / "tox.ini").write_text("[tox]\nenvlist = py311\n", encoding="utf-8")
    assert recorded.unchanged(seen), "the probe asked whether it is a file: it still is"
    (root / "tox.ini").unlink()
    (root / "tox.ini").mkdir()
    assert not recorded.unchanged(seen)
