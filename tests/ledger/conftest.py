from __future__ import annotations

# The fixture suite and its fixes are run as scripts by the tests, never imported or collected by pytest.
collect_ignore = ["fixture_suite", "fixture_fixes"]
