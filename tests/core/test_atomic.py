"""The one writer: unique temp names, no following of planted links, special files refused, readers never see half a file."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest

from matrix.core.atomic import append_text, save_figure, write_bytes_atomic, write_text_atomic
from matrix.core.errors import OutputError


def test_a_symlink_planted_at_the_old_temp_name_is_not_followed(tmp_path):
    """Writers once used the fixed name PATH.tmp: a link planted there made the report overwrite its target."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    report = tmp_path / "r.json"
    (tmp_path / "r.json.tmp").symlink_to(victim)
    write_text_atomic(report, '{"ok": true}\n')
    assert victim.read_text(encoding="utf-8") == "precious"
    assert json.loads(report.read_text(encoding="utf-8")) == {"ok": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.json.tmp", "victim.txt"]


def test_a_symlink_at_the_target_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious", encoding="utf-8")
    report = tmp_path / "r.json"
    report.symlink_to(victim)
    write_text_atomic(report, "new\n")
    assert victim.read_text(encoding="utf-8") == "precious"
    assert not report.is_symlink() and report.read_text(encoding="utf-8") == "new\n"


@pytest.mark.parametrize("kind", ["fifo", "directory", "devnull"])
def test_special_files_are_refused(tmp_path, kind):
    if kind == "devnull":
        target = Path("/dev/null")
    else:
        target = tmp_path / "special"
        os.mkfifo(target) if kind == "fifo" else target.mkdir()
    with pytest.raises(OutputError, match="not a regular file; refusing to replace it"):
        write_text_atomic(target, "x")
    if kind == "fifo":
        assert target.is_fifo()
    elif kind == "directory":
        assert target.is_dir()
    else:
        assert target.is_char_device()
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")] if kind != "devnull" else True


def test_an_unwritable_folder_is_one_error_and_no_temp_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(OutputError, match="cannot write"):
        write_bytes_atomic(blocker / "r.json", b"{}")


def test_text_that_utf8_cannot_carry_is_replaced_not_raised(tmp_path):
    path = tmp_path / "r.md"
    write_text_atomic(path, "skip: bad \udcff\n")
    assert path.read_text(encoding="utf-8") == "skip: bad ?\n"


def _doc(writer: int, round_: int) -> str:
    return json.dumps({"writer": writer, "round": round_, "pad": "x" * 50_000}) + "\n"


def _write_many(path: str, writer: int, rounds: int) -> None:
    for round_ in range(rounds):
        write_text_atomic(Path(path), _doc(writer, round_))


def _read_until(path: Path, stop: threading.Event, seen: list[int]) -> None:
    while True:
        done = stop.is_set()  # one more read after the writers finished, so the reader always reads
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        seen.append(json.loads(text)["writer"])  # raises on a half-written file
        if done:
            return


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_concurrent_writers_never_show_a_reader_invalid_json(tmp_path, mode):
    """Two writers sharing PATH.tmp once failed with FileNotFoundError and a reader saw invalid JSON."""
    path = tmp_path / "r.json"
    stop = threading.Event()
    seen: list[int] = []
    reader = threading.Thread(target=_read_until, args=(path, stop, seen))
    if mode == "threads":
        writers = [threading.Thread(target=_write_many, args=(str(path), w, 40)) for w in range(4)]
    else:
        ctx = multiprocessing.get_context("fork")
        writers = [ctx.Process(target=_write_many, args=(str(path), w, 40)) for w in range(3)]  # type: ignore[misc]
    for w in writers:  # processes fork before the reader thread exists
        w.start()
    reader.start()
    try:
        for w in writers:
            w.join()
    finally:
        stop.set()
        reader.join()
    if mode == "processes":
        assert all(w.exitcode == 0 for w in writers)  # type: ignore[attr-defined]
    assert json.loads(path.read_text(encoding="utf-8"))["round"] == 39
    assert seen, "the reader never saw the file"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left behind


def test_figures_go_through_the_writer(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    target = tmp_path / "plot.png"
    (tmp_path / "plot.png.tmp").symlink_to(tmp_path / "victim")
    save_figure(fig, target, dpi=50)
    plt.close(fig)
    assert target.read_bytes().startswith(b"\x89PNG")
    assert not (tmp_path / "victim").exists()


def test_append_keeps_what_the_file_held_and_creates_its_folder(tmp_path):
    summary = tmp_path / "step" / "summary.md"
    append_text(summary, "## first\n")
    append_text(summary, "## second \ud800\n")
    assert summary.read_text(encoding="utf-8") == "## first\n## second ?\n"  # as write_text_atomic encodes it


def test_append_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match=r"cannot append|not a regular file"):
        append_text(fifo, "x")
