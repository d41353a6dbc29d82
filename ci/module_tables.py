"""The generated tables of docs/architecture.md: each module of a package with its line count and the first line of
its docstring (in the order of the package's import-linter layers when it has a contract), and the imports from one
feature package to another, read from the import graph (grimp, which lint-imports uses).

Usage: python ci/module_tables.py [--check] [DOC]   (DOC: docs/architecture.md). Each table sits between
`<!-- module table: PACKAGE -->` (or `<!-- feature imports -->`) and `<!-- end of module table -->`; --check exits
1 naming the first table that drifted, without writing. tests/core/test_architecture_tables.py runs the check.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SECTION = re.compile(
    r"(<!-- (?:module table: (?P<package>[\w.]+)|(?P<imports>feature imports)) -->\n)(?P<body>.*?)(<!-- end of module table -->)",
    re.S,
)
FEATURES = (
    "audit",
    "guards",
    "shard",
    "sglang_check",
    "pytest_suites",
    "registered_suite",
    "coverage",
    "register",
    "gpu",
    "ledger",
)
# Why each feature package imports another: the one part of the imports table written by hand. A pair the code has
# and this does not describe is drift.
WHAT_FOR = {
    ("coverage", "shard"): "the shard plan, to name a planned shard whose report is missing",
    ("register", "shard"): "cutting a runner config's cells into registered modules with the shard planner",
    ("register", "guards"): "reading a generated module's guards with the guard engine",
    ("register", "registered_suite"): "keeping only generated modules the guard audit finds nothing against, as CI "
    "schedules them",
    ("gpu", "audit"): "mapping pytest node ids back to cell ids when grouping items by kernel configuration",
    ("gpu", "sglang_check"): "which backend sglang built, the graph-buffer contract, the stand-ins' drift checks and the "
    "sglang edge: the GPU cells check what the CPU check checks",
    ("ledger", "audit"): "accepting allowlisted skips",
    ("ledger", "guards"): "reading a suite's registrations and the records of its static findings",
    ("ledger", "registered_suite"): "joining recorded outcomes with a suite's registrations, settling static findings, "
    "the baseline",
    ("registered_suite", "guards"): "reading each registered file's registrations and guards and evaluating the guards "
    "on the runners the file is registered for",
    (
        "pytest_suites",
        "guards",
    ): "finding the skip guards of pytest files and evaluating them on the runners a schedule sends each test to",
}
UNDESCRIBED = "(not described: add it to WHAT_FOR in ci/module_tables.py)"


def _layer_order(package: str) -> list[str]:
    """The modules of the package's layers contract, highest first (`a | b` keeps its order), if it has one."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    for contract in config.get("tool", {}).get("importlinter", {}).get("contracts", []):
        if contract.get("type") == "layers" and contract.get("containers") == [package]:
            return [name.strip() for layer in contract["layers"] for name in layer.split("|")]
    return []


def _concept(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().split("\n")[0].replace("|", "\\|")


def module_table(package: str) -> str:
    """The Markdown table of one package's modules (a module is a .py file directly in the package's folder)."""
    folder = ROOT.joinpath(*package.split("."))
    modules = {p.stem: p for p in folder.glob("*.py")}
    order = [m for m in _layer_order(package) if m in modules]
    order += sorted(m for m in modules if m not in order and m != "__init__")
    order += ["__init__"] if "__init__" in modules else []
    rows = ["| module | lines | the concept (its docstring) |", "| --- | ---: | --- |"]
    for name in order:
        path = modules[name]
        lines = len(path.read_text(encoding="utf-8").splitlines())
        rows.append(f"| `{name}.py` | {lines} | {_concept(path)} |")
    return "\n".join(rows) + "\n"


def feature_imports() -> str:
    """The Markdown table of every import from one feature package to another (the schedule and the core are below
    every feature and left out)."""
    import grimp

    graph = grimp.build_graph("matrix", cache_dir=None)
    found: dict[tuple[str, str], set[str]] = {}
    for module in graph.modules:
        parts = module.split(".")
        if len(parts) < 2 or parts[1] not in FEATURES:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            other = imported.split(".")
            if len(other) >= 2 and other[0] == "matrix" and other[1] in FEATURES and other[1] != parts[1]:
                found.setdefault((parts[1], other[1]), set()).add(imported)
    rows = ["| importer | imports | what for |", "| --- | --- | --- |"]
    for (importer, package), modules in sorted(found.items()):
        names = ", ".join(f"`{m}`" for m in sorted(modules))
        rows.append(f"| `matrix.{importer}` | {names} | {WHAT_FOR.get((importer, package), UNDESCRIBED)} |")
    return "\n".join(rows) + "\n"


def _table(match: re.Match[str]) -> str:
    return feature_imports() if match.group("imports") else module_table(match.group("package"))


def regenerate(text: str) -> str:
    """`text` with every generated table rebuilt from the code."""
    return SECTION.sub(lambda m: m.group(1) + _table(m) + m.group(5), text)


def drifted(text: str) -> list[str]:
    """The tables (a package, or "feature imports") in `text` that no longer match the code."""
    return [m.group("package") or m.group("imports") for m in SECTION.finditer(text) if m.group("body") != _table(m)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("doc", nargs="?", type=Path, default=DOC)
    parser.add_argument("--check", action="store_true", help="exit 1 when a table drifted; write nothing")
    args = parser.parse_args(argv)
    text = args.doc.read_text(encoding="utf-8")
    if args.check:
        stale = drifted(text)
        if stale:
            print(f"{args.doc}: the module table of {stale[0]} drifted; run python ci/module_tables.py", file=sys.stderr)
            return 1
        return 0
    sys.path.insert(0, str(ROOT))
    from matrix.core.atomic import write_text_atomic

    write_text_atomic(args.doc, regenerate(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
