"""What any static reading of a suite must spend at least, against the single-core `ast.parse` yardstick.

Usage: python ci/pytest_audit_floor.py --checkout ~/src/flashinfer [--cores 2] [--repeat 3]

`ci/bench_pytest_audit.py` times the audit; this script times the work no audit that parses the suite with `ast` can
avoid, in fresh interpreters, so the audit's ratio can be read against a floor rather than against zero:

- start: an interpreter that imports the `pytest-audit` command module (its own imports) and exits;
- parse: `ast.parse` of the suite's files (the yardstick's files: everything under tests/, test_*.py and conftest.py
  elsewhere), one core;
- walk: one visit of every node of those trees (an explicit stack over `_fields`, the cheapest full read in Python);
- the same two for the text a parse could leave out, under two rules for which function bodies can be blanked
  before the parse (`matrix.guards.source.elide`, the guard audit's own blanking):
  - skip words: a body is kept when a line of it says skip, xfail or exit, or is a bare `return` (the guard
    audit's rule; it ignores helpers, so it is a lower bound for an audit that must follow them);
  - helpers by name: as above, and a file is parsed whole when a blanked body calls (by bare name) a function any
    file of the suite defines whose body says skip, xfail or exit, directly or through such calls, or calls a
    `test*` function (tests that call tests). Bare names over-approximate what a per-module resolution would keep.

The floor for `--cores` cores is start + (parse + walk) / cores, with each rule's parse and walk; printed with its
ratio to the single-core parse.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One fresh interpreter per measurement; each prints its figures on one line. The suite's files are listed as
# the parse yardstick of ci/bench_pytest_audit.py lists them.
MEASURE = r"""
import ast, gc, pathlib, re, sys, time
sys.path.insert(0, sys.argv[2])
from matrix.guards.source import SourceText, elide
root = pathlib.Path(sys.argv[1])
files = sorted(p for p in root.rglob("*.py") if p.relative_to(root).parts[0] == "tests"
               or p.name.startswith("test_") or p.name == "conftest.py")
texts = [p.read_bytes().decode("utf-8", "replace") for p in files]
WORDS = ("skip", "xfail", "exit")
EXACT = ("return\n", "return\r")

def walk(tree):
    count, stack = 0, [tree]
    while stack:
        node = stack.pop()
        count += 1
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)
    return count

def timed(sources):
    # Each tree is walked right after its parse and dropped, with the cyclic collector off (as in the audit's
    # workers): trees kept alive would be rescanned by every collection.
    parse = spent = nodes = 0
    gc.disable()
    for source in sources:
        t = time.process_time()
        tree = ast.parse(source)
        u = time.process_time()
        nodes += walk(tree)
        parse, spent = parse + u - t, spent + time.process_time() - u
    gc.enable()
    return parse, spent, nodes

def blanked(text):
    source = SourceText(text)
    source.mark_lines(WORDS, exact=EXACT)
    return elide(text, source.marked)

# Functions whose body says a skip word, directly or through a call by bare name (a fixed point over the suite).
DEF = re.compile(r"^([ ]*)(?:async[ ]+)?def[ ]+(\w+)", re.M)
CALL = re.compile(r"(?:(?<![\w.])|(?<=\.))([A-Za-z_]\w*)\s*\(")
bodies = {}
for text in texts:
    for m in DEF.finditer(text):
        end = re.compile(r"\n[ ]{0,%d}[^ \r\n#]" % len(m.group(1))).search(text, m.end())
        bodies.setdefault(m.group(2), []).append(text[m.end(): end.start() if end else len(text)])
says = {n for n, bs in bodies.items() if any(w in b.lower() for b in bs for w in WORDS)}
calls = {n: {c for b in bs for c in CALL.findall(b)} for n, bs in bodies.items()}
changed = True
while changed:
    before = len(says)
    says |= {n for n, called in calls.items() if n not in says and called & says}
    changed = len(says) != before

rule_words, rule_helpers, whole = [], [], 0
for text in texts:
    found = blanked(text)
    rule_words.append(found.text if found is not None else text)
    keep = found is None
    if not keep:
        lines = text.splitlines(keepends=True)
        spans = ("".join(lines[a:b]) for a, b in found.spans)
        keep = any(c in says or c.startswith("test") for s in spans for c in CALL.findall(s))
    whole += keep
    rule_helpers.append(text if keep else found.text)

full = timed(texts)
words = timed(rule_words)
helpers = timed(rule_helpers)
print(len(texts), sum(map(len, texts)), *full, *words, *helpers, len(says), whole)
"""

START = "import matrix.cli.pytest_audit"


def _start_seconds() -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", START], cwd=ROOT, check=True)
    return time.perf_counter() - t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", type=Path, required=True)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if not args.checkout.is_dir():
        print(f"pytest_audit_floor: {args.checkout}: not a folder", file=sys.stderr)
        return 2
    starts = [_start_seconds() for _ in range(args.repeat)]
    rows = []
    for _ in range(args.repeat):
        done = subprocess.run(
            [sys.executable, "-c", MEASURE, str(args.checkout), str(ROOT)], capture_output=True, text=True, check=True
        )
        rows.append([float(x) for x in done.stdout.split()])
    med = [statistics.median(column) for column in zip(*rows, strict=True)]
    files, size, parse, walk, nodes, w_parse, w_walk, w_nodes, h_parse, h_walk, h_nodes, says, whole = med
    start = statistics.median(starts)
    print(f"{int(files)} files, {size / 1e6:.1f} MB; medians of {args.repeat} fresh interpreters, CPU seconds")
    print(f"start (interpreter + the command's imports): {start:.2f} s wall")
    print(f"parse {parse:.2f} s, walk {walk:.2f} s ({int(nodes):,} nodes)")
    print(f"skip words: parse {w_parse:.2f} s, walk {w_walk:.2f} s ({int(w_nodes):,} nodes)")
    print(
        f"helpers by name: {int(says)} functions say a skip word or reach one; {int(whole)} files parsed whole;"
        f" parse {h_parse:.2f} s, walk {h_walk:.2f} s ({int(h_nodes):,} nodes)"
    )
    for label, p, w in (("whole", parse, walk), ("skip words", w_parse, w_walk), ("helpers by name", h_parse, h_walk)):
        floor = start + (p + w) / args.cores
        print(f"floor on {args.cores} cores, {label}: {floor:.2f} s = {floor / parse:.2f}x the single-core parse")
    return 0


if __name__ == "__main__":
    sys.exit(main())
