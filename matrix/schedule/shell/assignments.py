"""Assignments, declarations (`export`, `declare`, `local`, `readonly`) and `unset` in a shell walk
(`shell.tree.Walk`), as `shell.subset.BUILTINS` declares them; pure.
"""

from __future__ import annotations

import re
from typing import Any

from matrix.schedule.shell.compound import _short
from matrix.schedule.shell.scope import Scope
from matrix.schedule.shell.subset import Outside
from matrix.schedule.shell.words import Glob, assigned, is_run_time, text, word, words

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Assignments:
    """The assignment half of the walk; the attributes and `_glob`/`_substitutions` are the walk's own."""

    functions: dict[str, Any]
    _locals: list[set[str]]

    def _glob(self, scope: Scope) -> Glob | None:
        raise NotImplementedError

    def _substitutions(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        raise NotImplementedError

    def assignment(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        self._substitutions(node, scope, depth, line)
        self._assign(node, scope)

    def declaration(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        """export, declare, typeset, local, readonly (`shell.subset.BUILTINS`)."""
        keyword = text(node).split(None, 1)[0] if text(node).strip() else ""
        options = [text(c) for c in node.named_children if c.type == "word" and text(c)[:1] in ("-", "+")]
        flags = {f for o in options if o.startswith("-") for f in o[1:]}
        plus = {f for o in options if o.startswith("+") for f in o[1:]}
        if "f" in flags or "F" in flags or (keyword != "export" and "p" in flags):
            return  # functions, or printing: no variable changes
        if keyword != "export" and flags & {"n", "A"}:
            raise Outside(f"`{_short(node)}` ({keyword} -{''.join(sorted(flags))})", later=True)
        local = keyword == "local" or (keyword in ("declare", "typeset") and "g" not in flags)
        exporting = (keyword == "export" and "n" not in flags) or "x" in flags
        unexporting = (keyword == "export" and "n" in flags) or "x" in plus
        run_time = bool(flags & {"i", "l", "u"})  # an integer or a case-changed value: computed at run time
        for child in node.named_children:
            found = child.child_by_field_name("name") if child.type == "variable_assignment" else child
            if found is None or found.type != "variable_name":
                continue
            name = text(found)
            if local and self._locals:
                self._locals[-1].add(name)
            if exporting and child.type == "variable_assignment":
                scope.marked.add(name)  # the assignment below puts it in the environment
            if child.type == "variable_assignment":
                if run_time:
                    scope.unknown(name, f"{keyword} -{''.join(sorted(flags))} {text(child)}")
                else:
                    self._assign(child, scope)
            elif local and self._locals and name not in scope.known.scalars:
                scope.known.set(name, "")  # `local X`: a new, empty variable in the function
            if exporting and child.type == "variable_name":
                scope.export(name)
            elif unexporting:
                scope.unexport(name)

    def unset(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        """`unset NAME...` (`-v`: variables, the default; `-f`: functions)."""
        flags = "".join(text(c)[1:] for c in node.named_children if c.type == "word" and text(c).startswith("-"))
        for group in _adjacent(node.named_children):
            if group[0].type == "word" and text(group[0]).startswith("-"):
                continue
            # Each word as bash expands it: `unset "X"`, `unset SUI"TE"`, `unset $N` with N known all name a variable.
            if len(group) > 1:
                names = ["".join(word(child, scope.known) for child in group)]
            elif group[0].type == "variable_name":
                names = [text(group[0])]
            else:
                names = words(group[0], scope.known, self._glob(scope))
            for name in names:
                if "$" in name or "`" in name or is_run_time(name):
                    raise Outside(f"`{_short(node)}` (a name known only at run time)")
                if "f" in flags:
                    self.functions.pop(name, None)
                elif _NAME.fullmatch(name):
                    scope.unset(name)
                # else: not a variable name (`unset 'A[0]'`, a typo): bash changes no variable of the environment

    def _assign(self, node: Any, scope: Scope) -> None:
        found = assigned(node, scope.known, self._glob(scope))
        if found is None:
            return
        name, value, items = found
        written = text(node.child_by_field_name("value")) if node.child_by_field_name("value") else ""
        if text(node).partition("=")[0].endswith("+"):  # `X+=v` appends
            before = scope.known.value(name)
            if items is not None or name in scope.known.arrays:
                scope.assign(name, None, f"{name}+={written}")
                return
            value = None if before is None or value is None else before + value
        if items is not None:
            scope.assign(name, items[0] if items else "", written)  # `$NAME` of an array is its first item
            scope.known.scalars.pop(name, None)
            scope.known.arrays[name] = items
            return
        scope.assign(name, value, written)


def _adjacent(children: list[Any]) -> list[list[Any]]:
    """Nodes with no blank between them, grouped: the parser splits `SUI"TE"` after `unset` into two."""
    groups: list[list[Any]] = []
    for child in children:
        if groups and groups[-1][-1].end_byte == child.start_byte:
            groups[-1].append(child)
        else:
            groups.append([child])
    return groups


def restore(scope: Scope, saved: Scope, name: str) -> None:
    """`name` as it was in `saved` (a function's `local` or prefix assignment, after the call)."""
    if name in saved.known.unset:
        scope.known.remove(name)
    elif name in saved.known.arrays:
        scope.known.arrays[name] = saved.known.arrays[name]
    elif name in saved.known.scalars:
        scope.known.set(name, saved.known.scalars[name])
    else:
        scope.known.scalars.pop(name, None)
        scope.known.unset.discard(name)
    if name in saved.exported:
        scope.exported[name] = saved.exported[name]
    else:
        scope.exported.pop(name, None)
    if name in saved.removed:
        scope.removed.add(name)
    else:
        scope.removed.discard(name)
