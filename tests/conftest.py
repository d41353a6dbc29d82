"""Fixtures shared by every test package."""

from __future__ import annotations

import gc
import os
from typing import Any

import pytest
from hypothesis import settings

# The fuzz tests (tests/ci/test_fuzz_*.py) read their example count from the loaded profile: "ci" (the default) draws
# 20 per property, half of what they drew before, for about 5 s less CPU per run (ci/bench_tests.py); hazards a
# fuzz run once found are pinned with @example, so they run whatever the count. "deep" is a longer hunt on demand:
# `pytest --hypothesis-profile=deep tests/ci/test_fuzz_readers.py tests/ci/test_fuzz_entries.py`.
settings.register_profile("ci", max_examples=20)
settings.register_profile("deep", max_examples=300)
settings.load_profile("ci")


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytest's `pytester`, with hypothesis's pytest plugin and the cache provider kept out of the nested runs.

    The hypothesis plugin imports all of hypothesis when it loads (about 0.1 s of CPU per process); the nested runs
    never use it, and each `-n 2` run would pay it in its controller and in both workers. No nested run uses the
    cache (--lf, --sw), which writes a `.pytest_cache` folder of six files per run (about 10 ms each).
    """
    original = pytester.runpytest

    def runpytest(*args: Any, **kwargs: Any) -> pytest.RunResult:
        return original("-p", "no:hypothesispytest", "-p", "no:cacheprovider", *args, **kwargs)

    pytester.runpytest = runpytest  # type: ignore[method-assign]
    return pytester


@pytest.fixture(scope="session", autouse=True)
def _no_hypothesis_plugin_in_child_pytest() -> None:
    """The same for pytest processes the tests start themselves (generated modules, ledger children, mutations).

    Set once the session runs, so it reaches only the children; pytester clears PYTEST_ADDOPTS for its own runs.
    """
    current = os.environ.get("PYTEST_ADDOPTS", "")
    if "no:hypothesispytest" not in current:
        os.environ["PYTEST_ADDOPTS"] = f"{current} -p no:hypothesispytest".strip()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Less time in the cyclic garbage collector for the rest of the run (measured: about 3 s of a 55 s serial run).

    The objects that exist now (every test module, the matrix, 1,700 collected items) live until the end: frozen,
    the collector's full passes no longer walk them. The young-generation threshold goes from 700 to 10,000
    allocations: the tests allocate heavily (TOML and JSON readers, hypothesis) and most of it dies young, so the
    collector runs a tenth as often. Only this pytest process is tuned, never a process a test starts.
    """
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
