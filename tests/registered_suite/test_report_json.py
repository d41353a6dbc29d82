"""`to_json` lays the findings out itself: the text is exactly `json.dumps(to_json_doc(...), indent=2)`.

Compared on the fixture suite's report (with and without a baseline, every severity shown), on generated findings
(any text, any runners, findings about the whole file) and on findings whose fields are of other types than the
layout assumes; shown red when one escape is left out or the layout loses a line break.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.core import json_report as json_report_module
from matrix.core import jsonio
from matrix.core.finding import Finding, Severity
from matrix.core.json_report import Shape
from matrix.core.loader import load_runners
from matrix.guards.model import GuardFindingKind, GuardReport, guard_finding
from matrix.registered_suite import gate as gate_module
from matrix.registered_suite.audit import load_suite_map
from matrix.registered_suite.gate import Baseline, BaselineEntry, Gate, error_keys, gate, to_json, to_json_doc
from matrix.registered_suite.tree import audit_tree

FIXTURE_SUITE = Path(__file__).parent.parent / "guards" / "fixture_suite"


def report_of(findings: tuple[Finding, ...]) -> GuardReport:
    return GuardReport(
        root="suite", files_scanned=3, test_files=2, registered_files=1, runners=("4-gpu-b200",), findings=findings
    )


def agrees(report: GuardReport, result: Gate | None, exit_code: int | None = None) -> bool:
    return to_json(report, result, exit_code=exit_code) == json.dumps(to_json_doc(report, result, exit_code=exit_code), indent=2)


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory: pytest.TempPathFactory) -> GuardReport:
    report = audit_tree(
        FIXTURE_SUITE, load_runners(), suite_map=load_suite_map(None), jobs=1, cache_dir=tmp_path_factory.mktemp("c")
    )
    assert len(report.findings) > 20
    return report


def test_the_fixture_suites_report_is_written_as_json_dumps_writes_it(fixture_report: GuardReport) -> None:
    assert agrees(fixture_report, None)
    assert agrees(fixture_report, gate(fixture_report, show=Severity.INFO))
    assert agrees(fixture_report, gate(fixture_report, show=Severity.ERROR), exit_code=0)
    keys = error_keys(fixture_report.findings)
    baseline = Baseline(
        entries=(
            BaselineEntry(path=keys[0][0], test=keys[0][1], kind=keys[0][2], runner=keys[0][3], expires=dt.date(2020, 1, 1)),
            BaselineEntry(path="gone.py", test="gone.py::T", kind="silent-skip", runner="*"),
        )
    )
    with_baseline = gate(fixture_report, show=Severity.WARNING, baseline=baseline, today=dt.date(2026, 1, 1))
    assert "baseline" in to_json_doc(fixture_report, with_baseline)
    assert agrees(fixture_report, with_baseline)
    assert agrees(report_of(()), gate(report_of(()), show=Severity.INFO))


text = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(['"', "\\", "\n", "\x00", "\u2028", "é"])


@st.composite
def findings(draw: st.DrawFn) -> Finding:
    path = draw(st.sampled_from(["t.py", 'a/b "c".py', "caf\u00e9.py"]))
    return guard_finding(
        draw(st.sampled_from(list(GuardFindingKind))),
        path=path,
        line=draw(st.integers(0, 2**31 - 1)),
        test=draw(st.sampled_from([path, f"{path}::T"]) | text),
        runners=tuple(draw(st.lists(text, max_size=3))),
        guard=draw(text),
        reason=draw(text),
        hint=draw(text),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(findings(), max_size=6), st.sampled_from(list(Severity)))
def test_generated_findings_are_written_as_json_dumps_writes_them(found: list[Finding], show: Severity) -> None:
    report = report_of(tuple(found))
    assert agrees(report, None)
    assert agrees(report, gate(report, show=show))


class Word(enum.StrEnum):
    X = "x"


def _odd(**fields: object) -> Finding:
    base = guard_finding(GuardFindingKind.SILENT_SKIP, path="t.py", line=3, test="t.py::T", runners=("r",), reason="r")
    odd = object.__new__(Finding)
    object.__setattr__(odd, "__dict__", {**vars(base), **fields})
    return odd


@pytest.mark.parametrize(
    "fields",
    [
        {"line": True},  # json writes `true`, not `1`
        {"line": 7.5},
        {"subject": Word.X, "hint": Word.X},  # a str subclass is written as its text
        {"runners": ["a", "b"]},  # a list where a tuple is expected
        {"runners": ("a", 5)},
        {"accepted_by": "baseline"},  # not failing
        {"source": None},
    ],
)
def test_a_finding_of_other_types_is_written_the_general_way(fields: dict[str, object]) -> None:
    report = report_of((_odd(), _odd(**fields), _odd()))
    assert agrees(report, gate(report, show=Severity.INFO))


def test_a_left_out_escape_is_caught(fixture_report: GuardReport, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = jsonio.string_literals

    def careless() -> Callable[[str], str]:
        literal = raw()
        return lambda s: literal(s).replace('\\"', '"')

    monkeypatch.setattr(json_report_module, "string_literals", careless)
    quoted = report_of((_odd(source='skipIf(x, "why")'),))
    assert not agrees(quoted, None)


def test_a_layout_that_loses_a_line_break_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    report = report_of((_odd(), _odd(runners=())))
    assert agrees(report, None)
    real = json_report_module.findings_json
    monkeypatch.setattr(json_report_module, "findings_json", lambda *a: real(*a).replace(',\n      "guard"', ', "guard"'))
    assert not agrees(report, None)


def test_a_field_added_to_finding_fields_is_written_the_general_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """The layout knows plain values only; a field of another type sends its finding the general way."""
    real = gate_module.finding_fields
    monkeypatch.setattr(gate_module, "JSON_SHAPE", Shape(fields=lambda f: {**real(f), "extra": 1, "odd": 0.5}))
    report = report_of((_odd(),))
    assert '"extra": 1' in to_json(report, None)
    assert '"odd": 0.5' in to_json(report, None)
    assert agrees(report, None)
