"""A finding's severity is its kind's (matrix/core/kinds.py): no call site decides it a second time."""

from __future__ import annotations

from dataclasses import fields

import pytest

from matrix.core.errors import ConfigError
from matrix.core.finding import Finding, Severity, Tool, spec_of
from matrix.core.report import FindingKind, audit_finding, stored_severity


@pytest.mark.parametrize("kind", list(FindingKind))
def test_skip_audit_and_coverage_findings_take_their_kinds_severity(kind: FindingKind) -> None:
    found = audit_finding(kind=kind, subject="t", message="m")
    assert found.severity is spec_of(found.tool, kind.value).severity


def test_a_call_site_cannot_decide_another_severity() -> None:
    # Severity is no field of the record: every finding reads it from its kind's `KindSpec`.
    assert "severity" not in {f.name for f in fields(Finding)}
    with pytest.raises(TypeError):
        Finding(tool=Tool.GUARDS, kind="silent-skip", severity=Severity.INFO, subject="t", message="m")  # type: ignore[call-arg]
    assert Finding(tool=Tool.GUARDS, kind="disabled", subject="t", message="m").severity is Severity.INFO


def test_a_report_that_stores_another_severity_is_refused() -> None:
    assert spec_of(Tool.AUDIT, "unused-allow").severity is Severity.WARNING
    with pytest.raises(ConfigError, match="audit/unused-allow is warning, not error"):
        stored_severity(FindingKind.UNUSED_ALLOW, Severity.ERROR, "r.json: findings[0]")
