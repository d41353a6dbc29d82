"""Where a cold guard audit's CPU time goes, stage by stage, in one process (no profiler, no workers, no cache).

    python ci/profile_guards.py TREE          # e.g. a tree written by `python ci/bench_guards.py --keep TREE`

Prints the CPU seconds of each stage of `analyse_source` and `audit_file` summed over the tree's files: reading
the file, marking its skip-related lines and blanking the bodies that have none (`matrix.guards.source`), `ast.parse`
of what is left (and proving the blanking), the module's names (imports, aliases, functions), the guard walk, the
registrations, and the audit of every guard on every profile. It also times a whole-file `ast.parse`, the
yardstick of `ci/bench_guards.py`. The garbage collector is paused, as in the audit.
"""

from __future__ import annotations

import ast
import gc
import sys
import time
from pathlib import Path

from matrix.core.loader import load_runners
from matrix.guards.finder import _EXACT_MARKS, _SKIP_ALIAS, TEST_FILE, _GuardFinder
from matrix.guards.model import FileAnalysis
from matrix.guards.source import SourceText, collect_module_names, elide, proven, read_registrations
from matrix.registered_suite.audit import AuditSettings, audit_file, load_suite_map

STAGES = ("read, mark, blank", "parse", "names", "walk", "registrations", "audit")


def main() -> int:
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    settings = AuditSettings(runners=load_runners(), suite_map=load_suite_map())
    spent = dict.fromkeys(STAGES, 0.0)
    clock = time.process_time
    files = sorted(root.rglob("*.py"))
    skipped = 0
    gc.disable()
    whole = 0.0
    for file in files:
        path = file.relative_to(root).as_posix()
        try:
            text = file.read_text(encoding="utf-8")
            t = clock()
            ast.parse(text, filename=path)
            whole += clock() - t
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            skipped += 1  # the audit reports such a file as unparsable; it has no later stages to time
            continue
        t0 = clock()
        text = file.read_text(encoding="utf-8")
        source = SourceText(text)
        lowered = text.lower()
        source.mark_lines(["skip", *_SKIP_ALIAS.findall(lowered)], exact=_EXACT_MARKS, lowered=lowered)
        elision = elide(text, source.marked)
        t1 = clock()
        tree = ast.parse(elision.text if elision is not None else text, filename=path)
        if elision is not None and not proven(tree, elision):
            tree, elision = ast.parse(text, filename=path), None
        t2 = clock()
        names = collect_module_names(tree, blanked=frozenset(elision.defs) if elision is not None else frozenset())
        t3 = clock()
        finder = _GuardFinder(path, text, names, source=source)
        finder.module(tree)
        t4 = clock()
        registrations = read_registrations(tree, finder.source)
        t5 = clock()
        analysis = FileAnalysis(
            path=path,
            is_test_file=TEST_FILE.match(file.name) is not None,
            registrations=registrations,
            scopes=tuple(finder.scopes),
            guards=tuple(finder.guards),
            names=names,
            helpers=tuple(finder.helpers),
        )
        audit_file(analysis, settings)
        t6 = clock()
        for stage, seconds in zip(STAGES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5), strict=True):
            spent[stage] += seconds
    total = sum(spent.values())
    shown = ", ".join(f"{stage} {seconds:.2f}" for stage, seconds in spent.items())
    print(
        f"{len(files) - skipped} files ({skipped} unreadable or unparsable left out), CPU seconds: {shown}; "
        f"all {total:.2f}, beyond the parse {total - spent['parse']:.2f}; a whole-file parse of the same files {whole:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
