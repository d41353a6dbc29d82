"""Time `specmatrix guards` on a generated tree of registered test files.

    python ci/bench_guards.py [--files 1500] [--budget 10]

Writes the tree into a temporary folder, runs the command once as a user would
(a fresh interpreter), prints files, findings and seconds, and exits 1 when the
run takes longer than the budget.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
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
CLASS_GUARDS = (
    "@unittest.skipIf(not (is_sm90_supported() or is_sm100_supported() or is_sm120_supported()), 'arch')",
    "@unittest.skipUnless(torch.cuda.is_available(), 'needs CUDA')",
    "@unittest.skipIf(torch.cuda.device_count() < 2, 'needs 2 GPUs')",
    "@unittest.skipIf(is_hip(), 'CUDA only')",
    "@unittest.skipUnless(_IS_BLACKWELL, 'trtllm-gen')",
    "",
)
METHOD_GUARDS = (
    "        if get_device_sm() < 90:\n            self.skipTest('sm90+')\n",
    "        if torch.cuda.get_device_capability() < (10, 0):\n            self.skipTest('sm100+')\n",
    "",
    "",
)


def test_file(rng: random.Random, index: int) -> str:
    """One synthetic registered test module (~150 lines)."""
    lines = [
        f'"""Synthetic attention test module {index}."""',
        "",
        "import unittest",
        "",
        "import pytest",
        "import torch",
        "",
        "from sglang.srt.utils import get_device_sm, is_blackwell, is_hip",
        "from sglang.srt.utils import is_sm90_supported, is_sm100_supported, is_sm120_supported",
        "from sglang.test.ci.ci_register import register_cuda_ci",
        "",
    ]
    for suite in rng.sample(SUITES, rng.randint(1, 3)):
        lines.append(f"register_cuda_ci(est_time={rng.randint(5, 600)}, {suite})")
    lines += ["", "_IS_BLACKWELL = is_blackwell()", ""]
    if rng.random() < 0.2:
        lines += ["pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason='gpu')]", ""]
    for c in range(rng.randint(2, 4)):
        guard = rng.choice(CLASS_GUARDS)
        lines += ["", ""] + ([guard] if guard else []) + [f"class TestCase{c}(unittest.TestCase):"]
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
    lines += ["", 'if __name__ == "__main__":', "    unittest.main()", ""]
    return "\n".join(lines)


def generate(root: Path, files: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    total = 0
    for index in range(files):
        folder = root / f"group_{index % 30:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = test_file(rng, index)
        (folder / f"test_synthetic_{index:04d}.py").write_text(text, encoding="utf-8")
        total += text.count("\n")
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--budget", type=float, default=10.0, help="seconds allowed for the audit")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-guards-") as tmp:
        root = Path(tmp)
        lines = generate(root, args.files)
        command = [sys.executable, "-m", "matrix", "guards", str(root), "--json"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        print(done.stderr, file=sys.stderr)
        return 2
    doc = json.loads(done.stdout)
    counts = ", ".join(f"{v} {k}" for k, v in doc["counts"].items() if v)
    print(f"{doc['files_scanned']} files ({lines} lines), {doc['registered_files']} registered: {counts or 'no findings'}")
    verdict = "within" if seconds <= args.budget else "OVER"
    print(f"specmatrix guards: {seconds:.2f} s wall, {cpu:.2f} s CPU ({verdict} the {args.budget:g} s budget)")
    return 0 if seconds <= args.budget else 1


if __name__ == "__main__":
    sys.exit(main())
