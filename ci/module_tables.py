"""The module tables of docs/architecture.md, generated from the code: each module of a package with its line count
and the first line of its docstring, in the order of the package's import-linter layers when it has a contract.

Usage: python ci/module_tables.py [--check] [DOC]   (DOC: docs/architecture.md). Each table sits between
`<!-- module table: PACKAGE -->` and `<!-- end of module table -->`; --check exits 1 naming the first table that
drifted, without writing. tests/core/test_architecture_tables.py runs the check.
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
SECTION = re.compile(r"(<!-- module table: (?P<package>[\w.]+) -->\n)(?P<body>.*?)(<!-- end of module table -->)", re.S)


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


def regenerate(text: str) -> str:
    """`text` with every module table rebuilt from the code."""
    return SECTION.sub(lambda m: m.group(1) + module_table(m.group("package")) + m.group(4), text)


def drifted(text: str) -> list[str]:
    """The packages whose table in `text` no longer matches the code."""
    return [m.group("package") for m in SECTION.finditer(text) if m.group("body") != module_table(m.group("package"))]


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
