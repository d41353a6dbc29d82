"""The compound statements of a shell walk (`shell.tree.Walk`): blocks, subshells, pipelines, `&&`/`||` lists, `if`,
`case` and loops, each reading its branches as bash takes them when the variables they test are known, and under
their condition when not; pure.
"""

from __future__ import annotations

import re
from typing import Any

from matrix.schedule.shell.conditions import Truth, case_matches, truth
from matrix.schedule.shell.scope import Scope, absorb_returns, join
from matrix.schedule.shell.subset import Outside
from matrix.schedule.shell.words import Glob, text, words

MAX_LOOP_VALUES = 16
_ARITHMETIC_ASSIGN = re.compile(r"[A-Za-z_]\w*\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|\+\+|--")


class Compound:
    """The compound-statement half of the walk; `statement`, `block` and `_glob` are the walk's own."""

    def statement(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        raise NotImplementedError

    def block(self, nodes: Any, scope: Scope, depth: int, line: int, *, recovered: bool = False) -> None:
        raise NotImplementedError

    def _glob(self, scope: Scope) -> Glob | None:
        raise NotImplementedError

    def children(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        if node.children and text(node.children[0]) == "((":
            assigned_names = _ARITHMETIC_ASSIGN.search(text(node)) is not None
            for name in re.findall(r"[A-Za-z_]\w*", text(node)) if assigned_names else ():
                scope.unknown(name, f"(( {name} ... ))")
            return
        self.block(node.named_children, scope, depth, line)

    def subshell(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        self.block(node.named_children, scope.branch(), depth, line)

    def pipeline(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        """Each part of `a | b` runs in a subshell of its own (bash without `lastpipe`)."""
        for part in node.named_children:
            self.statement(part, scope.branch(), depth, line)

    def redirected(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, scope, depth, line)

    def negated(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        self.block(node.named_children, scope, depth, line)

    def test(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        return  # `[ ... ]` alone changes nothing

    def list_(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        """`a && b && c`: each part runs when the ones before succeed (a test on the way decides that); `a || b`:
        `b` runs when `a` fails; a chain mixing both is read part by part, each conditional."""
        parts = _chain(node)
        operators = {op for op, _ in parts[1:]}
        if operators == {"||"} and len(parts) == 2 and _is_test(parts[0][1]):
            self._when(truth(parts[0][1], scope.known).negated(), parts[1][1], scope, depth, line)
            return
        if operators <= {"&&"}:
            inner = scope.branch()
            certain = True
            for _, part in parts:
                if _is_test(part):
                    decided = truth(part, scope.known)
                    if decided.value is False:
                        break
                    certain = certain and decided.value is True
                    inner.conditions = tuple(c for c in (*inner.conditions, decided.assumption()) if c)
                else:
                    self.statement(part, inner, depth, line)
            join(scope, [inner], certain)
            return
        self.statement(parts[0][1], scope, depth, line)
        for _, part in parts[1:]:
            if not _is_test(part):
                inner = scope.branch(f"runs only as `{_short(node)}` decides (known only at run time)")
                self.statement(part, inner, depth, line)
                join(scope, [inner], False)

    def _when(self, decided: Truth, node: Any, scope: Scope, depth: int, line: int) -> None:
        """Walk `node` as the branch a condition selects: skipped when it is known false."""
        if decided.value is False:
            return
        inner = scope.branch(decided.assumption())
        self.statement(node, inner, depth, line)
        join(scope, [inner], decided.value is True)

    def if_(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        clauses: list[tuple[list[Any], list[Any]]] = []  # (condition nodes, body nodes); else has no condition
        condition: list[Any] = []
        body: list[Any] = []
        in_body = False
        for child in node.children:
            if child.type in ("if", "fi", ";", "\n") or (not child.is_named and child.type != "then"):
                continue
            if child.type == "then":
                in_body = True
                continue
            if child.type in ("elif_clause", "else_clause"):
                clauses.append((condition, body))
                condition, body = _clause(child)
                continue
            (body if in_body else condition).append(child)
        clauses.append((condition, body))
        branches: list[Scope] = []
        before: list[Truth] = []  # the conditions that must have failed for this clause to be reached
        certain = False
        has_else = not clauses[-1][0]
        for cond_nodes, body_nodes in clauses:
            if cond_nodes:
                decided = (
                    truth(cond_nodes[-1], scope.known)
                    if len(cond_nodes) == 1
                    else Truth(value=None, shown=_short(cond_nodes[-1]))
                )
            else:
                decided = Truth(value=True, shown="")
            if any(b.value is True for b in before):
                break
            commands_run = [r for n in cond_nodes for r in _run_in_condition(n)]
            if commands_run and not before:  # `if X=$(...)`, `if pytest ...; then`: runs, in this shell
                self.block(commands_run, scope, depth, line)
            elif commands_run:  # an `elif` condition runs only when the ones before fail
                tried = scope.branch()
                tried.conditions = (*tried.conditions, *(b.negated().assumption() for b in before if b.value is None))
                self.block(commands_run, tried, depth, line)
                join(scope, [tried], all(b.value is False for b in before))
            if decided.value is False:
                before.append(decided)
                continue
            inner = scope.branch()
            for earlier in before:
                if earlier.value is None:
                    inner.conditions = (*inner.conditions, earlier.negated().assumption())
            if cond_nodes:
                inner.conditions = tuple(c for c in (*inner.conditions, decided.assumption()) if c)
            self.block(body_nodes, inner, depth, line)
            branches.append(inner)
            before.append(decided)
            if decided.value is True and all(b.value is not None for b in before[:-1]):
                certain = True
        if has_else and branches and all(b.stopped for b in branches) and len(branches) == len(clauses):
            absorb_returns(scope, branches)
            kinds = {b.stopped for b in branches}  # every way through ends the script (the function)
            scope.stopped = next(k for k in ("exit", "return", "fail") if k in kinds)
            return
        join(scope, branches, certain and len(branches) == 1)

    def case(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        if any(c.type in (";&", ";;&") for item in node.named_children for c in item.children):
            raise Outside(f"`{_short(node)}` (a case item that falls through with `;&` or `;;&`)")
        value_node = node.child_by_field_name("value")
        subject = words(value_node, scope.known)[0] if value_node is not None else ""
        branches: list[Scope] = []
        certain = False
        for item in node.named_children:
            if item.type != "case_item":
                continue
            patterns = [words(c, scope.known)[0] for i, c in enumerate(item.children) if item.field_name_for_child(i) == "value"]
            matched = case_matches(subject, patterns)
            if matched is False:
                continue
            shown = f"`{_short(value_node)}` matches {'|'.join(patterns)}" if value_node is not None else ""
            inner = scope.branch(None if matched is True else f"runs only if {shown} (not known before the run)")
            body = [c for i, c in enumerate(item.children) if item.field_name_for_child(i) is None and c.is_named]
            self.block(body, inner, depth, line)
            branches.append(inner)
            if matched is True:
                certain = len(branches) == 1
                break
        join(scope, branches, certain)

    def loop(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        body = node.child_by_field_name("body")
        if body is None:
            return
        if node.children and text(node.children[0]) == "select":
            raise Outside(f"`{_short(node)}` (select reads a choice from the terminal)")
        variable = node.child_by_field_name("variable")
        values = [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "value"]
        if node.type == "for_statement" and variable is not None:
            items = [w for v in values for w in words(v, scope.known, self._glob(scope))]
            name = text(variable)
            if values and len(items) <= MAX_LOOP_VALUES and not any("$" in i or "`" in i for i in items):
                for item in items:
                    scope.known.set(name, item)
                    if scope.exports(name):
                        scope.exported[name] = item
                    self.statement(body, scope, depth, line)
                    if scope.stopped:
                        break
                return
            inner = scope.branch(f"runs once for each value of ${name} in `{_short(node)}` (known only at run time)")
            inner.assign(name, None, f"${name}")
            self.statement(body, inner, depth, line)
            join(scope, [inner], False)
            return
        inner = scope.branch(f"runs inside `{_short(node)}` (how often is known only at run time)")
        self.statement(body, inner, depth, line)
        join(scope, [inner], False)


_TESTS = frozenset({"test_command", "negated_command"})


def _is_test(node: Any) -> bool:
    """A condition that runs nothing: `[ ... ]`, `! ...`, and a bare `true`, `false` or `:`."""
    if node.type in _TESTS:
        return True
    name = node.child_by_field_name("name") if node.type == "command" else None
    return name is not None and node.named_child_count == 1 and text(name) in ("true", "false", ":")


# A redirection whose target is on the next line (`<` then a line break): a syntax error to bash, read across the
def _run_in_condition(node: Any) -> list[Any]:
    """The commands a condition runs (`if pytest ...`, `if ! pytest ...`); tests and `(( ))` run none."""
    if node.type == "negated_command":
        return [c for n in node.named_children for c in _run_in_condition(n)]
    return [] if node.type in ("test_command", "compound_statement") else [node]


def _chain(node: Any) -> list[tuple[str, Any]]:
    """`a && b || c` (a left-nested tree) as [("", a), ("&&", b), ("||", c)]."""
    out: list[tuple[str, Any]] = []
    while node.type == "list" and node.child_count >= 3:
        out.append((text(node.children[1]), node.children[2]))
        node = node.children[0]
    out.append(("", node))
    return out[::-1]


def _clause(node: Any) -> tuple[list[Any], list[Any]]:
    """(condition, body) of an `elif` clause; ([], body) of `else`."""
    condition: list[Any] = []
    body: list[Any] = []
    in_body = node.type == "else_clause"
    for child in node.children:
        if child.type == "then":
            in_body = True
        elif child.is_named:
            (body if in_body else condition).append(child)
    return condition, body


def _short(node: Any) -> str:
    if node is None:
        return ""
    shown = " ".join(text(node).split())
    return shown if len(shown) <= 80 else shown[:77] + "..."
