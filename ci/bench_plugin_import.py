"""What the pytest11 entry point costs a pytest run that never uses the matrix.

    python ci/bench_plugin_import.py [--pairs 15] [--tests 200]

1. `python -X importtime -c "import pytest; import matrix.plugin"`: the cumulative import time of
   `matrix.plugin` once pytest is loaded (what the entry point adds), median of `--pairs` runs.
2. Paired runs of a generated, unrelated suite of `--tests` trivial tests (several modules, parametrized
   tests, a fixture) with `-p no:specmatrix` and with the plugin loaded, alternating which goes first;
   the medians of the per-pair differences in CPU time (user + system of the pytest process) and wall time.
   CPU time is the judged figure: on a shared machine wall time swings by hundreds of milliseconds per run.

Target: the median paired CPU-time difference is at most 20 ms; exits 1 above it.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

TARGET_MS = 20.0
_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)")


def plugin_import_ms() -> float:
    """Cumulative microseconds `import matrix.plugin` reports under -X importtime, after pytest is imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import pytest; import matrix.plugin"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in proc.stderr.splitlines():
        match = _IMPORT_LINE.match(line)
        if match and match.group(3) == "matrix.plugin":
            return int(match.group(2)) / 1000
    raise SystemExit("matrix.plugin missing from -X importtime output")


def plugin_modules() -> list[str]:
    """The matrix modules an unengaged pytest process imports (the audit machinery must not be among them)."""
    code = "import pytest, sys; import matrix.plugin; print(' '.join(sorted(m for m in sys.modules if m.startswith('matrix'))))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def write_suite(root: Path, tests: int) -> None:
    """An unrelated suite: modules of plain tests, parametrized tests and a fixture, nothing about the matrix."""
    per_module = 20
    (root / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef numbers():\n    return list(range(10))\n", encoding="utf-8"
    )
    for index in range(tests // per_module):
        body = textwrap.dedent(
            f"""
            import pytest

            @pytest.mark.parametrize("value", range({per_module // 2}))
            def test_param_{index}(value):
                assert value * 2 >= value

            class TestThings{index}:
            """
        )
        body += "".join(
            f"    def test_thing_{k}(self, numbers):\n        assert sum(numbers) == 45\n\n" for k in range(per_module // 2)
        )
        (root / f"test_module_{index:03d}.py").write_text(body, encoding="utf-8")


def run_suite(root: Path, *extra: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one pytest process over the suite."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECMATRIX_", "PYTEST_"))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"the generated suite failed:\n{proc.stdout[-2000:]}")
    if "specmatrix" in proc.stdout:
        raise SystemExit("the unrelated suite engaged the audit; the benchmark is measuring the wrong thing")
    return elapsed, cpu


def _median_diff_ms(on: list[float], off: list[float]) -> tuple[float, float, float]:
    diffs = sorted((a - b) * 1000 for a, b in zip(on, off, strict=True))
    return statistics.median(diffs), diffs[len(diffs) // 4], diffs[3 * len(diffs) // 4]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=15)
    parser.add_argument("--tests", type=int, default=200)
    args = parser.parse_args()

    imports = sorted(plugin_import_ms() for _ in range(args.pairs))
    modules = plugin_modules()
    median_import = statistics.median(imports)
    print(f"import matrix.plugin after pytest: median {median_import:.1f} ms (min {imports[0]:.1f}, max {imports[-1]:.1f})")
    print(f"matrix modules loaded by an unengaged run: {', '.join(modules)}")

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_suite(root, args.tests)
        run_suite(root)  # warm the file cache and the bytecode of both variants
        run_suite(root, "-p", "no:specmatrix")
        runs: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
        for pair in range(args.pairs):
            order = [("off", ("-p", "no:specmatrix")), ("on", ())]
            if pair % 2:
                order.reverse()
            for name, extra in order:
                runs[name].append(run_suite(root, *extra))
    wall = {k: [w for w, _ in v] for k, v in runs.items()}
    cpu = {k: [c for _, c in v] for k, v in runs.items()}
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in ("off", "on")}
    print(
        f"{args.tests}-test unrelated suite, {args.pairs} pairs: -p no:specmatrix median wall {med['off'][0]:.3f} s "
        f"/ CPU {med['off'][1]:.3f} s; with the plugin wall {med['on'][0]:.3f} s / CPU {med['on'][1]:.3f} s"
    )
    wall_diff = _median_diff_ms(wall["on"], wall["off"])
    median_diff, low, high = _median_diff_ms(cpu["on"], cpu["off"])
    print(
        f"paired wall difference (plugin - no plugin): median {wall_diff[0]:+.1f} ms "
        f"(quartiles {wall_diff[1]:+.1f} / {wall_diff[2]:+.1f})"
    )
    print(
        f"paired CPU difference (plugin - no plugin): median {median_diff:+.1f} ms (quartiles {low:+.1f} / {high:+.1f}); "
        f"target <= {TARGET_MS:.0f} ms"
    )
    return 0 if median_diff <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
