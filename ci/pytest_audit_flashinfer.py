"""Audit a flashinfer checkout's pytest suite against its PR Test workflow and write results/pytest-audit.md.

Usage:
    python ci/pytest_audit_flashinfer.py --checkout ~/src/flashinfer
    python ci/pytest_audit_flashinfer.py --git-dir /path/to/flashinfer.git     # a bare clone: HEAD is extracted
Options: --schedule FILE (default ci/schedules/flashinfer-pr-test.toml), --out FILE (default results/pytest-audit.md),
--jobs N (default 2), --commit TEXT (the commit an extracted --checkout came from). What CI runs comes from the
checkout's workflows and the scripts they run, merged with the declared schedule (PR Test builds its GPU matrix at
run time); the page records the commit, the command and every count, so anyone can rerun it on their checkout.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from matrix.core.atomic import write_text_atomic  # noqa: E402
from matrix.core.runner_files import load_runners  # noqa: E402
from matrix.core.writers import md_table  # noqa: E402
from matrix.guards.model import GuardFindingKind  # noqa: E402
from matrix.pytest_suites.audit import PytestAuditReport  # noqa: E402
from matrix.pytest_suites.render import count_table, findings_table, summary_lines  # noqa: E402
from matrix.pytest_suites.run import AuditInput, run_audit  # noqa: E402

# The workflows and the container wrapper (`ci/bash.sh`) the jobs hand their scripts to: the walker reads them; the
# Jenkinsfile is listed as CI that is not read (matrix/data/external_ci.toml).
PATHS = ("tests", "scripts", "pytest.ini", "pyproject.toml", ".github/workflows", "ci/bash.sh", "Jenkinsfile")


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True).stdout.strip()


def extract(git_dir: Path, into: Path) -> str:
    """HEAD's test tree, scripts and pytest settings into `into`; returns the commit and its date."""
    commit = _git(git_dir, "log", "-1", "--format=%H %cs")
    names = set(_git(git_dir, "ls-tree", "--name-only", "HEAD").splitlines()) | {".github"}
    wanted = [p for p in PATHS if p.split("/")[0] in names]
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", "HEAD", *wanted], check=True, capture_output=True).stdout
    tar_path = into / "tree.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into / "tree", filter="data")
    return commit


def page(report: PytestAuditReport, commit: str, command: str, seconds: float) -> str:
    never = report.of_kind(GuardFindingKind.NEVER_RUNS)
    skips = report.of_kind(GuardFindingKind.SILENT_SKIP)
    classes = {id(f.finding): f.guard_class for f in report.findings}
    folders = Counter(f.finding.path.split("/")[1] if f.finding.path.count("/") > 1 else "(top)" for f in skips)
    lines = [
        "# pytest audit of flashinfer's CI",
        "",
        "Tests of [flashinfer](https://github.com/flashinfer-ai/flashinfer) that its CI sends only to runners where",
        "they skip, found statically by `specmatrix pytest-audit` (nothing is imported or run). What CI runs comes",
        "from two places. The audit walks the checkout's `.github/workflows` and the shell scripts their steps run",
        "(also a script handed to the container wrapper `ci/bash.sh`): that reads the Nightly Release job",
        "`test-nightly-build` (sm86, five shards, `scripts/task_test_nightly_build.sh` ->",
        "`scripts/task_jit_run_tests_part${TEST_SHARD}.sh`, `FLASHINFER_DISABLE_JIT=1`). PR Test",
        "(`.github/workflows/pr-test.yml`) builds its GPU matrix with `jq` and runs `./scripts/${TEST_SCRIPT}`",
        "from `matrix.script`: the walker evaluates that step's jq programs with the jq library and reads each",
        "leg's script (A10G `sm86` `scripts/task_jit_run_tests_part{1..5}.sh`, T4 `sm75` part 3).",
        "`ci/schedules/flashinfer-pr-test.toml` declares the two legs no reader follows (H100 `h100`",
        "`scripts/task_run_unit_tests.sh` hands `tests/` to a Python runner; the moe_ep unit run), and",
        "`ci/check_flashinfer_schedule.py` checks it against the matrix the workflow builds.",
        "Runner profiles: `matrix/data/runners.toml` (t4 sm75, a10g sm86, h100 sm90, CUDA 12.9 of the cu129",
        "image). Predicates: `matrix/data/predicates/` (torch, flashinfer `flashinfer/utils.py`).",
        "",
        f"- flashinfer commit: `{commit}`",
        f"- command: `{command}`",
        f"- this run: {seconds:.1f} s wall on this machine (see `ci/bench_pytest_audit.py` for the timing figures)",
        "",
        "## Counts",
        "",
        *(f"- {line}" for line in summary_lines(report)),
        "",
        *count_table(report),
        "",
        "A test counts once (the class is the guard's on the first runner). Undetermined tests have a guard the",
        "audit cannot decide on some runner (an `importorskip`, a helper it does not model, a parametrized value);",
        "they are never reported as skipping. A parametrized test whose cases skip per value (a `pytest.param`",
        "skip mark, a body guard reading a parameter) counts once per case (`test_f[id]`, pytest's ids) where all",
        "its values are literal, up to 64 cases; past that it is one item, with a note under the assumptions.",
        "",
        "Silent skips by test folder: " + ", ".join(f"`{k}` {v}" for k, v in folders.most_common()) + ".",
        "",
        f"## Files that never run in this CI ({len(never)})",
        "",
        *md_table(findings_table(classes, files=True), [f.finding for f in never]),
        "",
        f"## Tests that skip on every runner CI sends them to ({len(skips)})",
        "",
        "<details><summary>the full list</summary>",
        "",
        *md_table(findings_table(classes, files=False), [f.finding for f in skips]),
        "",
        "</details>",
        "",
        "## What the audit did not read",
        "",
        *(f"- `{u.origin}`: {u.reason}" for u in report.unread),
        "",
        "The H100 leg of the PR Test matrix is declared in the schedule file; so is the moe_ep unit run",
        "(`tests/moe_ep/run_tests.sh unit`, its `run_unit()`) of the PR jobs. The nightly shard 1 calls the same",
        "`run_unit()`, which is listed above and not declared. Assumptions taken:",
        "",
        *(f"- {a}" for a in report.assumptions),
        "",
    ]
    return "\n".join(lines)


# Sections of the page written by other scripts (`ci/audit_trees.py`) start at this line and are kept.
KEPT = "<!-- kept: sections below are not written by ci/pytest_audit_flashinfer.py -->"


def kept_sections(path: Path) -> str:
    """The page's kept tail (from the KEPT line on), so that regenerating the flashinfer part does not drop it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return ""
    at = text.find(KEPT)
    return "" if at < 0 else "\n" + text[at:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkout", type=Path, help="a flashinfer checkout (work tree)")
    source.add_argument("--git-dir", type=Path, help="a flashinfer git directory (bare clone); HEAD is audited")
    parser.add_argument("--schedule", type=Path, default=ROOT / "ci/schedules/flashinfer-pr-test.toml")
    parser.add_argument("--out", type=Path, default=ROOT / "results/pytest-audit.md")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--commit", help="the commit a --checkout without git metadata was extracted from (shown)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="specmatrix-flashinfer-") as scratch:
        if args.git_dir is not None:
            commit = extract(args.git_dir, Path(scratch))
            tree = Path(scratch) / "tree"
        else:
            tree = args.checkout
            commit = subprocess.run(
                ["git", "-C", str(tree), "log", "-1", "--format=%H %cs"], capture_output=True, text=True, check=False
            ).stdout.strip() or (f"{args.commit} (an extracted tree of that commit)" if args.commit else "(not a git checkout)")
        started = time.perf_counter()
        report = run_audit(AuditInput(root=tree, schedule_files=(args.schedule,)), load_runners(), jobs=args.jobs)
        seconds = time.perf_counter() - started
    schedule = args.schedule.resolve().relative_to(ROOT) if args.schedule.resolve().is_relative_to(ROOT) else args.schedule
    command = f"specmatrix pytest-audit FLASHINFER --schedule-file {schedule}"
    write_text_atomic(args.out, page(report, commit, command, seconds) + kept_sections(args.out))
    print("\n".join(summary_lines(report)))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
