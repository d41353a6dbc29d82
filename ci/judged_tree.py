"""The guard audit on an sglang checkout, judged with the matrix and the CI schedule: the counts a maintainer acts on.

    python ci/judged_tree.py CHECKOUT [--tests test/registered] [--code DIR]

CHECKOUT holds `test/registered`, `.github/workflows` and `scripts/ci` of an sglang commit (docs/guard-audit.md, "On
sglang's real tree", says how to extract one). Prints: findings per kind with the workflows; every `silent-skip`
error (to review by hand); the verdict on the seed's guard (`test_trtllm_mha.py:31`, which must be an error naming
the matrix rule) and on twelve arch gates that are correct by design (none may be an error); the misses found by hand
(each reported or not); `unscheduled` errors against the files that run nowhere; what `specmatrix register` writes
for this CI and whether `guards` reports anything against it; and `specmatrix gaps`. `--code DIR` runs another
checkout of specmatrix (its `matrix` package), for before/after figures. Exit 1 when a check fails.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = ("attention/unittests/dense/test_trtllm_mha.py", 31, "trtllm-mha-arch")
# Arch gates on a test that runs on a sibling runner or another runner of its suite (sglang 8905cbd).
BY_DESIGN = (
    ("attention/unittests/dense/test_fa3.py", 43),
    ("attention/unittests/dense/test_tbo.py", 92),
    ("attention/unittests/dense/test_tbo.py", 132),
    ("attention/unittests/mla/test_flashmla.py", 282),
    ("attention/unittests/mla/test_flashmla.py", 305),
    ("attention/unittests/mla/test_flashmla.py", 316),
    ("attention/unittests/mla/test_flashmla.py", 327),
    ("attention/unittests/mla/test_cutlass_mla.py", 54),
    ("jit/test_flash_attention_4.py", 555),
    ("jit/test_flash_attention_4.py", 944),
    ("8-gpu-models/test_mistral_large3.py", 19),
    ("8-gpu-models/test_nvidia_nemotron_3_super_nightly.py", 99),
)
# Found by hand on the same tree: (path, line or 0 for the file, the kind that reports it, text its reason holds).
MISSES = (
    ("unit/mem_cache/test_unified_radix_cache_bench.py", 0, "never-runs", "__main__"),
    ("tokenizer/test_skip_tokenizer_init.py", 251, "silent-pass", "pass"),
    ("vlm/test_vision_openai_server_a.py", 154, "silent-pass", "pass"),
    # the only assertion gated on is_in_ci(); the xeon job runs the suite by `docker exec` without SGLANG_IS_IN_CI
    ("cpu/test_cpu_graph.py", 84, "silent-pass", "SGLANG_IS_IN_CI is not set there"),
    # facts bound in try/except: `_cuda_major()` decided on the CUDA 13 runner, HAS_MORI reduced to an import
    ("unit/mem_cache/test_minimax_sparse_pool_host_unit.py", 408, "never-runs", "_cuda_major() >= 13"),
    ("unit/mem_cache/test_umbp_store.py", 98, "undetermined", "whether mori.umbp is installed"),
)


def run_matrix(code: Path | None, cwd: Path, *args: str) -> tuple[int, str, str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    done = subprocess.run([sys.executable, "-m", "matrix", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def guards(code: Path | None, checkout: Path, tests: Path, *extra: str) -> list[dict[str, object]]:
    rc, out, err = run_matrix(code, checkout, "guards", str(tests), "--format", "json", "--show", "info", "--no-cache", *extra)
    if rc not in (0, 1):
        sys.exit(f"guards failed (exit {rc}): {err.strip()}")
    findings = json.loads(out)["findings"]
    assert isinstance(findings, list)
    return findings


def at(findings: list[dict[str, object]], path: str, line: int) -> list[dict[str, object]]:
    return [f for f in findings if f["path"] == path and (line == 0 or f["line"] == line)]


def runs_somewhere(code: Path | None, checkout: Path, tests: Path, paths: list[str]) -> list[str]:
    """The files among `paths` one of whose literal registrations a scheduled `run_suite.py` job selects: the
    schedule from `specmatrix schedule`, the registrations read here with `ast` (suite, or stage and runner config;
    nightly; the platform as run_suite.py's --hw)."""
    rc, out, err = run_matrix(code, checkout, "schedule", "--format", "json")
    if rc != 0:
        sys.exit(f"schedule failed (exit {rc}): {err.strip()}")
    selected = {
        (sel["suite"], sel["hw"], sel["nightly"])
        for entry in json.loads(out)["entries"]
        if (sel := entry["selection"]).get("type") == "run_suite"
    }
    found: list[str] = []
    for path in paths:
        for name, suite, nightly in registrations((tests / path).read_text(encoding="utf-8")):
            hw = "cuda" if name == "cuda" else name
            if any(s == suite and h in (None, hw) and n == nightly for s, h, n in selected):
                found.append(path)
                break
    return found


def registrations(text: str) -> list[tuple[str, str, bool]]:
    """(platform, suite, nightly) of every `register_<platform>_ci(...)` call with literal arguments."""
    out: list[tuple[str, str, bool]] = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if not (name.startswith("register_") and name.endswith("_ci")):
            continue
        kw = {k.arg: k.value.value for k in node.keywords if k.arg and isinstance(k.value, ast.Constant)}
        if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
            kw.setdefault("suite", node.args[1].value)
        if kw.get("disabled") is not None:
            continue  # run_suite.py leaves a disabled registration out
        suite = kw.get("suite") or f"{kw.get('stage')}-test-{kw.get('runner_config')}"
        out.append((name.removeprefix("register_").removesuffix("_ci"), str(suite), bool(kw.get("nightly", False))))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--tests", default="test/registered")
    # The checkout this script belongs to by default: the commands run with the checkout of the tree as their folder,
    # where an uninstalled `matrix` package would not be found.
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    tests = checkout / args.tests
    findings = guards(args.code, checkout, tests)
    failed: list[str] = []
    kinds = collections.Counter(str(f["kind"]) for f in findings)
    print(f"counts per kind ({args.tests}, with the workflows):")
    for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {kind:24} {n:5}")

    errors = [f for f in findings if f["kind"] == "silent-skip"]
    print(f"\nsilent-skip errors: {len(errors)}")
    for f in errors:
        print(f"  {f['path']}:{f['line']} on {', '.join(map(str, f['runners']))}: {str(f['reason'])[:160]}")

    path, line, rule = SEED
    seed = [f for f in at(findings, path, line) if f["kind"] == "silent-skip"]
    named = bool(seed) and rule in str(seed[0]["reason"])
    print(f"\nseed guard {path}:{line}: {'silent-skip naming ' + rule if named else 'NOT an error naming ' + rule}")
    if not named:
        failed.append("seed guard")

    print("\nby-design arch gates:")
    for path, line in BY_DESIGN:
        got = sorted({str(f["kind"]) for f in at(findings, path, line)})
        bad = "silent-skip" in got or "never-runs" in got
        print(f"  {path}:{line}: {', '.join(got) or 'no finding'}{'  <- ERROR' if bad else ''}")
        if bad:
            failed.append(f"{path}:{line}")

    print("\nmisses found by hand:")
    for path, line, kind, text in MISSES:
        got = [f for f in at(findings, path, line) if f["kind"] == kind and text in str(f["reason"]) + str(f.get("guard"))]
        where = f"{path}:{line}" if line else path
        print(f"  {where}: {kind} ({text}) {'reported' if got else 'NOT reported'}")
        if not got:
            failed.append(where)

    unscheduled = [f for f in findings if f["kind"] == "unscheduled"]
    dead = [f for f in findings if f["kind"] == "dead-registration"]
    running = runs_somewhere(args.code, checkout, tests, sorted({str(f["path"]) for f in unscheduled}))
    print(
        f"\nunscheduled errors: {len(unscheduled)} in {len({f['path'] for f in unscheduled})} files, "
        f"{len(running)} of which some job runs (read apart from the audit); dead registrations (warnings): {len(dead)}"
    )
    for path in running:
        print(f"  runs somewhere, yet unscheduled: {path}")
    if running:
        failed.append("unscheduled")

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        for part in (".github", "scripts/ci"):
            if (checkout / part).is_dir():
                shutil.copytree(checkout / part, repo / part)
        out = repo / args.tests / "specmatrix"
        rc, _, err = run_matrix(args.code, repo, "register", "--out", str(out))
        written = sorted(p.name for p in out.glob("*.py")) if out.is_dir() else []
        left = [line for line in err.splitlines() if "left out" in line]
        print(
            f"\nregister: exit {rc}, {len(written)} modules written ({', '.join(written)}); {len(left)} runner configs left out"
        )
        for text in left:
            print(f"  {text.removeprefix('specmatrix register: ')[:150]}")
        if written:
            loud = [f for f in guards(args.code, repo, out) if f.get("kind") not in ("disabled", "undetermined", "out-of-scope")]
            print(f"  guards on what register wrote: {len(loud)} findings")
            if loud:
                failed.append("register")

    rc, out_text, err = run_matrix(args.code, checkout, "gaps", str(tests), "--format", "json")
    if rc == 0:
        doc = json.loads(out_text)
        runnable = sum("which no job of the schedule uses" in f["message"] for f in doc["findings"])
        print(
            f"\ngaps: {len(doc['findings'])} of {doc['cells']} cells no scheduled runner runs "
            f"({runnable} of them would run on a profile the schedule does not use); runners: {', '.join(doc['runners'])}"
        )
    else:
        print(f"\ngaps: exit {rc}: {err.strip()[:200]}")
    if failed:
        print(f"\nFAILED: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
