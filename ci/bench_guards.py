"""Time `specmatrix guards` on a generated tree of registered test files, cold (empty cache) and warm.

    python ci/bench_guards.py [--files 1500] [--repeat 3] [--jobs N] [--cold-budget 2.5] [--warm-budget 0.3]
    python ci/bench_guards.py --keep DIR [--no-hostile]     # write the tree to DIR and stop
    python ci/bench_guards.py --workflows REPO               # also time reading REPO's workflows (cold and warm)
    python ci/bench_guards.py --tree DIR                     # time an existing tree instead (sglang's test/registered)

The tree mixes every idiom the audit reads: module, class and method guards; helpers of the file itself
(tuple-unpacked capability, early returns), local redefinitions of imported predicates, decorator
factories, `__main__` blocks that print a skip and exit 0, try/except ImportError fallbacks, CI facts
(is_in_ci, is_in_amd_ci, min(4, device_count)), AMD/NPU/XPU registrations (an NPU one with an empty
suite and disabled=), unconditional skips, nightly flags, and a few hostile guards (a 500-term sum,
500 stacked `not`s, a 4,000-digit literal squared, a squaring chain). Each run is a fresh interpreter,
as a user would start it; the figures are wall seconds (min and median of the repeats) and CPU seconds.
It also times a single-core `ast.parse` of the same files in a fresh interpreter (the yardstick of the cold
figure), and with `--workflows` the same audit with the schedule of REPO read (cold: no schedule cached, the
results cache filled by one untimed run first; warm).
Exit 1 when the median cold or warm run is over its budget.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITES = (
    'stage="base-b", runner_config="4-gpu-b200"',
    'suite="stage-b-test-1-gpu-large"',
    'suite="base-b-test-1-gpu-small"',
    'suite="base-c-test-8-gpu-h200"',
    'suite="nightly-4-gpu-b200", nightly=True',
    'suite="base-b-kernel-unit-test-4-gpu-b200"',
)
OTHER_PLATFORMS = (
    'register_amd_ci(est_time=60, suite="stage-b-test-1-gpu-small-amd")',
    'register_npu_ci(est_time=400, suite="", nightly=True, disabled="no NPU runner yet")',
    'register_xpu_ci(est_time=90, suite="per-commit-xpu")',
    "",
    "",
)
CLASS_GUARDS = (
    "@unittest.skipIf(not (is_sm90_supported() or is_sm100_supported() or is_sm120_supported()), 'arch')",
    "@unittest.skipUnless(torch.cuda.is_available(), 'needs CUDA')",
    "@unittest.skipIf(torch.cuda.device_count() < 2, 'needs 2 GPUs')",
    "@unittest.skipIf(is_hip(), 'CUDA only')",
    "@unittest.skipUnless(_IS_BLACKWELL, 'trtllm-gen')",
    "@unittest.skipUnless(_helper_sm120(), 'consumer Blackwell')",
    "@unittest.skipUnless(_arch_ok(), 'tma multicast')",
    "@unittest.skipUnless(is_sm100_supported(), 'local redefinition')",
    "@requires_major(9)",
    "@unittest.skipIf(is_in_ci(), 'too slow for CI')",
    "@unittest.skipIf(TP_SIZE < 4, 'needs 4 GPUs')",
    "@unittest.skipIf(fast_plan is None, 'optional import')",
    "@unittest.skip('flaky')",
    "",
)
METHOD_GUARDS = (
    "        if get_device_sm() < 90:\n            self.skipTest('sm90+')\n",
    "        if torch.cuda.get_device_capability() < (10, 0):\n            self.skipTest('sm100+')\n",
    "        if is_in_amd_ci():\n            self.skipTest('hangs on MI300')\n",
    "",
    "",
)
HELPERS = """
def _helper_sm120():
    major, _ = torch.cuda.get_device_capability()
    return major == 12


def _arch_ok():
    if not torch.cuda.is_available():
        return False
    sm = get_device_sm()
    if sm >= 100:
        return True
    return False


def requires_major(major):
    return unittest.skipUnless(torch.cuda.get_device_capability()[0] == major, "arch")
"""
REDEFINITION = """
def is_sm100_supported():
    return get_device_sm() in (100, 103)
"""
HOSTILE = (
    "G = get_device_sm() " + "+ 1 " * 499 + "> 0",
    "G = " + "not " * 500 + "get_device_sm()",
    "A = " + "9" * 4000 + "\nG = A * A > get_device_sm()",
    "A = 7\nA1 = A * A\n" + "".join(f"A{i} = A{i - 1} * A{i - 1}\n" for i in range(2, 27)) + "G = A26 > 0",
)


def test_file(rng: random.Random, index: int) -> str:
    """One synthetic registered test module (~150 lines)."""
    lines = [
        f'"""Synthetic attention test module {index}."""',
        "",
        "import sys",
        "import unittest",
        "",
        "import pytest",
        "import torch",
        "",
        "from sglang.srt.utils import get_device_sm, is_blackwell, is_hip",
        "from sglang.srt.utils import is_sm90_supported, is_sm100_supported, is_sm120_supported",
        "from sglang.test.ci.ci_register import register_amd_ci, register_cuda_ci, register_npu_ci, register_xpu_ci",
        "from sglang.test.test_utils import is_in_amd_ci, is_in_ci",
        "",
        "try:",
        "    from flashinfer.decode import fast_plan",
        "except ImportError:",
        "    fast_plan = None",
        "",
    ]
    for suite in rng.sample(SUITES, rng.randint(1, 3)):
        lines.append(f"register_cuda_ci(est_time={rng.randint(5, 600)}, {suite})")
    other = rng.choice(OTHER_PLATFORMS)
    if other:
        lines.append(other)
    lines += ["", "_IS_BLACKWELL = is_blackwell()", "TP_SIZE = min(4, torch.cuda.device_count())", HELPERS]
    if rng.random() < 0.3:
        lines.append(REDEFINITION)
    if index % 300 == 7:
        lines += [
            HOSTILE[(index // 300) % len(HOSTILE)],
            "",
            "",
            "@unittest.skipIf(G, 'hostile')",
            "class TestHostile(unittest.TestCase):",
        ]
        lines += ["    def test_x(self):", "        self.assertTrue(True)", ""]
    if rng.random() < 0.2:
        lines += ["pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')]", ""]
    for c in range(rng.randint(2, 4)):
        guard = rng.choice(CLASS_GUARDS)
        lines += ["", "", *([guard] if guard else []), f"class TestCase{c}(unittest.TestCase):"]
        lines += ["    @classmethod", "    def setUpClass(cls):", "        cls.page_size = 16", "        cls.topk = 1", ""]
        for m in range(rng.randint(4, 8)):
            lines.append(f"    def test_case_{m}(self):")
            if rng.random() < 0.5:
                lines.append(rng.choice(METHOD_GUARDS).rstrip("\n"))
            lines += [
                "        batch = [self.page_size * i for i in range(8)]",
                "        total = sum(batch)",
                f"        self.assertEqual(total, {sum(16 * i for i in range(8))})",
                "",
            ]
    lines += ["", 'if __name__ == "__main__":']
    if rng.random() < 0.1:
        lines += ["    if not is_sm100_supported():", "        print('Skipping: needs sm100')", "        sys.exit(0)"]
    lines += ["    unittest.main()", ""]
    return "\n".join(lines)


def generate(root: Path, files: int, seed: int = 7, hostile: bool = True) -> int:
    rng = random.Random(seed)
    total = 0
    for index in range(files):
        folder = root / f"group_{index % 30:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = test_file(rng, index if hostile else index * 300 + 1)
        (folder / f"test_synthetic_{index:04d}.py").write_text(text, encoding="utf-8")
        total += text.count("\n")
    return total


def timed(command: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--repeat", type=int, default=3, help="cold and warm runs each")
    parser.add_argument("--jobs", type=int, default=None, help="--jobs passed to specmatrix guards (default: its own)")
    parser.add_argument("--cold-budget", type=float, default=2.5, help="seconds allowed for a cold run (median)")
    parser.add_argument("--warm-budget", type=float, default=0.3, help="seconds allowed for a warm run (median)")
    parser.add_argument("--keep", type=Path, help="write the tree here and stop (no timing)")
    parser.add_argument("--no-hostile", action="store_true", help="leave the hostile guards out of the tree")
    parser.add_argument("--workflows", type=Path, help="a repository whose workflows the audit also reads (timed apart)")
    parser.add_argument("--tree", type=Path, help="audit this existing tree instead of writing one (its .py files)")
    args = parser.parse_args()
    if args.keep is not None:
        lines = generate(args.keep, args.files, hostile=not args.no_hostile)
        print(f"{args.files} files ({lines} lines) written to {args.keep}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-guards-") as tmp:
        if args.tree is not None:
            root = args.tree.resolve()
            lines = sum(p.read_bytes().count(b"\n") for p in root.rglob("*.py"))
        else:
            root = Path(tmp) / "tree"
            lines = generate(root, args.files)
        cache = Path(tmp) / "cache"
        command = [
            sys.executable,
            "-m",
            "matrix",
            "guards",
            str(root),
            "--format",
            "json",
            "--cache-dir",
            str(cache),
            "--no-workflows",
        ]
        if args.jobs is not None:
            command += ["--jobs", str(args.jobs)]
        parse = [sys.executable, "-c", PARSE, str(root)]
        parse_walls = [timed(parse)[0] for _ in range(args.repeat)]
        cold: list[tuple[float, float]] = []
        warm: list[tuple[float, float]] = []
        doc = None
        for _ in range(args.repeat):
            for f in cache.glob("*"):
                f.unlink()
            seconds, cpu, done = timed(command)
            if done.returncode not in (0, 1):
                print(done.stderr, file=sys.stderr)
                return 2
            cold.append((seconds, cpu))
            doc = json.loads(done.stdout)
            seconds, cpu, done = timed(command)
            warm.append((seconds, cpu))
            if json.loads(done.stdout) != doc:
                print("a warm run disagreed with the cold one", file=sys.stderr)
                return 2
        flows: list[tuple[float, float]] = []
        if args.workflows is not None:
            with_flows = [*(c for c in command if c != "--no-workflows"), "--workflows", str(args.workflows)]
            # The schedule is part of the results cache's key: one untimed run fills that cache, so every timed
            # run with a cold schedule reads the schedule, not the whole tree again.
            timed(with_flows)
            for _ in range(args.repeat):
                for f in cache.glob("schedule-*"):
                    f.unlink()
                flows.append((timed(with_flows)[0], timed(with_flows)[0]))
            plain = [timed(command)[0] for _ in range(args.repeat)]
    assert doc is not None
    counts = ", ".join(f"{v} {k}" for k, v in doc["counts"].items() if v)
    print(f"{doc['files_scanned']} files ({lines} lines), {doc['registered_files']} registered: {counts or 'no findings'}")
    verdicts = []
    for name, runs, budget in (("cold", cold, args.cold_budget), ("warm", warm, args.warm_budget)):
        walls = [w for w, _ in runs]
        median = statistics.median(walls)
        verdicts.append(median <= budget)
        shown = ", ".join(f"{w:.2f}" for w in walls)
        cpu = statistics.median(c for _, c in runs)
        state = "within" if median <= budget else "OVER"
        print(
            f"{name}: wall {shown} s (min {min(walls):.2f}, median {median:.2f}); median CPU {cpu:.2f} s ({state} {budget:g} s)"
        )
    parse_median = statistics.median(parse_walls)
    cold_median = statistics.median(w for w, _ in cold)
    print(
        f"single-core ast.parse of the same files: wall {', '.join(f'{w:.2f}' for w in parse_walls)} s "
        f"(median {parse_median:.2f}); cold / parse = {cold_median / parse_median:.2f}"
    )
    if flows:
        base = statistics.median(plain)
        print(
            f"with --workflows {args.workflows}: schedule cold {', '.join(f'{a:.2f}' for a, _ in flows)} s, "
            f"warm {', '.join(f'{b:.2f}' for _, b in flows)} s; without: {', '.join(f'{p:.2f}' for p in plain)} s "
            f"(warm run adds {statistics.median(b for _, b in flows) - base:+.2f} s, "
            f"cold schedule adds {statistics.median(a for a, _ in flows) - base:+.2f} s)"
        )
    print(f"load average before: {LOAD_BEFORE}, after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0 if all(verdicts) else 1


PARSE = (
    "import ast, gc, sys, pathlib\n"
    "gc.disable()\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
    "    ast.parse(p.read_bytes())\n"
)
LOAD_BEFORE = " ".join(f"{x:.1f}" for x in os.getloadavg())


if __name__ == "__main__":
    sys.exit(main())
