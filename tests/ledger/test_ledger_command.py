"""`specmatrix ledger` on hand-written ledgers: merging, acceptance, runner claims, bad input, output formats."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from matrix.ledger.join import LedgerFindingKind, LedgerReport, ledger_finding
from matrix.ledger.render import to_github, to_markdown
from tests.ledger.conftest import FIXTURE_SUITE, ledger_cli

ROOT = FIXTURE_SUITE / "registered"
B200 = {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}
H100 = {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [9, 0], "name": "NVIDIA H100"}
CLEAN = "registered/attention/test_clean_backends.py"


def line(kind: str, pid: int, runner: dict[str, Any] = B200, **fields: Any) -> str:
    return json.dumps({"ledger": 1, "runner": runner, "kind": kind, **fields, "pid": pid, "time": 1.0}) + "\n"


def file_run(path: str, pid: int, outcomes: dict[str, str], runner: dict[str, Any] = B200, exit_status: int | None = 0) -> str:
    text = line("process", pid, runner, script=path, argv=["-f"])
    for test, status in outcomes.items():
        reason = {"reason": "no reason"} if status == "skipped" else {}
        text += line("test", pid, runner, file=path, test=f"{path}::{test}", status=status, **reason)
    if exit_status is not None:
        text += line("exit", pid, runner, status=exit_status, how="sys.exit", tests=len(outcomes))
    return text


def clean_ledger(runner: dict[str, Any] = B200) -> str:
    """Every 4-gpu-b200 file of the fixture suite ran and passed."""
    files = {
        CLEAN: {"TestTritonBackend::test_graph_buffers": "passed"},
        "registered/attention/test_dense_backend_guard.py": {"TestDenseBackend::test_decode": "passed"},
        "registered/spec/test_main_exit_skip.py": {"TestDraftRunner::test_draft_tokens": "passed"},
        "registered/spec/test_ci_only.py": {"TestSpeculativeAcceptance::test_long_acceptance_sweep": "passed"},
        "registered/kernels/test_optional_kernel.py": {"TestFusedAdd::test_fused_add": "passed"},
    }
    return "".join(file_run(path, 100 + i, tests, runner) for i, (path, tests) in enumerate(files.items()))


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_clean_ledger_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = ledger_cli(capsys, write(tmp_path, "l.jsonl", clean_ledger()), "--root", ROOT)
    assert (code, err) == (0, "")
    assert "4-gpu-b200: 5/5 registered files ran (5 passed)" in out


def test_never_executed_and_shards_merge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = clean_ledger().splitlines(keepends=True)
    shard_1 = "".join(x for x in lines if '"pid": 100,' not in x)  # pid 100 ran the clean file
    code, out, _ = ledger_cli(capsys, write(tmp_path, "1.jsonl", shard_1), "--root", ROOT)
    assert code == 1
    assert "attention/test_clean_backends.py:7: error: never-executed on 4-gpu-b200" in out
    # One shard alone is not expected to cover the suite.
    assert ledger_cli(capsys, tmp_path / "1.jsonl", "--root", ROOT, "--partial")[0] == 0
    # The other shard's ledger completes it.
    shard_2 = write(tmp_path, "2.jsonl", "".join(x for x in lines if '"pid": 100,' in x))
    assert ledger_cli(capsys, tmp_path / "1.jsonl", shard_2, "--root", ROOT)[0] == 0


def test_each_runner_is_judged_on_its_own_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h100 = file_run("registered/cpu/test_cpu_parsing.py", 7, {"TestParsing::test_split": "skipped"}, H100)
    code, out, _ = ledger_cli(
        capsys, write(tmp_path, "b.jsonl", clean_ledger()), write(tmp_path, "h.jsonl", h100), "--root", ROOT
    )
    # 4-gpu-h100 serves none of the fixture's suites: the CPU file it ran is judged nowhere, and that is said (and
    # fails) unless the ledgers are declared partial.
    assert code == 1, out
    assert "4-gpu-b200: 5/5 registered files ran" in out and "4-gpu-h100: 0/0 registered files ran" in out
    assert "error: not-served on 4-gpu-h100" in out and "serves none of its suites (base-a-test-cpu" in out
    code, out, _ = ledger_cli(
        capsys, write(tmp_path, "b.jsonl", clean_ledger()), write(tmp_path, "h.jsonl", h100), "--root", ROOT, "--partial"
    )
    assert code == 0 and "accepted: not-served on 4-gpu-h100" in out, out


def test_baseline_and_allowlist_accept_a_runtime_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skipped = clean_ledger().replace(
        '"test": "registered/attention/test_dense_backend_guard.py::TestDenseBackend::test_decode", "status": "passed"',
        '"test": "registered/attention/test_dense_backend_guard.py::TestDenseBackend::test_decode", "status": "skipped", '
        '"reason": "needs sm90"',
    )
    ledger = write(tmp_path, "l.jsonl", skipped)
    code, out, _ = ledger_cli(capsys, ledger, "--root", ROOT)
    assert code == 1 and "error: silent-skip attention/test_dense_backend_guard.py::TestDenseBackend::test_decode" in out
    # A baseline entry for the class (as `specmatrix guards` writes it) covers the skips of its methods.
    entry = {"path": "attention/test_dense_backend_guard.py", "kind": "silent-skip", "runner": "4-gpu-b200"}
    entry |= {"test": "attention/test_dense_backend_guard.py::TestDenseBackend", "reason": "tracked", "expires": None}
    baseline = write(tmp_path, "b.json", json.dumps({"schema": "specmatrix.guards-baseline/1", "entries": [entry]}))
    code, out, _ = ledger_cli(capsys, ledger, "--root", ROOT, "--baseline", baseline)
    assert code == 0 and "accepted by baseline entry for attention/test_dense_backend_guard.py::TestDenseBackend: tracked" in out
    # The same entry for another runner does not.
    other = write(tmp_path, "o.json", baseline.read_text().replace('"4-gpu-b200"', '"8-gpu-b200"'))
    assert ledger_cli(capsys, ledger, "--root", ROOT, "--baseline", other)[0] == 1
    allow = write(
        tmp_path,
        "allow.toml",
        '[[allow]]\ntest = "attention/test_dense_backend_guard.py::*"\nreason = "sm90"\nexpires = 2999-01-01\nlink = "https://x/1"\n',
    )
    assert ledger_cli(capsys, ledger, "--root", ROOT, "--allow", allow)[0] == 0
    expired = write(tmp_path, "old.toml", allow.read_text().replace("2999", "2001"))
    assert ledger_cli(capsys, ledger, "--root", ROOT, "--allow", expired)[0] == 1


def test_the_allowlist_comes_from_the_option_cascade(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[tool.specmatrix] allowlist` applies to `ledger` as to the plugin; `--allowlist` (and the old `--allow`) too."""
    skipped = clean_ledger().replace(
        '"test": "registered/attention/test_dense_backend_guard.py::TestDenseBackend::test_decode", "status": "passed"',
        '"test": "registered/attention/test_dense_backend_guard.py::TestDenseBackend::test_decode", "status": "skipped", '
        '"reason": "needs sm90"',
    )
    ledger = write(tmp_path, "l.jsonl", skipped)
    write(
        tmp_path,
        "allow.toml",
        '[[allow]]\ntest = "attention/test_dense_backend_guard.py::*"\nreason = "sm90"\nexpires = 2999-01-01\nlink = "https://x/1"\n',
    )
    monkeypatch.chdir(tmp_path)
    assert ledger_cli(capsys, ledger, "--root", ROOT)[0] == 1
    write(tmp_path, "pyproject.toml", '[tool.specmatrix]\nallowlist = "allow.toml"\n')
    assert ledger_cli(capsys, ledger, "--root", ROOT)[0] == 0
    (tmp_path / "pyproject.toml").unlink()
    assert ledger_cli(capsys, ledger, "--root", ROOT, "--allowlist", tmp_path / "allow.toml") == (
        0,
        ledger_cli(capsys, ledger, "--root", ROOT, "--allowlist", tmp_path / "allow.toml")[1],
        "",
    )
    code, _, err = ledger_cli(capsys, ledger, "--root", ROOT, "--allow", tmp_path / "allow.toml")
    assert code == 0 and err == "specmatrix: warning: --allow is deprecated; use --allowlist FILE\n"


def test_a_claimed_runner_must_match_what_the_processes_saw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = write(tmp_path, "l.jsonl", clean_ledger(H100))
    code, out, err = ledger_cli(capsys, ledger, "--root", ROOT, "--runner", "4-gpu-b200")
    assert (code, out) == (2, "")
    assert err.startswith("specmatrix: error: ") and "--runner 4-gpu-b200 claimed" in err and "needs sm100, sees sm90" in err
    assert len(err.splitlines()) == 1


def test_a_machine_no_profile_fits_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a100 = {"source": "SPECMATRIX_DETECT", "gpus": 8, "capability": [8, 0], "name": "NVIDIA A100"}
    code, out, err = ledger_cli(capsys, write(tmp_path, "l.jsonl", clean_ledger(a100)), "--root", ROOT)
    assert (code, out) == (2, "")
    assert err.startswith(f"specmatrix: error: {tmp_path / 'l.jsonl'}:1: no runner profile fits this machine")
    assert err.rstrip().endswith("(or name the profile with --runner)") and len(err.splitlines()) == 1


def test_processes_without_runner_facts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unknown = {"source": "unknown"}
    ledger = write(tmp_path, "l.jsonl", clean_ledger(unknown))
    code, out, _ = ledger_cli(capsys, ledger, "--root", ROOT)
    assert code == 0 and "5 process(es) recorded no runner facts (unknown machine (unknown))" in out
    # --runner names the machine when the processes could not.
    assert "4-gpu-b200: 5/5 registered files ran" in ledger_cli(capsys, ledger, "--root", ROOT, "--runner", "4-gpu-b200")[1]


def test_a_later_record_of_the_process_names_the_machine_its_first_could_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The process record has no runner facts (cut, or written before detection); its test and exit records do.
    path = "registered/attention/test_dense_backend_guard.py"
    text = line("process", 7, {"source": "unknown"}, script=path, argv=[])
    text += line("test", 7, B200, file=path, test=f"{path}::TestDenseBackend::test_decode", status="skipped", reason="r")
    text += line("exit", 7, B200, status=0, how="end", tests=1)
    code, out, _ = ledger_cli(capsys, write(tmp_path, "l.jsonl", text), "--root", ROOT)
    assert code == 1 and "no runner facts" not in out and "skipped at runtime on 4-gpu-b200" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such ledger"),
        (b"\x00\x01\xff\xfe binary\n\x89PNG\r\n", "not a specmatrix ledger (no readable record; line 1: not UTF-8 text)"),
        (b"[" * 200_000 + b"\n", "line 1: JSON nested too deeply"),
        (b'{"ledger": 2, "kind": "test"}\n', 'not a specmatrix ledger record (want "ledger": 1)'),
        (b"x" * (2 * 1024 * 1024) + b"\n", "line longer than 1048576 bytes"),
    ],
)
def test_bad_ledgers_are_one_line_and_exit_2(
    content: bytes | None, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "l.jsonl"
    if content is not None:
        ledger.write_bytes(content)
    code, out, err = ledger_cli(capsys, ledger, "--root", ROOT)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and message in err


def test_bad_lines_among_good_ones_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = clean_ledger().encode()
    junk = b"x" * (1024 * 1024 + 10) + b"\n" + b"\xff\xfe\n" + b"[" * 100_000 + b"\n"
    ledger = write(tmp_path, "l.jsonl", junk + text + b'{"ledger":1,"run')
    code, out, _ = ledger_cli(capsys, ledger, "--root", ROOT)
    assert code == 0
    for expected in (
        "l.jsonl:1: line longer than 1048576 bytes",
        "l.jsonl:2: not UTF-8 text",
        "l.jsonl:3: JSON nested too deeply",
    ):
        assert expected in out
    assert "torn last line (not JSON" in out
    assert "5/5 registered files ran" in out


def test_missing_root_and_missing_ledger_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = write(tmp_path, "l.jsonl", clean_ledger())
    assert ledger_cli(capsys, ledger)[0:2] == (2, "")
    assert "--root DIR is required" in ledger_cli(capsys, ledger)[2]
    assert "no such file or directory" in ledger_cli(capsys, ledger, "--root", tmp_path / "nope")[2]
    assert "give at least one LEDGER" in ledger_cli(capsys, "--root", ROOT)[2]


def test_outputs_are_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = write(tmp_path, "l.jsonl", clean_ledger())
    md, js = tmp_path / "out" / "summary.md", tmp_path / "out" / "report.json"
    code, out, err = ledger_cli(capsys, ledger, "--root", ROOT, "--md", md, "--json", js, "--format", "json")
    assert code == 0
    assert json.loads(out) == json.loads(js.read_text()) and json.loads(out)["schema"] == "specmatrix.ledger-report/2"
    assert md.read_text().startswith("## Runtime skip ledger")
    # The old spellings keep working, each with one deprecation line naming its replacement.
    assert err.splitlines() == [
        "specmatrix: warning: --md FILE is deprecated; use --summary FILE",
        "specmatrix: warning: --json FILE is deprecated; use --format json --output FILE",
    ]


def test_new_spellings_write_the_same_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = write(tmp_path, "l.jsonl", clean_ledger())
    js = tmp_path / "report.json"
    code, out, err = ledger_cli(capsys, ledger, "--root", ROOT, "--format", "json", "--output", js)
    assert (code, out, err) == (0, "", "")
    assert json.loads(js.read_text())["schema"] == "specmatrix.ledger-report/2"


def test_the_step_summary_is_appended_not_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = write(tmp_path, "l.jsonl", clean_ledger())
    summary = write(tmp_path, "step_summary.md", "## an earlier step\n")
    for flag in ("--summary", "--md"):
        assert ledger_cli(capsys, ledger, "--root", ROOT, flag, summary)[0] == 0
    text = summary.read_text()
    assert text.startswith("## an earlier step\n")
    assert text.count("## Runtime skip ledger") == 2


def many_findings(count: int) -> LedgerReport:
    findings = tuple(
        ledger_finding(
            kind=LedgerFindingKind.SILENT_SKIP,
            path=f"a/test_{i}.py",
            line=3,
            test=f"a/test_{i}.py::T::test",
            runner="4-gpu-b200",
            message="skipped: 100% of it, a:b,c\nsecond line",
        )
        for i in range(count)
    )
    return LedgerReport(root="test/registered", ledgers=("l",), runners=(), findings=findings, processes=1, records=1)


def test_markdown_stays_short_with_details_collapsed() -> None:
    md = to_markdown(many_findings(500))
    assert len(md.splitlines()) < 100
    assert "<details><summary>500 failing, 500 in all</summary>" in md and "460 more in the JSON report." in md


def test_github_annotations_escape_per_the_toolkit() -> None:
    first = to_github(many_findings(1)).splitlines()[0]
    assert first == (
        "::error file=test/registered/a/test_0.py,line=3,title=specmatrix ledger (silent-skip)::"
        "a/test_0.py::T::test on 4-gpu-b200: skipped: 100%25 of it, a:b,c%0Asecond line"
    )
    odd = ledger_finding(kind=LedgerFindingKind.SILENT_SKIP, path="a,b:c%.py", line=1, test="t", runner="r", message="m")
    report = LedgerReport(root=".", ledgers=(), runners=(), findings=(odd,), processes=0, records=0)
    assert (
        to_github(report).splitlines()[0]
        == "::error file=a%2Cb%3Ac%25.py,line=1,title=specmatrix ledger (silent-skip)::t on r: m"
    )


def test_ledger_findings_carry_their_fingerprint_into_json_and_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = write(tmp_path, "run.ledger", file_run(CLEAN, 5, {"TestTritonBackend::test_graph_buffers": "skipped"}))
    root = FIXTURE_SUITE / "registered"
    code, out, _ = ledger_cli(capsys, ledger, "--root", root, "--runner", "4-gpu-b200", "--format", "json")
    assert code == 1
    prints = {f["fingerprint"] for f in json.loads(out)["findings"]}
    assert all(prints)
    _, out, _ = ledger_cli(capsys, ledger, "--root", root, "--runner", "4-gpu-b200", "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    assert {r["partialFingerprints"]["specmatrix/ledger/v1"] for r in results} == prints


def test_a_baseline_keyed_from_the_repository_root_accepts_a_runtime_skip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skipped = clean_ledger().replace(
        '"test": "registered/attention/test_dense_backend_guard.py::TestDenseBackend::test_decode", "status": "passed"',
        '"test": "registered/attention/test_dense_backend_guard.py::TestDenseBackend::test_decode", "status": "skipped", '
        '"reason": "needs sm90"',
    )
    ledger = write(tmp_path, "l.jsonl", skipped)
    # As `guards --write-baseline` writes it now: paths from the repository root (this checkout), not from --root.
    head = ROOT.resolve().relative_to(FIXTURE_SUITE.resolve().parents[2]).as_posix()
    entry = {"path": f"{head}/attention/test_dense_backend_guard.py", "kind": "silent-skip", "runner": "4-gpu-b200"}
    entry |= {"test": f"{head}/attention/test_dense_backend_guard.py::TestDenseBackend", "reason": "tracked"}
    baseline = write(tmp_path, "b.json", json.dumps({"schema": "specmatrix.baseline/2", "entries": [entry]}))
    code, out, _ = ledger_cli(capsys, ledger, "--root", ROOT, "--baseline", baseline)
    assert code == 0, out
    assert "accepted by baseline entry for attention/test_dense_backend_guard.py::TestDenseBackend: tracked" in out
