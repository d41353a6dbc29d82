"""The results cache's own pieces: an entry decodes to the very records the audit built, and the file's lines."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from matrix.core.finding import Finding
from matrix.guards.model import GuardFindingKind, guard_finding
from matrix.registered_suite import cache
from matrix.registered_suite.audit import FileAudit


def _findings() -> list[Finding]:
    """One finding of every kind, about a test and about the whole file, with and without runners and texts."""
    out = []
    for number, kind in enumerate(GuardFindingKind):
        out.append(
            guard_finding(
                kind,
                path="sub/test_x.py",
                line=number,
                test=f"sub/test_x.py::TestX::test_{number}",
                runners=("4-gpu-b200", "1-gpu-h100")[: number % 3],
                guard="unittest.skipIf(is_hip(), 'a \"quoted\" reason\\n')" if number % 2 else "",
                reason=f"why {number}: caf\u00e9, \u2028, \U0001f600",
                hint="fix it" if number % 3 else "",
            )
        )
        out.append(guard_finding(kind, path="sub/test_x.py", line=1, test="sub/test_x.py", reason="the whole file"))
    return out


def differences(decoded: Finding, built: Finding) -> list[str]:
    """Where a decoded finding differs from the one the audit built: value, type, or the order of its fields."""
    found = [name for name in vars(built) if vars(decoded).get(name, object()) != vars(built)[name]]
    found += [name for name, value in vars(decoded).items() if type(value) is not type(vars(built).get(name))]
    if list(vars(decoded)) != [f.name for f in dataclasses.fields(Finding)]:
        found.append("field order")
    return found


def round_trip(audit: FileAudit, display: str) -> FileAudit | None:
    text = cache.entry_text(audit)
    return cache.decode(json.loads(text), display)


def test_an_entry_decodes_to_the_records_the_audit_built():
    audit = FileAudit(findings=tuple(_findings()), registered=True, runners=("4-gpu-b200",))
    back = round_trip(audit, "sub/test_x.py")
    assert back == audit
    assert back is not None
    for decoded, built in zip(back.findings, audit.findings, strict=True):
        assert differences(decoded, built) == []
        assert hash(decoded) == hash(built) and repr(decoded) == repr(built)
    assert round_trip(FileAudit(findings=(), registered=False, runners=()), "t.py") == FileAudit(
        findings=(), registered=False, runners=()
    )


def test_the_comparison_sees_a_planted_wrong_field_and_a_missing_field():
    audit = FileAudit(findings=tuple(_findings()[:2]), registered=True, runners=())
    built = audit.findings[0]
    back = round_trip(audit, "sub/test_x.py")
    assert back is not None
    wrong = object.__new__(Finding)
    object.__setattr__(wrong, "__dict__", {**vars(back.findings[0]), "hint": built.hint + " (planted)"})
    assert "hint" in differences(wrong, built)
    short = object.__new__(Finding)
    object.__setattr__(short, "__dict__", {k: v for k, v in vars(built).items() if k != "evidence"})
    assert "evidence" in differences(short, built)


VALID = ["never-runs", "t.py", 1, "t.py::T", [], "", "", ""]  # the finding every case below breaks


@pytest.mark.parametrize(
    "finding",
    [
        VALID,
        ["never-runs", "t.py", 1, "t.py::T", [], "", ""],
        ["never-runs", "t.py", 1, "t.py::T", [], "", "", "", ""],
        ["no-such-kind", "t.py", 1, "t.py::T", [], "", "", ""],
        [["never-runs"], "t.py", 1, "t.py::T", [], "", "", ""],
        ["never-runs", "other.py", 1, "t.py::T", [], "", "", ""],
        ["never-runs", "t.py", True, "t.py::T", [], "", "", ""],
        ["never-runs", "t.py", -1, "t.py::T", [], "", "", ""],
        ["never-runs", "t.py", 2**31, "t.py::T", [], "", "", ""],
        ["never-runs", "t.py", 1.0, "t.py::T", [], "", "", ""],
        ["never-runs", "t.py", 1, None, [], "", "", ""],
        ["never-runs", "t.py", 1, "t.py::T", "4-gpu-b200", "", "", ""],
        ["never-runs", "t.py", 1, "t.py::T", [5], "", "", ""],
        ["never-runs", "t.py", 1, "t.py::T", [], 0, "", ""],
        "never-runs t.py 1 t.py::T  ",
        {"kind": "never-runs"},
    ],
)
def test_an_off_schema_finding_is_refused(finding: Any):
    raw = {"findings": [finding], "registered": True, "runners": []}
    if finding is VALID:
        audit = cache.decode(raw, "t.py")
        assert audit is not None and audit.findings[0].subject == "t.py::T"
        return
    with pytest.raises(cache.BadEntry):
        cache.decode(raw, "t.py")


def test_the_file_is_lines_of_key_seal_text_under_the_schema():
    entries = {"a" * 64: ("s1", '{"x":1}'), "b" * 64: ("s2", "null")}
    text = cache.cache_text(entries)
    assert text.splitlines() == [cache.CACHE_SCHEMA, f'{"a" * 64} s1 {{"x":1}}', f"{'b' * 64} s2 null"]
    assert cache.parse_cache(text.encode()) == entries
    # A truncated last line, a line without three parts and a blank line are left out; the rest stands.
    cut = text.encode()[:-3] + b"\n\nnot-an-entry\n"
    assert cache.parse_cache(cut) == {"a" * 64: ("s1", '{"x":1}'), "b" * 64: ("s2", "nu")}


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"specmatrix.guards-cache/4\n" + b"a" * 64 + b" s null\n",
        b'{"schema": "specmatrix.guards-cache/5", "files": {}}',
        cache.CACHE_SCHEMA.encode() + b"\n" + b"a" * 64 + b" s \xc3\xa9\n",  # not ASCII: nothing we wrote
        b" " + cache.CACHE_SCHEMA.encode() + b"\n" + b"a" * 64 + b" s null\n",
    ],
)
def test_a_file_of_another_schema_or_not_ascii_holds_no_entry(data: bytes):
    assert cache.parse_cache(data) == {}


def test_a_truncated_entry_is_a_miss_and_the_others_are_hits(tmp_path: Path):
    audit = FileAudit(findings=tuple(_findings()[:3]), registered=True, runners=())
    texts = {f"{i:064x}": cache.entry_text(audit) for i in range(3)}
    entries = {key: (cache.seal(key, text), text) for key, text in texts.items()}
    # The last entry cut inside its text (a write that stopped short): its seal no longer matches.
    (tmp_path / "guards-k.cache").write_text(cache.cache_text(entries)[:-10])
    results = cache.ResultCache(tmp_path, "k")
    keys = list(entries)
    assert [results.get(key, "sub/test_x.py")[0] for key in keys] == [True, True, False]
    assert results.get(keys[0], "sub/test_x.py")[1] == audit
    # The text must be the whole line: JSON with something after it is a miss, even sealed.
    padded = texts[keys[0]] + " "
    (tmp_path / "guards-k.cache").write_text(cache.cache_text({keys[0]: (cache.seal(keys[0], padded), padded)}))
    assert cache.ResultCache(tmp_path, "k").get(keys[0], "sub/test_x.py") == (False, None)
