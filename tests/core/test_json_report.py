"""The one JSON writer of findings (`matrix.core.json_report`): its envelope, its text against `json.dumps`, and
every finding command's `--format json` going through it (an audit that builds its findings list itself fails here)."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import sys
import tempfile
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import matrix
from matrix.audit.findings import cell_findings
from matrix.cli.guards import render as guards_render
from matrix.core import json_report as json_report_module
from matrix.core.baseline import stamped
from matrix.core.finding import Finding, Severity, Tool, spec_of
from matrix.core.json_report import CORE, ENVELOPE, JsonReport, Shape, finding_entry, json_document, json_report
from matrix.core.output import finding_doc
from matrix.core.report import CellResult, CellStatus, Report, RunnerInfo, write_report
from matrix.guards.model import GuardFindingKind, GuardReport, finding_fields, guard_finding
from matrix.ledger import render as ledger_render
from matrix.ledger.join import LedgerFindingKind, LedgerReport, ledger_finding
from matrix.pytest_suites import render as pytest_audit_render
from matrix.pytest_suites.audit import PytestAuditReport, PytestFinding
from matrix.pytest_suites.packs import GuardClass
from matrix.registered_suite.gate import gate

PACKAGE = Path(matrix.__file__).parent


def guard(reason: str = "why", kind: GuardFindingKind = GuardFindingKind.SILENT_SKIP) -> Finding:
    (found,) = stamped(
        [
            guard_finding(
                kind,
                path="t.py",
                line=3,
                test="t.py::T::test_a",
                runners=("4-gpu-b200",),
                guard="skipIf",
                reason=reason,
                hint="h",
            )
        ],
        "",
    )
    return found


def test_the_envelope_is_schema_tool_head_verdict_findings_tail_in_that_order() -> None:
    findings = [guard(), guard(kind=GuardFindingKind.UNDETERMINED), guard()]
    report = JsonReport(schema="s/1", findings=findings, exit_code=1, head={"root": "r", "n": 2}, tail={"after": 1})
    doc = json_document(report)
    assert list(doc) == ["schema", "tool", "root", "n", "counts", "exit_code", "failing", "findings", "after"]
    assert doc["schema"] == "s/1"
    assert doc["tool"] == {"name": "specmatrix", "version": matrix.__version__}
    assert doc["counts"] == {"silent-skip": 2, "undetermined": 1}  # by default, the findings per kind
    assert (doc["exit_code"], doc["failing"]) == (1, sum(f.failing for f in findings))
    assert doc["failing"] == 2  # silent-skip fails, undetermined does not (its KindSpec)
    assert doc["findings"] == [finding_doc(f) for f in findings]
    assert json.loads(json_report(report)) == doc


def test_an_audits_own_counts_and_a_gates_failing_replace_the_defaults() -> None:
    report = JsonReport(schema="s/1", findings=[guard()], exit_code=0, counts={"silent-skip": {"x": 1}}, failing=0)
    doc = json_document(report)
    assert (doc["counts"], doc["exit_code"], doc["failing"]) == ({"silent-skip": {"x": 1}}, 0, 0)


def test_the_version_the_json_names_is_the_distributions() -> None:
    with (PACKAGE.parent / "pyproject.toml").open("rb") as stream:
        assert tomllib.load(stream)["project"]["version"] == matrix.__version__


def test_an_audits_own_fields_are_followed_by_the_verdict_the_kind_decides() -> None:
    """`failing` and `severity` come from the kind's `KindSpec` through the finding, the fingerprint is the one set."""
    shape = Shape(fields=finding_fields)
    for kind in (GuardFindingKind.SILENT_SKIP, GuardFindingKind.UNPARSABLE):
        f = guard(kind=kind)
        entry = finding_entry(f, shape)
        assert list(entry)[-3:] == ["failing", "severity", "fingerprint"]
        spec = spec_of(Tool.GUARDS, kind.value)
        assert entry["failing"] is spec.fails
        assert entry["severity"] == spec.severity.value
        assert entry["fingerprint"] == f.fingerprint != ""


@pytest.mark.parametrize("key", ENVELOPE)
def test_an_audit_cannot_set_the_envelopes_own_keys(key: str) -> None:
    with pytest.raises(ValueError, match="writes"):
        json_report(JsonReport(schema="s/1", findings=[], exit_code=0, head={key: []}))
    with pytest.raises(ValueError, match="writes"):
        json_document(JsonReport(schema="s/1", findings=[], exit_code=0, tail={key: []}))


def test_a_field_both_before_and_after_the_findings_is_refused() -> None:
    with pytest.raises(ValueError, match="both"):
        json_report(JsonReport(schema="s/1", findings=[], exit_code=0, head={"a": 1}, tail={"a": 2}))


VALUES = st.one_of(
    st.text(),
    st.integers(),
    st.booleans(),
    st.none(),
    st.floats(allow_nan=False),
    st.lists(st.text(), max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(
    reasons=st.lists(st.text(), max_size=3),
    extra=st.dictionaries(st.text(max_size=4), VALUES, max_size=3),
    head=st.dictionaries(st.sampled_from(["root", "runners", "ok"]), VALUES, max_size=3),
)
def test_the_text_is_json_dumps_of_the_document(reasons: list[str], extra: dict[str, Any], head: dict[str, Any]) -> None:
    findings = [guard(r) for r in reasons]
    for shape in (CORE, Shape(fields=lambda f: {**finding_fields(f), **extra})):
        report = JsonReport(schema="s/1", findings=findings, exit_code=0, head=head, tail={"after": extra}, shape=shape)
        assert json_report(report) == json.dumps(json_document(report), indent=2)


# --- every finding command's JSON goes through the one writer ---------------------------------------------------


def _audit_json() -> str:
    """`specmatrix audit REPORT --format json` on a saved run report with one unexpected skip."""
    from matrix.cli.main import main

    cell = CellResult(
        nodeid="t.py::test[c]", cell="c", test="t.py::test", expected="run", rule=None, reason="r",
        status=CellStatus.SKIPPED_UNEXPECTED, skip_reason="no flag",
    )  # fmt: skip
    report = Report(
        matrix="m", runner=RunnerInfo(name="4-gpu-b200", gpus=4, capability=(10, 0)), versions={},
        detection_overridden=False, created="2026-07-01", cells=(cell,), findings=tuple(cell_findings([cell])),
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "r.json"
        write_report(report, path)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(["audit", str(path), "--format", "json"])
    return out.getvalue()


def _guard_report() -> GuardReport:
    return GuardReport(root=".", files_scanned=1, test_files=1, registered_files=1, runners=("4-gpu-b200",), findings=(guard(),))


def _ledger_json() -> str:
    finding = ledger_finding(
        kind=LedgerFindingKind.SILENT_SKIP, path="t.py", line=1, test="t.py::T", runner="4-gpu-b200", message="m", detail="d"
    )
    return ledger_render.to_json(LedgerReport(root=".", ledgers=("l",), runners=(), findings=(finding,), processes=1, records=1))


def _pytest_audit_json() -> str:
    report = PytestAuditReport(
        root=".", files=1, tests=1, scheduled_tests=1, runners=("4-gpu-b200",), undetermined=0,
        findings=(PytestFinding(finding=guard(), guard_class=GuardClass.CAPABILITY),),
    )  # fmt: skip
    return pytest_audit_render.to_json(report)


def _findings_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    if "reports" in doc:  # `audit`: one list per report read
        return [f for r in doc["reports"] for f in r["findings"]]
    return list(doc["findings"])


COMMANDS: dict[str, Callable[[], str]] = {
    "guards": lambda: guards_render(_guard_report(), gate(_guard_report(), show=Severity.INFO, baseline=None), "json"),
    "pytest-audit": _pytest_audit_json,
    "ledger": _ledger_json,
    "audit": _audit_json,
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_finding_commands_json_is_written_by_the_one_writer(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A finding entry marked by the writer shows in the command's JSON: a command writing its own list loses it."""
    before = _findings_of(json.loads(COMMANDS[command]()))
    assert before
    real = json_report_module.finding_entry
    monkeypatch.setattr(json_report_module, "finding_entry", lambda f, shape=CORE: {**real(f, shape), "marked": True})
    after = _findings_of(json.loads(COMMANDS[command]()))
    assert [f.pop("marked") for f in after] == [True] * len(before)
    assert after == before


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_finding_commands_json_has_the_one_envelope(command: str) -> None:
    doc = json.loads(COMMANDS[command]())
    assert [k for k in doc if k in ENVELOPE] == list(ENVELOPE), command
    assert doc["failing"] == sum(f["failing"] for f in doc["findings"])
    assert doc["exit_code"] == (1 if doc["failing"] else 0)


@pytest.mark.parametrize(
    "argv",
    [
        ["gaps", ".", "--format", "json"],
        ["coverage", "results/h200x1-grouped-cold.json", "--no-heatmap", "--format", "json", "--out"],
    ],
    ids=["gaps", "coverage"],
)
def test_the_cell_audits_json_has_the_one_envelope(argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matrix.cli.main import main

    monkeypatch.chdir(PACKAGE.parent)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main([*argv, str(tmp_path)] if argv[-1] == "--out" else argv)
    doc = json.loads(out.getvalue())
    assert [k for k in doc if k in ENVELOPE] == list(ENVELOPE)
    assert (doc["exit_code"], doc["failing"]) == (code, sum(f["failing"] for f in doc["findings"]))
    assert doc["tool"]["version"] == matrix.__version__


# Modules that hold a `findings` key that is not a finding report's JSON: the run report as a test session stores it
# (`specmatrix.report/1`, read back by `audit`), the guard results cache, the HTML page's data, a count in `report`.
NOT_A_FINDING_REPORT = {"core/report.py", "registered_suite/cache.py", "coverage/page.py", "cli/report.py"}


def _own_findings_lists() -> list[str]:
    """Where a module other than the writer builds a `findings` entry of a document or calls `finding_doc`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name == "core/json_report.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            keys: list[ast.expr | None] = []
            if isinstance(node, ast.Dict):
                keys = [k for k, v in zip(node.keys, node.values, strict=True) if not _by_the_writer(v)]
            elif isinstance(node, ast.Assign):
                keys = [t.slice for t in node.targets if isinstance(t, ast.Subscript)]
            if name not in NOT_A_FINDING_REPORT and any(isinstance(k, ast.Constant) and k.value == "findings" for k in keys):
                found.append(f"{name}:{node.lineno}: a findings list of its own")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "finding_doc":
                found.append(f"{name}:{node.lineno}: finding_doc")
    return found


def _by_the_writer(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "finding_entries"


def test_no_audit_builds_its_findings_list_itself() -> None:
    assert _own_findings_lists() == []


def test_a_findings_list_built_by_an_audit_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted = tmp_path / "matrix"
    (planted / "cli").mkdir(parents=True)
    (planted / "cli" / "gaps.py").write_text(
        "def doc(fs):\n    return {'schema': 's', 'findings': [finding_doc(f) for f in fs]}\n", encoding="utf-8"
    )
    (planted / "core").mkdir()
    (planted / "core" / "report.py").write_text("doc = {}\ndoc['findings'] = []\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", planted)
    assert _own_findings_lists() == ["cli/gaps.py:2: a findings list of its own", "cli/gaps.py:2: finding_doc"]
