"""Generated junk into the readers that had no fuzz test: guard cache entries, ledger lines, reports of several runs.

The properties are verdicts, not only "no traceback": an edited cache entry never changes the audit's result, a
ledger's every non-blank line is either a record or a reported bad line, and several reports judged together fail
exactly when one of them fails alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from matrix.ledger.records import read_ledger
from tests.ci.test_fuzz_readers import SETTINGS, VALID_REPORT, json_hazard, json_value, junk_bytes, mangled, run_cli, workspace
from tests.ci.test_hostile_inputs import S

VALID_ENTRY: dict[str, Any] = {
    # A finding is the list of its fields in `matrix.registered_suite.cache.ENTRY_FIELDS` order.
    "findings": [
        [
            "never-runs",
            "test_s.py",
            8,
            "test_s.py::TestKernel",
            ["4-gpu-b200"],
            "unittest.skipIf(not is_sm90_supported())",
            "r",
            "",
        ]
    ],
    "registered": True,
    "runners": ["4-gpu-b200"],
}


# --- guard cache entries ------------------------------------------------------------------------------------


def _loaded(text: str) -> Any:
    """A mangled document as JSON data; text that no longer parses stands as a string value."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


entry_value = st.one_of(mangled(VALID_ENTRY).map(_loaded), json_value)


@SETTINGS
@given(raw=entry_value)
@example(raw={**VALID_ENTRY, "findings": []})
@example(raw={**VALID_ENTRY, "findings": [[*VALID_ENTRY["findings"][0][:2], "7", *VALID_ENTRY["findings"][0][3:]]]})
@example(raw={**VALID_ENTRY, "findings": [["never-runs", 5, *VALID_ENTRY["findings"][0][2:]]]})
@example(raw={**VALID_ENTRY, "findings": [VALID_ENTRY["findings"][0][:7]]})
@example(raw={**VALID_ENTRY, "findings": ["never-runs"]})
def test_a_cache_entry_decodes_to_typed_records_or_is_refused(raw: Any) -> None:
    from matrix.registered_suite.cache import BadEntry, decode

    try:
        audit = decode(raw, "test_s.py")
    except BadEntry:
        return
    if audit is None:
        assert raw is None
        return
    for finding in audit.findings:
        assert isinstance(finding.line, int) and not isinstance(finding.line, bool)
        assert finding.path == "test_s.py" and all(isinstance(r, str) for r in finding.runners)
    assert isinstance(audit.registered, bool) and all(isinstance(r, str) for r in audit.runners)


@SETTINGS
@given(entry=entry_value, wrap=st.sampled_from(["text", "canonical", "line", "resealed"]))
def test_an_edited_cache_file_never_changes_the_verdict(entry: Any, wrap: str) -> None:
    from matrix.registered_suite.cache import cache_text, parse_cache, seal

    with workspace() as folder:
        root = folder / "suite"
        root.mkdir()
        (root / "test_s.py").write_text(S)
        fresh = run_cli(["guards", str(root), "--json", "--output", "fresh.json", "--no-cache"])
        assert fresh == 1
        assert run_cli(["guards", str(root), "--cache-dir", "c"]) == 1
        (path,) = (folder / "c").glob("guards-*.cache")
        entries = parse_cache(path.read_bytes())
        assert entries
        lines = []
        for key, (sealed, _) in entries.items():
            # Keep the seal over an edited text (an edit by hand, written as JSON text or canonical text), write
            # the junk in place of the whole line, or seal the junk anew (what a forger would write: it must be
            # refused by the schema, or be a verdict the schema allows, never a crash).
            text = json.dumps(entry) if wrap == "text" else json.dumps(entry, sort_keys=True, separators=(",", ":"))
            if wrap == "line":
                lines.append(text)
            else:
                lines.append(f"{key} {seal(key, text) if wrap == 'resealed' else sealed} {text}")
        path.write_text(cache_text({}) + "\n".join(lines) + "\n")
        if wrap == "resealed":
            # A sealed entry that the schema allows is taken as it stands; the run must still end cleanly.
            assert run_cli(["guards", str(root), "--json", "--output", "cached.json", "--cache-dir", "c"]) in (0, 1)
            return
        assert run_cli(["guards", str(root), "--json", "--output", "cached.json", "--cache-dir", "c"]) == 1
        assert json.loads(Path("cached.json").read_text()) == json.loads(Path("fresh.json").read_text())


# --- ledger lines -------------------------------------------------------------------------------------------

VALID_LINES = [
    {
        "ledger": 1,
        "runner": {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0]},
        "kind": "process",
        "script": "test_s.py",
        "argv": [],
        "pid": 7,
        "time": 1.0,
    },
    {
        "ledger": 1,
        "runner": {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0]},
        "kind": "test",
        "file": "test_s.py",
        "test": "test_s.py::TestKernel::test_decode",
        "status": "skipped",
        "reason": "r",
        "pid": 7,
        "time": 1.0,
    },
    {
        "ledger": 1,
        "runner": {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0]},
        "kind": "exit",
        "status": 0,
        "how": "end",
        "tests": 1,
        "pid": 7,
        "time": 1.0,
    },
]
ledger_line = st.one_of(
    st.sampled_from(VALID_LINES).map(json.dumps),
    st.sampled_from(VALID_LINES).flatmap(mangled),
    json_hazard,
    json_value.map(json.dumps),
    st.text(max_size=80).filter(lambda t: "\n" not in t and "\r" not in t),
)


@SETTINGS
@given(lines=st.lists(st.one_of(ledger_line.map(lambda t: t.encode("utf-8", "surrogatepass")), junk_bytes), max_size=8))
@example(lines=[json.dumps(VALID_LINES[0]).encode(), b"x" * (1024 * 1024 + 5), json.dumps(VALID_LINES[2]).encode()])
# Found by the deep profile: a process record without runner facts before test and exit records that have them.
@example(lines=[json.dumps({**VALID_LINES[0], "runner": {}}).encode(), *(json.dumps(x).encode() for x in VALID_LINES[1:])])
def test_every_ledger_line_is_a_record_or_a_reported_bad_line(lines: list[bytes]) -> None:
    from matrix.core.errors import ReportError

    with workspace() as folder:
        path = folder / "l.jsonl"
        path.write_bytes(b"".join(line.replace(b"\n", b" ") + b"\n" for line in lines))
        physical = path.read_bytes().split(b"\n")[:-1]
        try:
            read = read_ledger(path)
        except ReportError:
            return  # no readable record at all: refused as a whole
        nonblank = sum(1 for x in physical if x.strip())
        assert read.records + len(read.bad_lines) == nonblank
        code = run_cli(["ledger", str(path), "--root", str(_suite(folder))])
        assert code in (1, 2)  # the suite's one file either skipped, never ran, or the ledger is refused


def _suite(folder: Path) -> Path:
    root = folder / "suite"
    root.mkdir(exist_ok=True)
    (root / "test_s.py").write_text(S)
    return root


# --- reports of several runs --------------------------------------------------------------------------------

report = st.one_of(st.just(json.dumps(VALID_REPORT)), mangled(VALID_REPORT))


@SETTINGS
@given(reports=st.lists(report, min_size=2, max_size=3), command=st.sampled_from(["audit", "coverage"]))
@example(
    reports=[
        json.dumps(VALID_REPORT),
        json.dumps(VALID_REPORT).replace('"status": "passed", "duration"', '"status": "skipped-expected", "duration"'),
    ],
    command="audit",
)
@example(reports=[json.dumps(VALID_REPORT), json.dumps({**VALID_REPORT, "matrix": "other"})], command="coverage")
def test_several_reports_fail_exactly_when_one_fails_alone(reports: list[str], command: str) -> None:
    with workspace() as folder:
        paths = []
        for i, text in enumerate(reports):
            paths.append(folder / f"r{i}.json")
            paths[-1].write_bytes(text.encode("utf-8", "surrogatepass"))

        def verdict(names: list[Path]) -> int:
            extra = ["--out", "out", "--no-heatmap"] if command == "coverage" else []
            return run_cli([command, *extra, *map(str, names)])

        alone = [verdict([p]) for p in paths]
        together = verdict(paths)
        if 2 in alone:
            assert together == 2
        elif command == "audit":
            assert together == max(alone)
        else:
            # coverage judges cells across reports (a cell one report ran counts on its runner): at least as strict
            # as the union of findings is not implied, but a refusal is never hidden and the exit is a verdict.
            assert together in (0, 1)
