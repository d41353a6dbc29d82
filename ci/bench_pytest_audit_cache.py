"""Time `specmatrix pytest-audit` with its results cache: cold, warm, and warm with one test file touched or edited.

Usage: python ci/bench_pytest_audit_cache.py TREE [--schedule-file FILE] [--repeat 5] [--format text|json] [--cpus 0,1]
       python ci/bench_pytest_audit_cache.py --git-dir REPO.git [REV] ...
The output format is text by default, as the pre-commit hook runs it (`.pre-commit-hooks.yaml`); `--format json`
adds writing the JSON report, which lists every undetermined test. The tree is copied to a scratch folder (it is
edited there). Each command runs in a fresh interpreter; one untimed
run first writes the package's bytecode and warms the page cache. Then, each `--repeat` times (medians printed):

- `no-cache`: `--no-cache`, the audit as it was before the cache;
- `cold`: `--cache-dir` an empty folder each time (everything read, audited and written);
- `warm`: the same cache folder again, nothing changed;
- `touched`: one test file's modification time changed (its content is not);
- `edited`: one test file's content changed (a line appended), so its audit is made again.

The file touched and edited is `--edit FILE`, else the largest test file no other file's audit reads (a module of
shared test helpers named `test_*.py` re-audits every file that imports it: `--edit` it to time that).

For each: wall and CPU seconds (user+sys of the command and its workers), the peak RSS of its largest process, the
1-minute load average before it started; then the warm figures over the cold ones, and the single-core
parse-and-discard yardstick of `bench_pytest_audit.py` on the same tree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci.bench_pytest_audit import parse_yardstick  # noqa: E402
from matrix.pytest_suites.cache import parse_entries  # noqa: E402


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One run: wall and CPU seconds, peak RSS (MB) of its largest process, load before, exit status."""

    wall: float
    cpu: float
    rss: float
    load: float
    code: int


def run(command: list[str], cpus: set[int]) -> Sample:
    load = os.getloadavg()[0]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "SPECMATRIX_NO_CACHE")}
    t0 = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,  # noqa: PLW1509 (no threads here)
    )
    assert process.stderr is not None
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - t0
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        sys.stderr.write(err.decode(errors="replace"))
        raise SystemExit(f"exit {process.returncode}: {' '.join(command)}")
    # The rusage of a waited child covers the children it waited for (its workers): CPU summed, RSS the largest.
    return Sample(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime,
        rss=usage.ru_maxrss / 1024,
        load=load,
        code=process.returncode,
    )


def edit_target(tree: Path, cache: Path, named: str | None) -> Path:
    """The test file the edits go to: `named`, else the largest test file whose audit no other file's reads (a
    leaf: editing it re-audits that one file), found in the entries an earlier run stored in `cache`."""
    if named is not None:
        return tree / named
    readers: dict[str, int] = {}
    own: set[str] = set()
    for entries in cache.glob("pytest-audit-*.cache"):
        for _, body in parse_entries(entries.read_bytes()).values():
            doc = json.loads(body)
            if doc.get("audit") is None:
                continue
            own.add(doc["path"])
            for read in doc["reads"]:
                readers[read[0]] = readers.get(read[0], 0) + 1
    leaves = [tree / p for p in sorted(own) if readers.get(p) == 1 and (tree / p).is_file()]
    return max(leaves, key=lambda p: p.stat().st_size)


def summary(name: str, samples: list[Sample]) -> tuple[float, float]:
    wall = statistics.median(s.wall for s in samples)
    cpu = statistics.median(s.cpu for s in samples)
    rss = max(s.rss for s in samples)
    loads = ", ".join(f"{s.load:.2f}" for s in samples)
    walls = " ".join(f"{s.wall:.2f}" for s in samples)
    print(f"{name:9} wall median {wall:.3f} s ({walls}); cpu median {cpu:.3f} s; peak RSS {rss:.0f} MB; load before {loads}")
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("tree", nargs="?", type=Path)
    source.add_argument("--git-dir", type=Path)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--schedule-file", type=Path, help="relative to this checkout, as the CLI takes it")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=None, help="pytest-audit --jobs (default: its own)")
    parser.add_argument(
        "--format", default="text", choices=("text", "json"), help="the output format (default: text, the hook's)"
    )
    parser.add_argument("--edit", help="the test file to touch and edit, relative to the tree (default: the largest leaf)")
    parser.add_argument("--cpus", default="", help="comma-separated CPU ids to pin the runs to (default: no pinning)")
    args = parser.parse_args(argv)
    cpus = {int(c) for c in args.cpus.split(",") if c.strip()}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    with tempfile.TemporaryDirectory(prefix="specmatrix-bench-cache-") as scratch:
        tree = Path(scratch) / "tree"
        if args.git_dir is not None:
            rev = subprocess.run(
                ["git", f"--git-dir={args.git_dir}", "rev-parse", args.rev], capture_output=True, text=True, check=True
            ).stdout.strip()
            tree.mkdir()
            # Extracted by `tar` from a pipe, not in this process: Linux counts the RSS a process had when it forked
            # into its child's peak RSS (`ru_maxrss` survives exec), so an archive held here would show as the
            # audit's memory.
            archive = subprocess.Popen(["git", f"--git-dir={args.git_dir}", "archive", rev], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", str(tree)], stdin=archive.stdout, check=True)
            if archive.wait() != 0:
                raise SystemExit(f"git archive {rev} failed")
            label = f"{args.git_dir} {rev}"
        else:
            shutil.copytree(args.tree, tree, symlinks=True)
            label = str(args.tree)
        command = [sys.executable, "-m", "matrix", "pytest-audit", str(tree), "--format", args.format]
        if args.schedule_file is not None:
            command += ["--schedule-file", str(args.schedule_file)]
        if args.jobs is not None:
            command += ["--jobs", str(args.jobs)]
        print(
            f"specmatrix {commit.stdout.strip()} on {label}; {os.cpu_count()} CPUs"
            + (f", pinned to {sorted(cpus)}" if cpus else "")
        )
        print("+ " + " ".join(command) + " [--no-cache | --cache-dir DIR]", flush=True)
        cache = Path(scratch) / "cache"
        first = Path(scratch) / "first"
        run([*command, "--cache-dir", str(first)], cpus)  # bytecode written, page cache warm
        edited = edit_target(tree, first, args.edit)
        print(f"touched and edited: {edited.relative_to(tree)}")
        results: dict[str, list[Sample]] = {k: [] for k in ("no-cache", "cold", "warm", "touched", "edited")}
        for k in range(args.repeat):
            results["no-cache"].append(run([*command, "--no-cache"], cpus))
            results["cold"].append(run([*command, "--cache-dir", str(Path(scratch) / f"cold-{k}")], cpus))
        run([*command, "--cache-dir", str(cache)], cpus)
        for _ in range(args.repeat):
            results["warm"].append(run([*command, "--cache-dir", str(cache)], cpus))
        for k in range(args.repeat):
            stamp = time.time_ns() - (k + 10) * 3_000_000_000  # settled: older than the racily-clean window
            os.utime(edited, ns=(stamp, stamp))
            results["touched"].append(run([*command, "--cache-dir", str(cache)], cpus))
        for k in range(args.repeat):
            with edited.open("a", encoding="utf-8") as handle:
                handle.write(f"\n# edited for the benchmark, {k}\n")
            results["edited"].append(run([*command, "--cache-dir", str(cache)], cpus))
        files, size, parse_wall, parse_cpu = parse_yardstick(tree)
    medians = {name: summary(name, samples) for name, samples in results.items()}
    cold_wall, cold_cpu = medians["no-cache"]
    for name in ("warm", "touched", "edited"):
        wall, cpu = medians[name]
        print(f"{name} / no-cache cold: wall {wall / cold_wall:.3f}x, cpu {cpu / cold_cpu:.3f}x")
    print(f"ast.parse of {files} files ({size / 1e6:.1f} MB), one core: wall {parse_wall:.2f} s, cpu {parse_cpu:.2f} s")
    print(f"no-cache cold / parse: wall {cold_wall / parse_wall:.2f}x, cpu {cold_cpu / parse_cpu:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
