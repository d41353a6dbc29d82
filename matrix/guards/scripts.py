"""A registered file run as a script: `if __name__ == "__main__":` blocks that print a skip and exit 0.

sglang's CI runs each registered file as a script (`run_unittest_files` in python/sglang/test/ci/ci_utils.py
starts `python3 FILE -f`), so such a block decides whether anything runs on a runner.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

from matrix.guards.model import AlwaysSkips, ExprCondition, Guard, GuardKind, SkipCondition
from matrix.guards.names import dotted


def is_main_block(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Compare) or len(stmt.test.ops) != 1:
        return False
    sides = [stmt.test.left, *stmt.test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return isinstance(stmt.test.ops[0], ast.Eq) and len(names) == 1 and len(mains) == 1


def exit_zero_call(stmt: ast.stmt) -> bool:
    """`sys.exit(0)`, `sys.exit()`, `exit(0)`, `os._exit(0)`: the script ends with success."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    call = stmt.value
    name = dotted(call.func) or ""
    if name not in ("sys.exit", "exit", "quit", "os._exit"):
        return False
    if not call.args:
        return name != "os._exit"
    arg = call.args[0]
    return isinstance(arg, ast.Constant) and (arg.value == 0 or arg.value is None) and not isinstance(arg.value, bool)


def exits_zero(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and exit_zero_call(body[-1])


def prints_skip(body: Sequence[ast.stmt]) -> bool:
    """A `print(...)` or logging call mentioning a skip, the message CI shows for a skipped script."""
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            name = (dotted(stmt.value.func) or "").rpartition(".")[2]
            if name in ("print", "info", "warning", "warn") and "skip" in ast.dump(stmt.value).lower():
                return True
    return False


def main_exit_guards(
    body: Sequence[ast.stmt], conds: tuple[SkipCondition, ...], path: str, segment: Callable[[ast.AST], str]
) -> list[Guard]:
    """Guards for the skips-and-exits of a `__main__` block: an `if` whose body prints a skip and exits 0,
    or such an exit after a printed skip; code after an exiting `if` runs only when its test is false."""
    out: list[Guard] = []
    for index, stmt in enumerate(body):
        if isinstance(stmt, ast.If):
            test = ExprCondition(expr=stmt.test)
            if exits_zero(stmt.body) and prints_skip(stmt.body):
                source = f"if {segment(stmt.test)}: ... sys.exit(0)"
                found = Guard(scope=path, kind=GuardKind.MAIN_EXIT, line=stmt.lineno, source=source, conditions=(*conds, test))
                out.append(found)
                conds = (*conds, ExprCondition(expr=stmt.test, negate=True))
                continue
            out.extend(main_exit_guards(stmt.body, (*conds, test), path, segment))
        elif exit_zero_call(stmt) and prints_skip(body[:index]):
            kind = GuardKind.MAIN_EXIT
            out.append(Guard(scope=path, kind=kind, line=stmt.lineno, source=segment(stmt), conditions=conds or (AlwaysSkips(),)))
            break
    return out
