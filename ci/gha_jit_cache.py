"""GPU job: the JIT caches' key, and their check before use and seal after the run (matrix/gpu/jitcache.py).

    python ci/gha_jit_cache.py key --runner R --select SEL --key-file F [--github-output FILE]
    python ci/gha_jit_cache.py verify --key-file F DIR...   # before the cells: foreign emptied, damaged kernels removed
    python ci/gha_jit_cache.py seal --key-file F DIR...     # after the run, before the cache is saved

The key covers the installed flashinfer, sglang, torch and CUDA versions, the runner's GPU arch and the kernel
configurations of the shard's cells (what `specmatrix shard` plans with); `--cuda` and `--arch` override detection.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from matrix.audit.items import expand_select_args
from matrix.core.atomic import append_text, write_text_atomic
from matrix.core.errors import SpecmatrixError
from matrix.core.expect import effective_versions, expectations
from matrix.core.loader import load_matrix, load_runners
from matrix.core.model import Outcome
from matrix.core.selectors import select
from matrix.gpu.jitcache import CacheKey, installed_fields, seal, verify
from matrix.shard.cost import config_key

PREFIX = "specmatrix-jit"


def shard_configs(runner_name: str, selectors: list[str]) -> tuple[str, ...]:
    """The kernel configurations of the cells the shard runs (RUN on the runner, picked by the selection)."""
    matrix = load_matrix()
    runners = load_runners()
    if runner_name not in runners:
        raise SpecmatrixError(f"unknown runner {runner_name!r}")
    runner = runners[runner_name]
    exps = expectations(matrix, runner, effective_versions(matrix, {}))
    expanded = list(expand_select_args(selectors, lambda p: Path(p).read_text(encoding="utf-8")))
    cells = select([c for c in matrix.cells if exps[c.id].outcome is Outcome.RUN], expanded)
    return tuple(sorted({config_key(matrix, c, exps[c.id].impl) for c in cells}))


def _key_from(path: Path) -> CacheKey:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return CacheKey(fields=dict(doc["fields"]), configs=tuple(doc["configs"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    key_p = sub.add_parser("key")
    key_p.add_argument("--runner", required=True)
    key_p.add_argument("--select", action="append", default=[], help="a selector or @FILE (repeatable; none: all)")
    key_p.add_argument("--key-file", type=Path, required=True)
    key_p.add_argument("--arch", default=None, help="default: the runner profile's sm")
    key_p.add_argument("--cuda", default=None, help="default: torch.version.cuda")
    key_p.add_argument("--github-output", default=os.environ.get("GITHUB_OUTPUT"))
    for name in ("verify", "seal"):
        p = sub.add_parser(name)
        p.add_argument("--key-file", type=Path, required=True)
        p.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "key":
            runner = load_runners().get(args.runner, None)
            if runner is None or runner.sm is None:
                raise SpecmatrixError(f"runner {args.runner!r} is unknown or has no GPU")
            fields = installed_fields(args.arch or f"sm{runner.sm}")
            if args.cuda:
                fields["cuda"] = args.cuda
            key = CacheKey(fields=fields, configs=shard_configs(args.runner, args.select))
            write_text_atomic(args.key_file, json.dumps({"fields": fields, "configs": list(key.configs)}, indent=1) + "\n")
            name = key.name(f"{PREFIX}-{args.runner}")
            print(json.dumps({"key": name, "fields": fields, "configs": len(key.configs)}))
            if args.github_output:
                append_text(Path(args.github_output), f"key={name}\n")
            return 0
        key = _key_from(args.key_file)
        for root in args.dirs:
            if args.command == "verify":
                print(json.dumps({"dir": str(root), **verify(root, key).as_dict()}))
            else:
                print(json.dumps({"dir": str(root), "sealed_files": seal(root, key)}))
    except (SpecmatrixError, OSError, ValueError, KeyError) as exc:
        print(f"gha_jit_cache: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
