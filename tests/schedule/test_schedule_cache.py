"""The schedule cache: the seal is checked on the body's text as read, and a schedule that came through it is
fingerprinted by the digest of its CI files (the guard results cache keys on that instead of a repr)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from matrix.core.loader import load_runners
from matrix.guards.audit import AuditSettings
from matrix.guards.tree import settings_key
from matrix.schedule.cache import fingerprint
from matrix.schedule.load import load_schedule

RUNNERS = load_runners()
WORKFLOW = (
    "on: push\njobs:\n  j:\n    runs-on: 1-gpu-h100\n    steps:\n      - run: python3 run_suite.py --hw cuda --suite {suite}\n"
)


def repo(tmp_path: Path, suite: str) -> Path:
    folder = tmp_path / "repo" / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "w.yml").write_text(WORKFLOW.format(suite=suite), encoding="utf-8")
    return tmp_path / "repo"


def key(schedule: object) -> str | None:
    return settings_key(AuditSettings(runners=RUNNERS, schedule=schedule))  # type: ignore[arg-type]


def test_a_cached_schedule_is_fingerprinted_by_its_ci_files(tmp_path):
    cache = tmp_path / "cache"
    first = load_schedule(repo(tmp_path, "stage-a"), RUNNERS, cache_dir=cache)
    (stored,) = cache.glob("schedule-*.json")
    assert fingerprint(first) == stored.name.removeprefix("schedule-").removesuffix(".json")
    again = load_schedule(repo(tmp_path, "stage-a"), RUNNERS, cache_dir=cache)  # from the file this time
    assert again == first and fingerprint(again) == fingerprint(first) and key(again) == key(first)


def test_other_ci_files_give_another_guard_cache_key(tmp_path):
    cache = tmp_path / "cache"
    a = load_schedule(repo(tmp_path, "stage-a"), RUNNERS, cache_dir=cache)
    b = load_schedule(repo(tmp_path, "stage-b"), RUNNERS, cache_dir=cache)
    assert fingerprint(a) != fingerprint(b) and key(a) != key(b)


def test_a_schedule_made_otherwise_is_keyed_by_its_content(tmp_path):
    uncached = load_schedule(repo(tmp_path, "stage-a"), RUNNERS)
    cached = load_schedule(repo(tmp_path, "stage-a"), RUNNERS, cache_dir=tmp_path / "cache")
    derived = dataclasses.replace(cached, entries=cached.entries[:0])
    assert fingerprint(uncached) is None and fingerprint(derived) is None
    assert key(uncached) == key(dataclasses.replace(uncached)) and key(derived) != key(uncached)
    assert key(None) != key(uncached)


def test_a_body_edited_under_its_header_is_a_miss(tmp_path):
    cache = tmp_path / "cache"
    first = load_schedule(repo(tmp_path, "stage-a"), RUNNERS, cache_dir=cache)
    (stored,) = cache.glob("schedule-*.json")
    header, body = stored.read_text(encoding="utf-8").split("\n", 1)
    assert header.startswith('{"schema":"specmatrix.schedule-cache/4"') and "\n" not in body
    stored.write_text(header + "\n" + body.replace("stage-a", "stage-z"), encoding="utf-8")
    assert load_schedule(repo(tmp_path, "stage-a"), RUNNERS, cache_dir=cache) == first
    stored.write_text(body, encoding="utf-8")  # no header line at all
    assert load_schedule(repo(tmp_path, "stage-a"), RUNNERS, cache_dir=cache) == first
