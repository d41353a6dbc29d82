"""Skips outside the matrix on strict runners: the allowlist, its expiry, unused entries and bad files."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from matrix.audit.allowlist import AllowEntry, judge, parse_allowlist
from matrix.core.errors import UsageError
from matrix.core.report import FindingKind, OutsideResult

from .conftest import STRICT, literal, report_of, write

OUTSIDE = """
import unittest
import pytest

@pytest.mark.skipif(True, reason="needs flashinfer 0.8 for fp8 KV")
def test_fp8():
    pass

@unittest.skipIf(True, "sm90 only")
class TestLegacy(unittest.TestCase):
    def test_decode(self):
        pass

def test_plain():
    pass
"""

ALLOW_BOTH = """
[[allow]]
test = "test_outside.py::test_fp8"
reason = "flashinfer 0\\\\.8"
expires = {expires}
link = "https://example.org/issues/1"

[[allow]]
test = "test_outside.py::TestLegacy::*"
reason = "^sm90 only$"
expires = 2999-12-31
link = "https://example.org/issues/2"
"""


@pytest.mark.parametrize(
    ("allow", "ret", "kinds"),
    [
        pytest.param(None, pytest.ExitCode.TESTS_FAILED, ["unallowed-skip", "unallowed-skip"], id="no-allowlist"),
        pytest.param(ALLOW_BOTH.format(expires="2999-12-31"), pytest.ExitCode.OK, [], id="both-allowed"),
        pytest.param(
            ALLOW_BOTH.format(expires="2000-01-01"),
            pytest.ExitCode.TESTS_FAILED,
            ["unallowed-skip", "expired-allow"],
            id="expired",
        ),
        pytest.param(
            ALLOW_BOTH.format(expires="2999-12-31").replace("0\\\\.8", "0\\\\.9"),
            pytest.ExitCode.TESTS_FAILED,
            ["unallowed-skip", "unused-allow"],
            id="reason-does-not-match",
        ),
    ],
)
@pytest.mark.usefixtures("b200")
def test_strict_runner_needs_an_allowlist_entry_for_every_outside_skip(
    pytester: pytest.Pytester, allow: str | None, ret: pytest.ExitCode, kinds: list[str]
) -> None:
    write(pytester, "test_outside.py", OUTSIDE)
    args = [*STRICT, "--matrix-report", "out/report.json"]
    if allow is not None:
        write(pytester, "allow.toml", allow)
        args += ["--matrix-allowlist", "allow.toml"]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == ret
    doc = report_of(pytester)
    assert doc["planned"] == 0
    assert sorted(f["kind"] for f in doc["findings"]) == sorted(kinds)


@pytest.mark.usefixtures("b200")
def test_allowed_skips_name_their_entry(pytester: pytest.Pytester) -> None:
    write(pytester, "test_outside.py", OUTSIDE)
    write(pytester, "allow.toml", ALLOW_BOTH.format(expires="2999-12-31"))
    pytester.runpytest(*STRICT, "--matrix-allowlist", "allow.toml", "--matrix-report", "out/report.json")
    outside = {o["nodeid"]: o for o in report_of(pytester)["outside"]}
    assert outside["test_outside.py::test_fp8"]["allowed_by"].endswith("until 2999-12-31: https://example.org/issues/1")
    assert outside["test_outside.py::TestLegacy::test_decode"]["skip_reason"] == "sm90 only"
    assert outside["test_outside.py::test_plain"]["allowed_by"] is None


def test_a_lenient_runner_does_not_audit_outside_skips(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECMATRIX_DETECT", '{"gpus": 1, "capability": [9, 0], "name": "NVIDIA H100"}')
    write(pytester, "test_outside.py", OUTSIDE)
    result = pytester.runpytest("--matrix-runner", "1-gpu-h100", "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.OK
    assert report_of(pytester)["findings"] == []


@pytest.mark.usefixtures("b200")
def test_a_module_level_skip_outside_the_matrix_is_audited(pytester: pytest.Pytester) -> None:
    write(pytester, "test_gone.py", "import pytest\npytest.importorskip('no_such_module_xyz')\n\ndef test_a():\n    pass\n")
    result = pytester.runpytest(*STRICT, "--matrix-report", "out/report.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (finding,) = report_of(pytester)["findings"]
    assert (finding["kind"], finding["subject"]) == ("unallowed-skip", "test_gone.py")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "[[allow]]\ntest = 'x'\n", "*" + literal("[[allow]] #1: 'reason' must be a non-empty string"), id="missing-reason"
        ),
        pytest.param(
            "[[allow]]\ntest = 'x'\nreason = 'a'\nlink = 'l'\n",
            "*" + literal("[[allow]] #1: 'expires' is required") + "*",
            id="missing-expiry",
        ),
        pytest.param(
            "[[allow]]\ntest = 'x'\nreason = 'a'\nlink = 'l'\nexpires = 'soon'\n", "*'expires' must be a date*", id="bad-date"
        ),
        pytest.param(
            "[[allow]]\ntest = 'x'\nreason = '('\nlink = 'l'\nexpires = 2030-01-01\n",
            "*not a valid regular expression*",
            id="bad-regex",
        ),
        pytest.param("[[allow]]\ntest = 'x'\nowner = 'me'\n", "*unknown key 'owner'*", id="unknown-key"),
        pytest.param("allow = 3\n", "*must be an array of tables*", id="not-a-list"),
        pytest.param("[[allow]\n", "*malformed TOML*", id="not-toml"),
    ],
)
@pytest.mark.usefixtures("b200")
def test_a_bad_allowlist_is_a_one_line_usage_error(pytester: pytest.Pytester, text: str, message: str) -> None:
    write(pytester, "allow.toml", text)
    write(pytester, "test_any.py", "def test_a():\n    pass\n")
    result = pytester.runpytest(*STRICT, "--matrix-allowlist", "allow.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: specmatrix: {message}"])
    assert "Traceback" not in result.stderr.str()


def _entry(test: str, reason: str, expires: dt.date) -> AllowEntry:
    return AllowEntry(label=test, test=test, reason=re.compile(reason), expires=expires, link="l")


@pytest.mark.parametrize(
    ("expires", "allowed", "kinds"),
    [
        pytest.param(dt.date(2026, 6, 1), True, [], id="expires-today-still-live"),
        pytest.param(dt.date(2026, 5, 31), False, [FindingKind.EXPIRED_ALLOW], id="expired-yesterday"),
    ],
)
def test_expiry_is_inclusive_of_the_date(expires: dt.date, allowed: bool, kinds: list[FindingKind]) -> None:
    skipped = OutsideResult(nodeid="t.py::test_a", status="skipped", skip_reason="why")
    verdict = judge([skipped], [_entry("t.py::*", "why", expires)], today=dt.date(2026, 6, 1))
    assert (verdict.outside[0].allowed_by is not None) == allowed
    assert [f.kind for f in verdict.findings] == kinds


def test_parse_accepts_dates_as_text() -> None:
    (entry,) = parse_allowlist({"allow": [{"test": "a", "reason": "b", "expires": "2030-02-03", "link": "c"}]}, "f.toml")
    assert entry.expires == dt.date(2030, 2, 3)
    with pytest.raises(UsageError, match=r"f.toml: \[\[allow\]\] #1: 'link'"):
        parse_allowlist({"allow": [{"test": "a", "reason": "b", "expires": "2030-02-03"}]}, "f.toml")


@pytest.mark.usefixtures("b200")
@pytest.mark.parametrize("how", ["pyproject", "old-flag"])
def test_the_allowlist_from_pyproject_or_the_old_flag(pytester: pytest.Pytester, how: str) -> None:
    """`[tool.specmatrix] allowlist` reaches the plugin; `--matrix-allow` still works and says it is deprecated."""
    write(pytester, "test_outside.py", OUTSIDE)
    write(pytester, "allow.toml", ALLOW_BOTH.format(expires="2999-12-31"))
    args = [*STRICT, "--matrix-report", "out/report.json"]
    if how == "pyproject":
        pytester.makepyprojecttoml('[tool.specmatrix]\nallowlist = "allow.toml"\n')
    else:
        args += ["--matrix-allow", "allow.toml"]
    result = pytester.runpytest(*args)
    outside = {o["nodeid"]: o for o in report_of(pytester)["outside"]}
    assert outside["test_outside.py::test_fp8"]["allowed_by"] is not None
    warnings = [line for line in result.stderr.lines if "deprecated" in line]
    assert warnings == (
        [] if how == "pyproject" else ["specmatrix: warning: --matrix-allow is deprecated; use --matrix-allowlist FILE"]
    )
