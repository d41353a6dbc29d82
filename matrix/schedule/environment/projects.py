"""A local project's requirements and extras, read from its `pyproject.toml` (`[project]` dependencies,
`[project.optional-dependencies]`, `[dependency-groups]`) or from a literal `setup.py` (`install_requires=` and
`extras_require=` given as literal lists or dicts, names bound to them, or a call of a function of the same file
whose returns are those); pure. What is computed is unknown, with why.

A function with several returns (`get_default_dependencies()` choosing a list by the platform it detects) gives
the requirements every return has as certain and the others as possible."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_SETUP_CHARS = 1024 * 1024
MAX_GROUP_DEPTH = 8


@dataclass(frozen=True, kw_only=True)
class Requirements:
    """Requirement strings a project asks for: `surely` on every run, `maybe` on some (picked at run time), and
    what was not read (`unknown`, each a reason)."""

    surely: tuple[str, ...] = ()
    maybe: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    name: str = ""  # the project's own distribution name, when said
    # The checkout's projects whose requirements these are: what they pull in is read here, not from the table.
    local: tuple[str, ...] = ()


def project_requirements(
    pyproject: str | None, setup: str | None, extras: Sequence[str], groups: Sequence[str] = (), folder: str = "."
) -> Requirements:
    """What `pip install FOLDER[extras]` (and `uv sync --group G`) installs from the project itself."""
    where = "the project" if folder == "." else f"the project in {folder}"
    doc: Mapping[str, object] = {}
    if pyproject is not None:
        try:
            doc = tomllib.loads(pyproject)
        except (tomllib.TOMLDecodeError, ValueError):
            return Requirements(unknown=(f"{where}'s pyproject.toml does not parse",))
    project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
    assert isinstance(project, dict)
    dynamic = set(project.get("dynamic", ()) or ())
    surely: list[str] = []
    maybe: list[str] = []
    unknown: list[str] = []
    setup_read = _setup(setup) if setup is not None else None
    if pyproject is None and setup is None:
        return Requirements(unknown=(f"{where} has neither pyproject.toml nor setup.py",))
    if "dependencies" in dynamic or (pyproject is None and setup is not None):
        _take(setup_read, surely, maybe, unknown, where)
    else:
        surely += [str(r) for r in project.get("dependencies", ()) or ()]
    wanted = list(extras)
    if wanted:
        if "optional-dependencies" in dynamic or (pyproject is None and setup is not None):
            extras_table = setup_read.extras if setup_read is not None else None
            if extras_table is None:
                unknown.append(f"the extras of {where} are computed in setup.py, not read")
            else:
                for extra in extras_table if "*" in wanted else wanted:
                    found = extras_table.get(extra)
                    if found is None:
                        unknown.append(f"{where} has no extra {extra!r} that setup.py names literally")
                    else:
                        surely += found.surely
                        maybe += found.maybe
        else:
            optional = project.get("optional-dependencies", {}) or {}
            for extra in optional if "*" in wanted else wanted:
                if extra in optional:
                    surely += [str(r) for r in optional[extra]]
                else:
                    unknown.append(f"{where} has no extra {extra!r} in pyproject.toml")
    if groups:
        table = doc.get("dependency-groups", {})
        table = table if isinstance(table, dict) else {}
        for group in table if "*" in groups else groups:
            if group in table:
                surely += _group(table, group, 0)
            elif group != "dev":  # uv's default group need not exist
                unknown.append(f"{where} has no dependency group {group!r}")
    name = str(project.get("name", "")) or (setup_read.name if setup_read is not None else "")
    return Requirements(surely=tuple(surely), maybe=tuple(maybe), unknown=tuple(unknown), name=name)


def _group(table: Mapping[str, object], group: str, depth: int) -> list[str]:
    """A dependency group's requirements, `{include-group = "x"}` followed (PEP 735)."""
    out: list[str] = []
    if depth > MAX_GROUP_DEPTH:
        return out
    for item in table.get(group, ()) or ():  # type: ignore[attr-defined]
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("include-group"), str):
            out += _group(table, item["include-group"], depth + 1)
    return out


def _take(setup: _Setup | None, surely: list[str], maybe: list[str], unknown: list[str], where: str) -> None:
    found = None if setup is None else setup.install_requires
    if found is None:
        unknown.append(f"the requirements of {where} are computed in setup.py, not read")
        return
    surely += found.surely
    maybe += found.maybe


@dataclass(frozen=True, kw_only=True)
class _Setup:
    install_requires: Requirements | None
    extras: dict[str, Requirements] | None
    name: str = ""


_Value = Requirements | dict[str, Requirements] | None
Scope = Mapping[str, ast.expr | None]


def _setup(text: str) -> _Setup | None:
    """The literal arguments of `setup(...)` in a setup.py; None when it does not parse or has no setup call."""
    if len(text) > MAX_SETUP_CHARS:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    module = _bindings(tree.body)
    call = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and ((n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")) == "setup")
        ),
        None,
    )
    if call is None:
        return None
    keywords = {k.arg: k.value for k in call.keywords if k.arg is not None}
    install = _value(keywords["install_requires"], module, functions) if "install_requires" in keywords else Requirements()
    extras = _value(keywords["extras_require"], module, functions) if "extras_require" in keywords else {}
    name = keywords.get("name")
    return _Setup(
        install_requires=install if isinstance(install, Requirements) else None,
        extras=extras if isinstance(extras, dict) else None,
        name=name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else "",
    )


_IN_PLACE = frozenset({"append", "extend", "insert", "update", "pop", "remove", "setdefault"})


def _changed_in_place(node: ast.AST) -> str | None:
    """The name `name.append(...)` (or another in-place method) changes, else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _IN_PLACE:
        return node.func.value.id if isinstance(node.func.value, ast.Name) else None
    return None


def _bindings(body: Sequence[ast.stmt]) -> dict[str, ast.expr | None]:
    """Names a block binds by a plain assignment: the value, or None when bound more than once or otherwise."""
    out: dict[str, ast.expr | None] = {}
    for stmt in body:
        for node in ast.walk(stmt) if not isinstance(stmt, ast.FunctionDef) else ():
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                out[name] = None if name in out else node.value
            elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
                out[node.target.id] = None
            elif _changed_in_place(node) is not None:
                out[str(_changed_in_place(node))] = None  # changed in place: its literal is not its value
    return out


def _value(
    node: ast.expr, scope: Mapping[str, ast.expr | None], functions: Mapping[str, ast.FunctionDef], depth: int = 0
) -> _Value:
    """A requirement list or an extras dict, read from literals (None: computed)."""
    if depth > 4:
        return None
    if isinstance(node, ast.List | ast.Tuple):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return Requirements(surely=tuple(items)) if len(items) == len(node.elts) else None
    if isinstance(node, ast.Dict):
        out: dict[str, Requirements] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return None
            found = _value(value, scope, functions, depth + 1)
            if not isinstance(found, Requirements):
                return None
            out[key.value] = found
        return out
    if isinstance(node, ast.Name):
        bound = scope.get(node.id)
        return None if bound is None else _value(bound, scope, functions, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions and not node.args:
        return _returns(functions[node.func.id], functions, depth + 1, scope)
    return None


def _returns(function: ast.FunctionDef, functions: Mapping[str, ast.FunctionDef], depth: int, outer: Scope) -> _Value:
    """What a function of setup.py returns, from its literal returns: one return is its value; several lists give
    their common items as certain and the rest as possible (a return of nothing counts as an empty list)."""
    local = _bindings(function.body)
    # A name the function does not bind is the module's (a module-level list the returned dict names).
    scope = {**{k: v for k, v in outer.items() if k not in local}, **local}
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
    values = [
        Requirements() if r.value is None or _is_none(r.value) else _value(r.value, scope, functions, depth) for r in returns
    ]
    if not values or any(v is None for v in values):
        return None
    if len(values) == 1:
        return values[0]
    if not all(isinstance(v, Requirements) for v in values):
        return None
    lists = [v for v in values if isinstance(v, Requirements)]
    if not isinstance(function.body[-1], ast.Return):
        lists.append(Requirements())  # it may end without a return: None, no requirement
    common = [r for r in lists[0].surely if all(r in v.surely for v in lists[1:])]
    rest = [r for v in lists for r in (*v.surely, *v.maybe) if r not in common]
    return Requirements(surely=tuple(common), maybe=tuple(dict.fromkeys(rest)))


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
