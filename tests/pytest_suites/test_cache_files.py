"""pytest-audit's cache files: never trusted when damaged, never half-written, bounded, and where the options say.

A cache file that is corrupt, truncated, of another schema, oversized, or sealed over a value of the wrong shape is
read as a miss: the report is the report of a run without a cache, with no traceback, and the run writes the cache
afresh. Concurrent runs on one folder each see whole files. The folder keeps the newest files of each kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from matrix.core.jsonio import canonical, seal_text
from matrix.core.runner_files import load_runners
from matrix.pytest_suites import cache as cache_module
from matrix.pytest_suites.run import AuditInput, run_audit
from tests.pytest_suites.conftest import write_tree
from tests.pytest_suites.test_audit_cache import FILES

ROOT = Path(__file__).resolve().parents[2]


def _report(root: Path, folder: Path | None, installed: frozenset[str] = frozenset()) -> dict[str, Any]:
    return asdict(run_audit(AuditInput(root=root, installed=installed), load_runners(), cache_dir=folder))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write_tree(root, FILES)
    return root


def _entries(folder: Path) -> Path:
    (found,) = list(folder.glob("pytest-audit-*.cache"))
    return found


def _frame(folder: Path) -> Path:
    (found,) = list(folder.glob("pytest-audit-frame-*.json"))
    return found


def _resealed(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Edit the first entry's value and seal it again, as a forger (or another version) would."""
    head, *lines = path.read_text(encoding="ascii").split("\n")
    key, _, text = lines[0].split(" ", 2)
    doc = json.loads(text)
    edit(doc)
    text = canonical(doc)
    run = path.name.removeprefix("pytest-audit-").removesuffix(".cache")
    lines[0] = f"{key} {seal_text(cache_module.SCHEMA, f'{run}:{key}', text)} {text}"
    path.write_text("\n".join([head, *lines]), encoding="ascii")


def _wrong_audit(doc: dict[str, Any]) -> None:
    doc["audit"]["v"]["tests"] = "many"


def _unknown_record(doc: dict[str, Any]) -> None:
    doc["audit"]["r"] = "SomethingElse"


def _wrong_reads(doc: dict[str, Any]) -> None:
    doc["reads"] = [["tests/test_plain.py", 7, None]]


def _undetermined(value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(doc: dict[str, Any]) -> None:
        doc["undet"] = value

    return edit


KIND = ["tests/test_plain.py", "a reason", "guard", None, ["cpu"]]
DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
    "flipped byte": lambda p: p.write_bytes(p.read_bytes().replace(b'"tests"', b'"tesTs"', 1)),
    "another schema": lambda p: p.write_bytes(b"specmatrix.pytest-audit-cache/0" + p.read_bytes()[len(cache_module.SCHEMA) :]),
    "not ascii": lambda p: p.write_bytes(p.read_bytes() + "\u00e9\n".encode()),
    "garbage": lambda p: p.write_bytes(os.urandom(4096)),
    "empty": lambda p: p.write_bytes(b""),
    "a folder": lambda p: (p.unlink(), p.mkdir()),  # type: ignore[func-returns-value]
    "sealed, wrong type": lambda p: _resealed(p, _wrong_audit),
    "sealed, unknown record": lambda p: _resealed(p, _unknown_record),
    "sealed, wrong reads": lambda p: _resealed(p, _wrong_reads),
    "sealed, no undetermined tests": lambda p: _resealed(p, lambda doc: doc.pop("undet")),
    "sealed, undetermined not an object": lambda p: _resealed(p, _undetermined([])),
    "sealed, undetermined of no kind": lambda p: _resealed(p, _undetermined({"k": [], "t": [["t::x", 1, 0]]})),
    "sealed, undetermined of an unknown cause": lambda p: _resealed(
        p, _undetermined({"k": [[*KIND[:2], "whim", *KIND[3:]]], "t": [["t::x", 1, 0]]})
    ),
    "sealed, undetermined line not a number": lambda p: _resealed(p, _undetermined({"k": [KIND], "t": [["t::x", "1", 0]]})),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_entries_file_is_a_miss(repo: Path, tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "cache"
    fresh = _report(repo, None)
    assert _report(repo, folder) == fresh
    DAMAGE[damage](_entries(folder))
    assert _report(repo, folder) == fresh


FRAME_DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:-100]),
    "flipped byte": lambda p: p.write_bytes(p.read_bytes().replace(b"ci.yml", b"cj.yml", 1)),
    "no header": lambda p: p.write_bytes(p.read_bytes().partition(b"\n")[2]),
    "another schema": lambda p: p.write_bytes(p.read_bytes().replace(cache_module.FRAME_SCHEMA.encode(), b"x/0", 1)),
    "garbage": lambda p: p.write_bytes(os.urandom(4096)),
}


@pytest.mark.parametrize("damage", sorted(FRAME_DAMAGE))
def test_a_damaged_frame_is_read_again(repo: Path, tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "cache"
    fresh = _report(repo, None)
    assert _report(repo, folder) == fresh
    FRAME_DAMAGE[damage](_frame(folder))
    assert _report(repo, folder) == fresh


def test_an_oversized_cache_file_is_not_read(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    fresh = _report(repo, folder)
    size = _entries(folder).stat().st_size
    # A forged entry for a test file pointing its audit elsewhere would be believed if the file were read.
    monkeypatch.setattr(cache_module, "MAX_CACHE_BYTES", size - 1)
    _resealed(_entries(folder), _wrong_audit)
    assert _report(repo, folder) == fresh


def test_a_cache_folder_that_cannot_be_written_costs_speed_not_the_audit(repo: Path, tmp_path: Path) -> None:
    # A file where the folder should be: no user can write into it (root included, unlike a read-only folder).
    folder = tmp_path / "cache"
    folder.write_text("not a folder", encoding="utf-8")
    assert _report(repo, folder) == _report(repo, None)
    assert folder.read_text(encoding="utf-8") == "not a folder"


def test_the_folder_keeps_the_newest_files(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "KEEP_FILES", 3)
    folder = tmp_path / "cache"
    for k in range(6):  # each set of installed modules is another key: another frame and other entries
        _report(repo, folder, installed=frozenset({f"module{k}"}))
        assert len(list(folder.glob("pytest-audit-frame-*.json"))) <= 3
        assert len(list(folder.glob("pytest-audit-*.cache"))) <= 3
    assert not list(folder.glob(".*.tmp"))


def test_the_folder_keeps_the_newest_files_within_its_size(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "cache"
    _report(repo, folder)
    one_run = sum(p.stat().st_size for p in folder.glob("pytest-audit-*"))
    monkeypatch.setattr(cache_module, "MAX_FOLDER_BYTES", one_run * 2 + one_run // 2)
    for k in range(4):
        _report(repo, folder, installed=frozenset({f"module{k}"}))
        assert sum(p.stat().st_size for p in folder.glob("pytest-audit-*")) <= one_run * 2 + one_run // 2
    # The last two runs' frames and entries are kept (the newest first), older ones only as far as the bound allows.
    assert len(list(folder.glob("pytest-audit-frame-*.json"))) >= 2 and len(list(folder.glob("pytest-audit-*.cache"))) >= 2


def _cli(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SPECMATRIX_")}
    environment.update(env or {})
    environment["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "matrix", *args], capture_output=True, text=True, env=environment, cwd=cwd, check=False
    )


def test_concurrent_runs_see_whole_files(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    command = [sys.executable, "-m", "matrix", "pytest-audit", str(repo), "--format", "json", "--cache-dir", str(folder)]
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    expected = _cli("pytest-audit", str(repo), "--format", "json", "--no-cache").stdout
    for round_ in range(3):
        if round_:  # an edit between rounds: every run writes
            write_tree(repo, {f"tests/test_round_{round_}.py": "def test_x():\n    pass\n"})
            expected = _cli("pytest-audit", str(repo), "--format", "json", "--no-cache").stdout
        runs = [
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment, cwd=ROOT)
            for _ in range(4)
        ]
        outputs = [run.communicate() for run in runs]
        assert [err for _, err in outputs] == [""] * 4
        assert [out for out, _ in outputs] == [expected] * 4
        assert not list(folder.glob(".*.tmp"))
        assert cache_module.parse_entries(_entries(folder).read_bytes())


def test_the_options_and_the_environment_say_where_the_cache_is(repo: Path, tmp_path: Path) -> None:
    args = ("pytest-audit", str(repo), "--format", "json")
    home = tmp_path / "home"
    fresh = _cli(*args, "--no-cache", env={"HOME": str(home)})
    assert fresh.returncode == 1 and not home.exists()

    given = tmp_path / "given"
    assert _cli(*args, "--cache-dir", str(given), env={"HOME": str(home)}).stdout == fresh.stdout
    assert list(given.glob("pytest-audit-frame-*.json")) and not home.exists()

    from_env = tmp_path / "from-env"
    assert _cli(*args, env={"SPECMATRIX_CACHE_DIR": str(from_env), "HOME": str(home)}).stdout == fresh.stdout
    assert list(from_env.glob("pytest-audit-*.cache"))

    xdg = tmp_path / "xdg"
    assert _cli(*args, env={"XDG_CACHE_HOME": str(xdg), "HOME": str(home)}).stdout == fresh.stdout
    assert list((xdg / "specmatrix").glob("pytest-audit-*.cache"))

    off = _cli(*args, env={"SPECMATRIX_NO_CACHE": "1", "SPECMATRIX_CACHE_DIR": str(tmp_path / "off")})
    assert off.stdout == fresh.stdout and not (tmp_path / "off").exists()

    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.specmatrix]\ncache_dir = ".audit-cache"\n', encoding="utf-8")
    assert _cli(*args, env={"HOME": str(home)}, cwd=project).stdout == fresh.stdout
    assert list((project / ".audit-cache").glob("pytest-audit-*.cache"))


def test_guards_honours_the_same_switch(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    write_tree(suite, {"test_a.py": "def test_a():\n    pass\n"})
    folder = tmp_path / "cache"
    done = _cli("guards", str(suite), "--no-workflows", env={"SPECMATRIX_NO_CACHE": "1", "SPECMATRIX_CACHE_DIR": str(folder)})
    assert done.returncode == 0, done.stderr
    assert not folder.exists()
    _cli("guards", str(suite), "--no-workflows", env={"SPECMATRIX_CACHE_DIR": str(folder)})
    assert list(folder.glob("guards-*.cache"))


def test_a_warm_run_refuses_to_write_over_a_file_it_read_from_the_cache(repo: Path, tmp_path: Path) -> None:
    # The frame is not read again on a warm run, yet the script the workflow runs is still one of its inputs.
    workflow = repo / ".github" / "workflows" / "ci.yml"
    workflow.write_text(
        workflow.read_text(encoding="utf-8").replace("scripts/run_tests.sh", "scripts/run_tests"), encoding="utf-8"
    )
    (repo / "scripts" / "run_tests.sh").rename(repo / "scripts" / "run_tests")
    folder = tmp_path / "cache"
    args = ("pytest-audit", str(repo), "--cache-dir", str(folder))
    assert _cli(*args).returncode in (0, 1)
    assert _cli(*args).returncode in (0, 1) and _entries(folder).exists()
    script = repo / "scripts" / "run_tests"
    refused = _cli(*args, "--output", str(script))
    assert refused.returncode == 2 and "read this file" in refused.stderr, refused.stderr
    assert script.read_text(encoding="utf-8").endswith("pytest tests\n")


def test_undetermined_tests_come_back_as_they_were_stored() -> None:
    from matrix.pytest_suites.undetermined import Cause, UndeterminedTest

    tests = [
        UndeterminedTest(test=f"t.py::test_{i}", path="t.py", line=i, runner="a10g", reason=f"r{i % 3}", cause=Cause.GUARD)
        for i in range(7)
    ]
    tests += [
        UndeterminedTest(
            test="t.py::odd", path="base.py", line=3, runner=None, reason="r0", cause=Cause.UNREAD, runners=("a", "b")
        )
    ]
    stored = json.loads(canonical(cache_module.compact_undetermined(tests)))
    assert len(stored["k"]) == 4  # three reasons on a10g, and one of another path, cause and runners
    back = cache_module.expand_undetermined(stored)
    assert back == tuple(tests)
    assert [type(t) for t in back] == [UndeterminedTest] * len(tests)
    assert [hash(t) for t in back] == [hash(t) for t in tests]
