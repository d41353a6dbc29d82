"""Cost of the ledger hook: a 2,000-test unittest script with the hook on vs off, and interpreter start-up with the
hook installed but its variable unset vs an environment without the hook.

    python ci/bench_ledger.py [--tests 2000] [--repeat 21] [--startup-repeat 101] [--json FILE]

Two fresh venvs (no pip; a `.pth` puts this checkout and the current site-packages on their path): `hooked` gets the
hook through `python -m matrix ledger --install-hook`, `plain` does not. Runs are paired and interleaved (the order
inside each pair alternates) so that load from other processes on the machine hits both sides alike; the figures are
medians of wall time (and of CPU time, user + system, which load from other processes disturbs less) per run,
and the median and quartiles of the per-pair ratios. Targets: hook on / hook off <= 1.05 for the test
run; hooked / plain start-up ~1.00 (reported, judged against the pairs' own spread). Exits 1 when the test-run ratio
is above its target.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from matrix.core.atomic import write_text_atomic  # noqa: E402

TARGET_RUN = 1.05


def make_venv(where: Path, *, hook: bool) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, capture_output=True)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True, text=True
    ).stdout.strip()
    Path(purelib, "_specmatrix_checkout.pth").write_text(f"{REPO}\n{sysconfig.get_paths()['purelib']}\n", encoding="utf-8")
    if hook:
        subprocess.run([python, "-m", "matrix", "ledger", "--install-hook"], check=True, capture_output=True)
    return python


def test_script(count: int) -> str:
    body = "".join(f"    def test_{i:05d}(self):\n        self.assertEqual({i} + 1, {i + 1})\n" for i in range(count))
    return f"import unittest\n\n\nclass TestMany(unittest.TestCase):\n{body}\n\nif __name__ == '__main__':\n    unittest.main()\n"


def timed(argv: Sequence[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU user+system) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


Timings = list[tuple[float, float]]


def paired(
    a: tuple[Sequence[str], dict[str, str]], b: tuple[Sequence[str], dict[str, str]], repeat: int, cwd: Path, reset: Path | None
) -> tuple[Timings, Timings]:
    """Interleaved pairs (order alternating); `reset` is a ledger file emptied before each run so runs stay alike."""
    times_a: Timings = []
    times_b: Timings = []
    for i in range(repeat):
        order = [(a, times_a), (b, times_b)] if i % 2 == 0 else [(b, times_b), (a, times_a)]
        for (argv, env), out in order:
            if reset is not None and reset.exists():
                reset.unlink()
            out.append(timed(argv, env, cwd))
    return times_a, times_b


def summary(name: str, base: Timings, other: Timings) -> dict[str, float | str | int]:
    out: dict[str, float | str | int] = {"case": name, "pairs": len(base)}
    for label, index in (("wall", 0), ("cpu", 1)):
        b = [t[index] for t in base]
        o = [t[index] for t in other]
        ratios = [y / x for x, y in zip(b, o, strict=True) if x > 0]
        quartiles = statistics.quantiles(ratios, n=4)
        out |= {
            f"{label}_median_base_ms": round(statistics.median(b) * 1000, 2),
            f"{label}_median_other_ms": round(statistics.median(o) * 1000, 2),
            f"{label}_ratio_of_medians": round(statistics.median(o) / statistics.median(b), 4),
            f"{label}_median_pair_ratio": round(statistics.median(ratios), 4),
            f"{label}_pair_ratio_q1": round(quartiles[0], 4),
            f"{label}_pair_ratio_q3": round(quartiles[2], 4),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--startup-repeat", type=int, default=101)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        root = Path(tmp)
        hooked = make_venv(root / "hooked", hook=True)
        plain = make_venv(root / "plain", hook=False)
        script = root / "test_many.py"
        script.write_text(test_script(args.tests), encoding="utf-8")
        ledger = root / "ledger.jsonl"
        base_env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECMATRIX_", "PYTHON"))}
        on_env = {**base_env, "SPECMATRIX_LEDGER": str(ledger), "SPECMATRIX_DETECT": '{"gpus": 4, "capability": [10, 0]}'}
        off, on = paired(
            ([str(hooked), str(script)], base_env), ([str(hooked), str(script)], on_env), args.repeat, root, reset=ledger
        )
        lines = len(ledger.read_text(encoding="utf-8").splitlines()) if ledger.exists() else 0
        if lines != args.tests + 2:
            print(f"the hooked run wrote {lines} ledger lines, expected {args.tests + 2}", file=sys.stderr)
            return 2
        plain_start, hooked_start = paired(
            ([str(plain), "-c", "pass"], base_env), ([str(hooked), "-c", "pass"], base_env), args.startup_repeat, root, None
        )
    results = [
        summary(f"{args.tests}-test unittest script: hook on vs off", off, on),
        summary("python -c pass: hook installed, variable unset vs no hook", plain_start, hooked_start),
    ]
    print(f"{'case':<58} {'pairs':>5}  {'':4} {'base ms':>8} {'other ms':>8} {'ratio':>6}  pair ratio q1..q3")
    for r in results:
        for label in ("wall", "cpu"):
            print(
                f"{r['case'] if label == 'wall' else '':<58} {r['pairs'] if label == 'wall' else '':>5}  {label:4} "
                f"{r[label + '_median_base_ms']:>8} {r[label + '_median_other_ms']:>8} {r[label + '_median_pair_ratio']:>6}"
                f"  {r[label + '_pair_ratio_q1']}..{r[label + '_pair_ratio_q3']}"
            )
    if args.json is not None:
        doc = {"results": results, "cpus": os.cpu_count(), "load_average": os.getloadavg(), "tests": args.tests}
        write_text_atomic(args.json, json.dumps(doc, indent=2) + "\n")
    added = (float(results[0]["cpu_median_other_ms"]) - float(results[0]["cpu_median_base_ms"])) / args.tests * 1000
    print(f"CPU added per test by the hook (difference of medians / tests): {added:.1f} us")
    ratio = float(results[0]["wall_median_pair_ratio"])
    ok = ratio <= TARGET_RUN
    print(
        f"hook on / off, wall: {ratio} (target <= {TARGET_RUN}): {'ok' if ok else 'ABOVE TARGET'}; "
        f"load average now {os.getloadavg()}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
