"""A module's classes, each read once: what a class has over its same-module bases, memoized per class.

pytest looks a test class's methods up over its `__mro__` (`_pytest/python.py`, `Class.collect` through
`PyCollector.collect`, which walks `self.obj.__mro__` dicts) and gathers class marks over the MRO too (pytest >= 7.2,
`get_unpacked_marks(cls, consider_mro=True)`); Python itself puts no bound on a hierarchy's depth. A class's record
here is built from its own body and its bases' records (`Hierarchy.info`), so a chain of thousands of classes costs
one step per class, never a walk of the chain per class or per test, and no recursion however deep it is.

The order is the one this reading has always used: the class's own body, then each base's record in turn (depth
first, left to right), which is Python's MRO for single inheritance. Where two bases give a name different
definitions (multiple inheritance, where the C3 order may pick another), the name is in `conflicts`: its test is kept
with a doubt rather than read as one of them.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from matrix.guards.model import ModuleNames, dotted
from matrix.guards.source import resolve

_Function = ast.FunctionDef | ast.AsyncFunctionDef
# unittest's TestCase classes (`_pytest/unittest.py`, pytest_pycollect_makeitem: any subclass, whatever its name).
TESTCASES = frozenset({"unittest.TestCase", "unittest.IsolatedAsyncioTestCase", "unittest.case.TestCase"})
_MARK_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)
# The members and marked classes all records of one module may hold together. A hierarchy whose classes each add a
# test holds n*(n+1)/2 of them (pytest would collect that many tests): past this bound the module is not read.
MAX_WORK = 250_000


class TooLargeToRead(Exception):
    """A module whose classes (or tests) are past the bounds of one reading; its message says which."""


@dataclass(frozen=True, kw_only=True)
class Member:
    """A name a class has: the function or inner class bound to it and the class that defines it."""

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    owner: ast.ClassDef


@dataclass(frozen=True, kw_only=True)
class ClassInfo:
    """What a class has over its same-module bases."""

    # Name -> its member, in lookup order; None where an assignment binds the name (it hides a base's method).
    members: Mapping[str, Member | None]
    flag: bool | None  # the first literal `__test__ = X` over the hierarchy; None when none is set
    init: bool  # `__init__` or `__new__` somewhere in the hierarchy (pytest does not collect such a class)
    testcase: bool | None  # a unittest.TestCase subclass; None when a base from elsewhere may be one
    marked: tuple[ast.ClassDef, ...]  # the classes of the hierarchy carrying decorators or a `pytestmark`
    conflicts: frozenset[str] = frozenset()


def _dunder_test(body: list[ast.stmt]) -> bool | None:
    """The literal value of `__test__ = X` in a body (the last one); None when not set or not literal."""
    value: bool | None = None
    for stmt in body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__test__" for t in stmt.targets):
            value = bool(stmt.value.value) if isinstance(stmt.value, ast.Constant) else None
    return value


def carries_marks(node: ast.ClassDef) -> bool:
    """A decorator on the class, or a statement of its body that names `pytestmark`."""
    if node.decorator_list:
        return True
    for stmt in node.body:
        if isinstance(stmt, _MARK_STATEMENTS):
            try:
                text = ast.unparse(stmt)
            except (RecursionError, ValueError):
                return True  # unreadable: it may
            if "pytestmark" in text:
                return True
    return False


class Hierarchy:
    """The records of one module's classes; `classes` is the module's name -> class binding (read when asked)."""

    def __init__(self, classes: Mapping[str, ast.ClassDef], names: ModuleNames):
        self.classes = classes
        self.names = names
        self.memo: dict[int, ClassInfo] = {}
        self.work = 0

    def base(self, node: ast.ClassDef, expr: ast.expr) -> ast.ClassDef | None:
        """The module's class a base expression names (never the class itself)."""
        found = self.classes.get(dotted(expr) or "")
        return found if found is not None and found is not node else None

    def info(self, node: ast.ClassDef) -> ClassInfo:
        """The class's record; its bases' records first, from a stack (no recursion)."""
        known = self.memo.get(id(node))
        if known is not None:
            return known
        stack = [node]
        visiting: set[int] = set()
        while stack:
            current = stack[-1]
            if id(current) in self.memo:
                stack.pop()
                continue
            visiting.add(id(current))
            waiting = [
                b
                for expr in current.bases
                if (b := self.base(current, expr)) is not None and id(b) not in self.memo and id(b) not in visiting
            ]
            if waiting:
                stack.extend(reversed(waiting))
                continue
            stack.pop()
            visiting.discard(id(current))
            self.memo[id(current)] = self._build(current)
        return self.memo[id(node)]

    def _build(self, node: ast.ClassDef) -> ClassInfo:
        members: dict[str, Member | None] = {}
        for stmt in node.body:
            if isinstance(stmt, _Function | ast.ClassDef):
                members.setdefault(stmt.name, Member(node=stmt, owner=node))
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        members.setdefault(target.id, None)
        own = set(members)
        conflicts: set[str] = set()
        flag = _dunder_test(node.body)
        init = any(isinstance(s, _Function) and s.name in ("__init__", "__new__") for s in node.body)
        marked: dict[int, ast.ClassDef] = {id(node): node} if carries_marks(node) else {}
        testcase: bool | None = False
        for expr in node.bases:
            local = self.base(node, expr)
            name = dotted(expr) or ""
            if resolve(name, self.names.import_map) in TESTCASES:
                testcase = True
            if local is None:
                if name != "object" and testcase is False:
                    testcase = None  # a base from elsewhere may be a TestCase
                continue
            parent = self.memo.get(id(local))
            if parent is None:  # a cycle through redefined names: read as a base from elsewhere
                testcase = None if testcase is False else testcase
                continue
            if parent.testcase or (parent.testcase is None and testcase is False):
                testcase = parent.testcase
            flag = parent.flag if flag is None else flag
            init = init or parent.init
            marked.update((id(c), c) for c in parent.marked)
            conflicts |= parent.conflicts
            for key, member in parent.members.items():
                if member is not None and isinstance(member.node, ast.ClassDef):
                    continue  # a base's inner classes are not collected through the subclass
                if key not in members:
                    members[key] = member
                elif key not in own and members[key] != member:
                    conflicts.add(key)
        self.work += len(members) + len(marked)
        if self.work > MAX_WORK:
            raise TooLargeToRead(
                f"its classes inherit more than {MAX_WORK} members in all (class {node.name} at line {node.lineno}); "
                "the module is not read"
            )
        return ClassInfo(
            members=members,
            flag=flag,
            init=init,
            testcase=testcase,
            marked=tuple(marked.values()),
            conflicts=frozenset(conflicts),
        )
