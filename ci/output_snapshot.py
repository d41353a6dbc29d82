"""Every finding command's output in every format, written to a folder: run it before and after a change to the
output layer and compare the two folders with `cmp` (`--compare OLD NEW`).

    python ci/output_snapshot.py OUT [--sglang TREE] [--flashinfer TREE]
    python ci/output_snapshot.py --compare OLD NEW

Runs `guards`, `pytest-audit`, `schedule`, `ledger`, `audit`, `coverage` and `report` over this checkout's fixtures
(the guard fixture suite, the ledger fixture suite with a ledger written here, a run report of
`examples/own-matrix` written by its own tests, a small pytest project written here) and, when given, over an sglang
tree (`test/registered`) and a flashinfer tree. Each output is one file named after its command line; the exit code
and stderr go beside it (`.rc`, `.err`). Paths of the scratch folder and of this checkout are replaced by `<tmp>` and `<repo>` so
two runs (two checkouts) compare. (`timeline` is left out: it prints the run's wall times.)
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
B200 = {"source": "SPECMATRIX_DETECT", "gpus": 4, "capability": [10, 0], "name": "NVIDIA B200"}
FORMATS = ("text", "json", "md", "github", "sarif", "junit")


def run_own(project: Path, report: Path) -> None:
    """The example project's tests on the cpu runner, its run report written to `report`."""
    command = [sys.executable, "-m", "pytest", "tests", "-q", "-p", "no:cacheprovider", "--matrix-runner", "cpu"]
    subprocess.run(
        [*command, "--matrix-report", str(report)],
        cwd=project,
        capture_output=True,
        check=False,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def ledger_text() -> str:
    def rec(kind: str, pid: int, **fields: object) -> str:
        return json.dumps({"ledger": 1, "runner": B200, "kind": kind, **fields, "pid": pid, "time": 1.0}) + "\n"

    runs = {
        "registered/attention/test_clean_backends.py": {"TestTritonBackend::test_graph_buffers": "skipped"},
        "registered/spec/test_main_exit_skip.py": {"TestDraftRunner::test_draft_tokens": "passed"},
    }
    text = ""
    for pid, (path, tests) in enumerate(runs.items(), start=10):
        text += rec("process", pid, script=path, argv=["-f"])
        for test, status in tests.items():
            extra = {"reason": "no flag"} if status == "skipped" else {}
            text += rec("test", pid, file=path, test=f"{path}::{test}", status=status, **extra)
        text += rec("exit", pid, status=0, how="sys.exit", tests=len(tests))
    return text


def pytest_project(root: Path) -> Path:
    (root / ".github" / "workflows").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / ".github" / "workflows" / "ci.yml").write_text(
        "on: push\njobs:\n  unit:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest tests/test_a.py\n",
        encoding="utf-8",
    )
    (root / "tests" / "test_a.py").write_text(
        "import sys\nimport pytest\n\n\n@pytest.mark.skipif(sys.platform == 'linux', reason='not on linux')\n"
        "def test_linux_only_skip():\n    pass\n\n\ndef test_plain():\n    pass\n",
        encoding="utf-8",
    )
    (root / "tests" / "test_b.py").write_text("def test_never_scheduled():\n    pass\n", encoding="utf-8")
    return root


def scrubbed(text: str, tmp: Path) -> str:
    for path, shown in ((str(tmp.resolve()), "<tmp>"), (str(tmp), "<tmp>"), (str(REPO), "<repo>")):
        text = text.replace(path, shown)
    return text


def keep(written: Path, name: Path, tmp: Path) -> None:
    """A file a command wrote, kept beside the outputs with the scratch folder's and checkout's paths scrubbed."""
    name.write_text(scrubbed(written.read_text(encoding="utf-8"), tmp), encoding="utf-8")


def run(out: Path, name: str, argv: list[str], cwd: Path, tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECMATRIX_", "GITHUB_"))}
    env["SPECMATRIX_CACHE_DIR"] = str(tmp / "cache")
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-m", "matrix", *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )
    (out / name).write_text(scrubbed(done.stdout, tmp), encoding="utf-8")
    (out / f"{name}.rc").write_text(f"{done.returncode}\n", encoding="utf-8")
    (out / f"{name}.err").write_text(scrubbed(done.stderr, tmp), encoding="utf-8")


def snapshot(out: Path, sglang: Path | None, flashinfer: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        suite = REPO / "tests" / "guards" / "fixture_suite"
        for fmt in FORMATS:
            for show in ("warning", "info"):
                run(
                    out,
                    f"guards-fixture-{show}.{fmt}",
                    ["guards", str(suite), "--no-workflows", "--show", show, "--format", fmt],
                    REPO,
                    tmp,
                )
        run(
            out,
            "guards-fixture-write-baseline",
            ["guards", str(suite), "--no-workflows", "--write-baseline", str(tmp / "b.json")],
            REPO,
            tmp,
        )
        keep(tmp / "b.json", out / "guards-fixture-baseline.json", tmp)
        for fmt in FORMATS:
            run(
                out,
                f"guards-fixture-baselined.{fmt}",
                ["guards", str(suite), "--no-workflows", "--baseline", str(tmp / "b.json"), "--format", fmt],
                REPO,
                tmp,
            )
        run(out, "guards-fixture-summary", ["guards", str(suite), "--no-workflows", "--summary", str(tmp / "s.md")], REPO, tmp)
        keep(tmp / "s.md", out / "guards-fixture-summary.md", tmp)

        project = pytest_project(tmp / "proj")
        for fmt in FORMATS:
            run(out, f"pytest-audit-fixture.{fmt}", ["pytest-audit", str(project), "--format", fmt], REPO, tmp)
            run(out, f"schedule-fixture.{fmt}", ["schedule", str(project), "--format", fmt], REPO, tmp)

        ledger = tmp / "run.ledger"
        ledger.write_text(ledger_text(), encoding="utf-8")
        lsuite = REPO / "tests" / "ledger" / "fixture_suite" / "registered"
        for fmt in FORMATS:
            run(
                out,
                f"ledger-fixture.{fmt}",
                ["ledger", str(ledger), "--root", str(lsuite), "--runner", "4-gpu-b200", "--format", fmt],
                REPO,
                tmp,
            )

        own = tmp / "own"
        shutil.copytree(REPO / "examples" / "own-matrix", own)
        reports = tmp / "reports"
        run_own(own, reports / "cpu.json")
        # A second run with a planted test that skips a cell the matrix says must run: findings in every output.
        (own / "tests" / "test_planted.py").write_text(
            "import pytest\n\n\ndef test_planted(matrix_cell):\n    if matrix_cell.seqlen == 128:\n"
            "        pytest.skip('flaky on CI')\n",
            encoding="utf-8",
        )
        run_own(own, reports / "planted" / "cpu.json")
        for name, report in (("own", reports / "cpu.json"), ("planted", reports / "planted" / "cpu.json")):
            for fmt in FORMATS:
                run(out, f"audit-{name}.{fmt}", ["audit", str(report), "--format", fmt], own, tmp)
                cov = tmp / f"cov-{name}-{fmt}"
                run(
                    out,
                    f"coverage-{name}.{fmt}",
                    ["coverage", str(report), "--no-heatmap", "--out", str(cov), "--format", fmt],
                    own,
                    tmp,
                )
                for written in ("coverage.md", "coverage.json", "summary.md"):
                    if (cov / written).is_file():
                        keep(cov / written, out / f"coverage-{name}.{fmt}.{written}", tmp)
        run(out, "report-own-html", ["report", "--html", str(tmp / "page.html"), str(reports / "cpu.json")], own, tmp)

        if sglang is not None:
            registered = sglang / "test" / "registered"
            for fmt in FORMATS:
                run(out, f"guards-sglang.{fmt}", ["guards", str(registered), "--format", fmt], REPO, tmp)
            run(out, "guards-sglang-info.json", ["guards", str(registered), "--show", "info", "--format", "json"], REPO, tmp)
            for fmt in ("text", "json"):
                run(out, f"schedule-sglang.{fmt}", ["schedule", str(sglang), "--format", fmt], REPO, tmp)
        if flashinfer is not None:
            for fmt in FORMATS:
                run(out, f"pytest-audit-flashinfer.{fmt}", ["pytest-audit", str(flashinfer), "--format", fmt], REPO, tmp)
            for fmt in ("text", "json"):
                run(out, f"schedule-flashinfer.{fmt}", ["schedule", str(flashinfer), "--format", fmt], REPO, tmp)


def compare(old: Path, new: Path) -> int:
    """Names of outputs that differ, appear or vanish; exit 1 when any does."""
    names = sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()})
    changed = 0
    for name in names:
        a, b = old / name, new / name
        if not a.exists() or not b.exists():
            print(f"{'only in new' if b.exists() else 'only in old'}: {name}")
            changed += 1
        elif not filecmp.cmp(a, b, shallow=False):
            print(f"differs: {name}")
            changed += 1
    print(f"{len(names) - changed} identical, {changed} changed")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--sglang", type=Path)
    parser.add_argument("--flashinfer", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("OLD", "NEW"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("OUT is required")
    snapshot(args.out, args.sglang, args.flashinfer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
