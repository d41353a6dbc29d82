"""docs/architecture.md names real code: every module, function and class it cites in backticks exists.

Three spellings are checked, each read from the source without importing it (the GPU modules import torch):
a dotted name (`matrix.registered_suite.tree.audit_tree`, `matrix.schedule.github.walk.Walker.run`), a path
(`matrix/core/json_report.py`), and "`name` in `matrix/x/y.py`".
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
DOTTED = re.compile(r"`(?P<name>matrix(?:\.[A-Za-z_]\w*)+)`")
PATH = re.compile(r"`(?P<path>matrix/[\w./]*\w)/?`")
NAME_IN = re.compile(r"`(?P<name>[A-Za-z_]\w*)` in `(?P<path>matrix/[\w/]+\.py)`")


def _defined(body: list[ast.stmt]) -> dict[str, list[ast.stmt]]:
    """The names a module or class body defines, each with its own body (empty for an assignment or import)."""
    out: dict[str, list[ast.stmt]] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node.body
        elif isinstance(node, ast.Assign):
            out |= {t.id: [] for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = []
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0]: [] for a in node.names}
    return out


def _module_file(parts: list[str], root: Path) -> Path | None:
    folder = root.joinpath(*parts)
    if (folder / "__init__.py").is_file():
        return folder / "__init__.py"
    module = folder.with_suffix(".py")
    return module if module.is_file() else None


def resolves(dotted: str, root: Path = ROOT) -> bool:
    """Whether `dotted` is a module of the package, or a name defined in one (a class's members too)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        found = _module_file(parts[:cut], root)
        if found is None:
            continue
        body = ast.parse(found.read_text(encoding="utf-8")).body
        for name in parts[cut:]:
            names = _defined(body)
            if name not in names:
                return False
            body = names[name]
        return True
    return False


def cited(text: str) -> list[tuple[int, str, str]]:
    """(line, spelling, what) for every citation in `text`."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        out += [(number, "dotted", m.group("name")) for m in DOTTED.finditer(line)]
        out += [(number, "path", m.group("path")) for m in PATH.finditer(line)]
        out += [(number, "name in", f"{m.group('name')} in {m.group('path')}") for m in NAME_IN.finditer(line)]
    return out


def missing(text: str, root: Path = ROOT) -> list[str]:
    """The citations of `text` that name nothing in the tree at `root`, as `line: citation`."""
    out = []
    for number, spelling, what in cited(text):
        if spelling == "dotted":
            ok = resolves(what, root)
        elif spelling == "path":
            ok = (root / what).exists()
        else:
            name, path = what.split(" in ")
            ok = (root / path).is_file() and name in _defined(ast.parse((root / path).read_text(encoding="utf-8")).body)
        if not ok:
            out.append(f"{number}: {what}")
    return out


def test_the_document_cites_the_walks_through_the_code() -> None:
    names = {what for _, spelling, what in cited(DOC.read_text(encoding="utf-8")) if spelling == "dotted"}
    assert len(names) >= 60
    for step in (
        "matrix.registered_suite.tree.audit_tree",
        "matrix.guards.finder.analyse_source",
        "matrix.core.json_report.json_report",
        "matrix.schedule.github.walk.read_github",
        "matrix.schedule.model.ScheduleEntry",
    ):
        assert step in names


def test_every_name_the_document_cites_exists() -> None:
    assert missing(DOC.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("citation", "found"),
    [
        ("`matrix.registered_suite.tree.audit_tree`", True),
        ("`matrix.schedule.github.walk.Walker.run`", True),
        ("`matrix.guards`", True),
        ("`matrix/core/json_report.py`", True),
        ("`finding_doc` in `matrix/core/output.py`", True),
        ("`matrix.registered_suite.tree.audit_trees`", False),  # a function renamed
        ("`matrix.schedule.github.walk.Walker.walk_everything`", False),  # a method that is not there
        ("`matrix.guards.gate`", False),  # a module that moved out of the package
        ("`matrix/guards/gate.py`", False),
        ("`finding_docs` in `matrix/core/output.py`", False),
    ],
)
def test_a_stale_citation_is_caught(citation: str, found: bool) -> None:
    assert (missing(f"Text {citation} text.") == []) is found
