"""`read_limited` reads a regular file whole up to its limit, plus one byte to show the file is over it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from matrix.core.textfiles import SpecialFileError, read_limited

LIMIT = 100_000  # over the 65,536-byte piece, so a file past it is read in several pieces


@pytest.mark.parametrize("size", [0, 1, 65_535, 65_536, 65_537, LIMIT - 1, LIMIT, LIMIT + 1, 3 * LIMIT])
def test_a_file_is_read_whole_up_to_one_byte_past_the_limit(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert read_limited(path, LIMIT) == data[: LIMIT + 1]


def test_a_file_longer_than_its_stat_size_is_read_to_its_end() -> None:
    """Files under /proc say size 0 and hold text: the size is only a hint for the first read."""
    status = Path("/proc/self/status")
    if not status.exists():
        pytest.skip("needs Linux /proc")
    assert os.stat(status).st_size == 0
    text = read_limited(status, LIMIT)
    assert text.startswith(b"Name:") and len(text) > 100


def test_a_folder_or_a_fifo_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecialFileError):
        read_limited(tmp_path, LIMIT)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SpecialFileError):
        read_limited(fifo, LIMIT)


def test_short_reads_are_read_on_until_the_end_or_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """os.read may return fewer bytes than asked: the pieces are joined, and the read stops one byte past the limit."""
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, 1_000)))  # 1,000 divides LIMIT: the last piece ends on it
    for size in (0, 999, 1_000, 5_000, LIMIT, LIMIT + 1, 2 * LIMIT):
        data = os.urandom(size)
        path = tmp_path / f"f{size}.bin"
        path.write_bytes(data)
        assert read_limited(path, LIMIT) == data[: LIMIT + 1]
