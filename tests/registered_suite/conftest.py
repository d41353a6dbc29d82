"""The registered-suite audit's tests read the synthetic suite kept with the guard engine's tests."""

from __future__ import annotations

from tests.guards.conftest import FIXTURE_SUITE, facts_for, private_cache, runners, shared_suite, suite_copy

__all__ = ["FIXTURE_SUITE", "facts_for", "private_cache", "runners", "shared_suite", "suite_copy"]
