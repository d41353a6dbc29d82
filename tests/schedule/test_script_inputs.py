"""Scripts a step runs that cannot be read are told apart (over the size limit, a link out of the tree, missing),
a byte that is not UTF-8 in a comment does not hide a script, and the scripts read are among the files read.
Every fixture is written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from matrix.core.loader import load_runners
from matrix.schedule.model import PytestSelection, Schedule

from .test_followed_files import repo, schedule_of

RUNNERS = load_runners()


def selected(schedule: Schedule) -> list[tuple[str, ...]]:
    return [e.selection.paths for e in schedule.entries if isinstance(e.selection, PytestSelection)]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"pytest tests/big\n" + b"# filler\n" * 600_000, "the script is over the size limit"),
        (None, "the script is not in the tree"),
    ],
)
def test_a_script_that_is_not_read_says_why(tmp_path: Path, content: bytes | None, reason: str) -> None:
    files: dict[str, str | bytes] = {} if content is None else {"ci/run.sh": content}
    schedule = schedule_of(repo(tmp_path, "bash ci/run.sh", files))
    assert [u.reason.split(" (")[0] for u in schedule.unread] == [reason]


def test_a_latin1_byte_in_a_comment_does_not_hide_the_script(tmp_path: Path) -> None:
    schedule = schedule_of(repo(tmp_path, "bash ci/run.sh", {"ci/run.sh": b"# caf\xe9 au lait\npytest tests/x\n"}))
    assert selected(schedule) == [("tests/x",)]
    assert "ci/run.sh" in schedule.sources


def test_a_script_linked_from_outside_the_tree_is_refused_by_its_path(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.sh"
    outside.write_text("pytest tests/secret_path\n", encoding="utf-8")
    root = repo(tmp_path, "bash ci/run.sh", {})
    (root / "ci").mkdir()
    (root / "ci" / "run.sh").symlink_to(outside)
    schedule = schedule_of(root)
    assert schedule.entries == ()
    assert [u.reason for u in schedule.unread] == ["the script is a link to a file outside the repository"]
