"""A finding's severity is its kind's (matrix/core/kinds.py): no call site decides it a second time."""

from __future__ import annotations

import pytest

from matrix.core.errors import ConfigError
from matrix.core.finding import Severity, Tool, spec_of
from matrix.core.report import FindingKind, audit_finding


@pytest.mark.parametrize("kind", list(FindingKind))
def test_skip_audit_and_coverage_findings_take_their_kinds_severity(kind: FindingKind) -> None:
    found = audit_finding(kind=kind, subject="t", message="m")
    assert found.severity is spec_of(found.tool, kind.value).severity


def test_a_call_site_that_decides_another_severity_is_refused() -> None:
    assert spec_of(Tool.AUDIT, "unused-allow").severity is Severity.WARNING
    with pytest.raises(ConfigError, match="audit/unused-allow is warning, not error"):
        audit_finding(kind=FindingKind.UNUSED_ALLOW, severity=Severity.ERROR, subject="t", message="m")
