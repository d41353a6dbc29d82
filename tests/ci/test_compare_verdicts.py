"""ci/compare_verdicts.py's comparison: certain verdicts that changed, tests newly decided or undetermined, shares."""

from __future__ import annotations

from typing import Any

from tests.ci_scripts import ci_script

cv = ci_script("compare_verdicts")


def _finding(kind: str, test: str, *runners: str) -> dict[str, Any]:
    return {"kind": kind, "test": test, "path": test.split("::", maxsplit=1)[0], "runners": list(runners)}


def _audit(findings: list[dict[str, Any]], undetermined: int, **extra: Any) -> dict[str, Any]:
    return {"tests": 5, "undetermined": undetermined, "undetermined_unread": 0, "findings": findings, **extra}


OLD = cv.Side(
    audit=_audit(
        [_finding("silent-skip", "t/test_k.py::test_gone", "a10g: four A10Gs"), _finding("unscheduled", "t/test_lost.py")], 3
    ),
    outcomes={
        "t/test_k.py::test_gone": "skips",
        "t/test_k.py::test_flip": "runs",
        "t/test_k.py::test_known": "undetermined",
        "t/test_k.py::test_lost": "undetermined",
        "t/test_k.py::test_same": "undetermined",
        "t/test_old_only.py::test_x": "runs",
    },
)
NEW = cv.Side(
    audit=_audit(
        [
            _finding("disabled-by-skip", "t/test_k.py::test_gone", "a10g"),
            _finding("silent-skip", "t/test_k.py::test_flip", "h100"),
            _finding("never-runs", "t/test_k.py::test_known", "h100"),
        ],
        1,
        undetermined_tests=[{"test": "t/test_k.py::test_same", "reason": "why"}],
    ),
    outcomes={
        "t/test_k.py::test_gone": "skips",
        "t/test_k.py::test_flip": "skips",
        "t/test_k.py::test_known": "undetermined",
        "t/test_k.py::test_lost": "runs",
        "t/test_k.py::test_same": "undetermined",
    },
)


def test_changed_certain_verdicts_and_newly_decided_tests() -> None:
    c = cv.compare("pytest-audit demo", OLD, NEW)
    changed = {key: (was.text(), now.text()) for key, was, now in c.changed}
    assert changed == {
        # A finding's kind changed; its runners are compared by name (a runner's description is not a change).
        "t/test_k.py::test_gone": ("skips; silent-skip(a10g)", "skips; disabled-by-skip(a10g)"),
        "t/test_k.py::test_flip": ("runs", "skips; silent-skip(h100)"),
        # A file-level finding that went away is a change; a test collected on one side only is not compared.
        "t/test_lost.py": ("unscheduled", "nothing"),
    }
    # An undetermined outcome with a finding naming the test is decided (never-runs where the job is unread).
    assert sorted(key for key, _ in c.newly_decided) == ["t/test_k.py::test_known", "t/test_k.py::test_lost"]
    assert c.newly_undetermined == ()
    assert (c.only_old, c.only_new) == (1, 0)
    assert c.shares == (1 - 3 / 5, 1 - 1 / 5)
    assert any("no undetermined_tests list before" in n for n in c.notes)


def test_a_test_that_becomes_undetermined_is_counted_and_never_a_change() -> None:
    c = cv.compare("pytest-audit demo", NEW, OLD)
    assert [key for key, _ in c.newly_undetermined] == ["t/test_k.py::test_known", "t/test_k.py::test_lost"]
    assert "t/test_k.py::test_known" not in {key for key, _, _ in c.changed}


def test_without_outcomes_only_findings_and_listed_tests_are_compared() -> None:
    blind = cv.Side(audit=OLD.audit, missing=("per-test outcomes not read (ImportError)",))
    c = cv.compare("pytest-audit demo", blind, NEW)
    notes = "\n".join(c.notes)
    assert "before: per-test outcomes not read (ImportError)" in notes
    assert "only the findings" in notes
    keys = {key for key, _, _ in c.changed}
    # Without outcomes, a finding's appearance is all there is to compare: it is shown, never dropped.
    assert {"t/test_k.py::test_flip", "t/test_k.py::test_known", "t/test_lost.py"} <= keys


def test_guards_reports_compare_files_and_their_undetermined_findings() -> None:
    def guards(*findings: dict[str, Any], undetermined: int) -> Any:
        counts = {"undetermined": undetermined}
        return cv.Side(audit={"test_files": 4, "counts": counts, "findings": list(findings)})

    old = guards(_finding("undetermined", "a/test_a.py", "cpu"), _finding("never-runs", "a/test_b.py", "h100"), undetermined=1)
    new = guards(
        _finding("disabled-by-skip", "a/test_a.py", "cpu"), _finding("never-runs", "a/test_b.py", "b200"), undetermined=0
    )
    c = cv.compare("guards demo", old, new)
    assert [(k, w.text(), n.text()) for k, w, n in c.changed] == [("a/test_b.py", "never-runs(h100)", "never-runs(b200)")]
    assert [k for k, _ in c.newly_decided] == ["a/test_a.py"]
    assert c.shares == (0.75, 1.0)
    assert c.notes == ()
    text = "\n".join(cv.render(c, limit=5))
    assert "test files: 4 before, 4 after; decided share 75.0% -> 100.0%" in text
    assert "a/test_a.py: disabled-by-skip(cpu)" in text


def test_a_file_level_finding_over_tests_that_were_undetermined_is_newly_decided() -> None:
    old = cv.Side(audit=_audit([], 2), outcomes={"t/test_g.py::test_a": "undetermined", "t/test_g.py::test_b": "skips"})
    new = cv.Side(
        audit=_audit([_finding("silent-skip", "t/test_g.py::test_a", "l4"), _finding("never-runs", "t/test_g.py", "l4")], 0),
        outcomes={"t/test_g.py::test_a": "skips", "t/test_g.py::test_b": "skips"},
    )
    c = cv.compare("pytest-audit demo", old, new)
    assert c.changed == ()
    assert sorted(key for key, _ in c.newly_decided) == ["t/test_g.py", "t/test_g.py::test_a"]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    assert cv.main([str(tmp_path / "missing")]) == 2
    assert cv.main(["--schedule-file", "no-equals-sign", str(tmp_path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        f"compare_verdicts: {tmp_path / 'missing'}: not a folder",
        "compare_verdicts: --schedule-file 'no-equals-sign': expected NAME=FILE",
    ]
