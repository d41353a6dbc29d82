"""The simple commands a bash script runs, read from its syntax tree (tree-sitter-bash); pure.

What the tree gives that a line splitter cannot: comments are not commands (a commented-out
`echo ... >> $GITHUB_OUTPUT` is not live), arrays and `"${A[@]}"`, `if`/`case`/`&&`/`||` with the branch a known
variable takes (and the condition kept on each command whose branch is not known before the run), `cd` and
`pushd` inside their block, functions called with their arguments, `FOO=1 cmd`, `export`, and `bash -c '...'`
read as a script of its own. A statement the parser cannot read is an unread command with its reason.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from matrix.schedule.shell.conditions import Truth, case_matches, truth
from matrix.schedule.shell.words import Variables, assigned, env_value, text, words

MAX_DEPTH = 4  # bash -c "sh -c '...'" nesting, and function calls inside function calls
MAX_COMMANDS = 20_000  # commands one script may give (loops over literal lists unrolled)
MAX_LOOP_VALUES = 16
MAX_SOURCED = 16  # files one walk reads in through `source` / `.`
_MOVES = frozenset({"cd", "pushd", "popd"})
_COMPOUND = frozenset({"if_statement", "case_statement", "for_statement", "c_style_for_statement", "while_statement"})
# What in a compound statement can change what later commands see: a folder, an assignment, a function, a source.
_CHANGES = re.compile(
    rb"\b(?:cd|pushd|popd|source|export|declare|readonly|local|function)\b|\b[A-Za-z_]\w*\+?=|\(\)|^\s*\.\s|[;&|]\s*\.\s", re.M
)
_SPREADS = (b"[@]", b"[*]", b"$@", b"$*")


@dataclass(frozen=True, kw_only=True)
class Command:
    """One simple command: its words (prefix assignments removed), those assignments (and the variables the
    script exported before it), the directory it runs in, the conditions its branch rests on, its line in the
    script, and, for a statement the parser could not read, why (its words are then empty)."""

    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    working_dir: str
    conditions: tuple[str, ...] = ()
    line: int = 1
    unread: str = ""
    file: str = ""  # the file a sourced script's command is written in; "" for the script being read


@functools.cache
def _parser() -> Any:
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


@functools.lru_cache(maxsize=256)
def parse(script: str) -> Any:
    """The syntax tree of a script (tree-sitter never raises: what it cannot read becomes ERROR nodes); a script
    read for several jobs (other env, other folder) is parsed once."""
    return _parser().parse(script.encode("utf-8", "replace"))


@dataclass(kw_only=True)
class _Scope:
    known: Variables
    working_dir: str
    exported: dict[str, str] = field(default_factory=dict)
    conditions: tuple[str, ...] = ()
    dirs: list[str] = field(default_factory=list)  # pushd's stack

    def branch(self, condition: str | None = None) -> _Scope:
        extra = (condition,) if condition else ()
        return _Scope(
            known=self.known.copy(),
            working_dir=self.working_dir,
            exported=dict(self.exported),
            conditions=(*self.conditions, *extra),
            dirs=list(self.dirs),
        )


class Walk:
    """One walk over a script's tree, collecting its commands. `keywords` (the text a command of interest holds)
    lets the walk skip simple statements that hold none and change nothing it tracks."""

    def __init__(self, keywords: tuple[str, ...] | None, unwrap: Any, load: Any = None) -> None:
        self.load = load  # path -> text or None: `source FILE` is read into this walk (its functions and variables)
        self.sourced: list[str] = []
        self.file = ""
        self.split = False  # whether a text this walk reads has a redirection split over a line break
        self.keywords = None if keywords is None else tuple(k.encode() for k in keywords)
        self.unwrap = unwrap  # shell.unwrap: (words, env) -> words
        self.out: list[Command] = []
        self.functions: dict[str, Any] = {}
        self.called: set[str] = set()

    def script(self, source: str, scope: _Scope, depth: int, line: int = 0) -> None:
        self.split = self.split or _has_split(source)
        root = parse(source).root_node
        self.block(root.children if root.type == "program" else [root], scope, depth, line)
        for name, (body, offset, file) in self.functions.items():
            if name not in self.called and self._holds(body):
                line = offset
                self.file = file
                self._unread(
                    body,
                    scope,
                    line,
                    f"a command of interest inside the shell function {name}(), which this script does not call itself"
                    " (a script sourcing it may; that call is not followed)",
                )

    def _matters(self, node: Any) -> bool:
        """Whether a compound statement may run a command of interest or change what later ones see (a folder,
        a variable, a function, a sourced file)."""
        body = node.text
        return (
            any(k in body for k in self.keywords or ())
            or _CHANGES.search(body) is not None
            or any(name.encode() in body for name in self.functions)
        )

    def _holds(self, node: Any) -> bool:
        return self.keywords is None or any(k in node.text for k in self.keywords)

    def _unread(self, node: Any, scope: _Scope, line: int, reason: str) -> None:
        self.out.append(
            Command(
                words=(),
                env=(),
                working_dir=scope.working_dir,
                conditions=scope.conditions,
                line=line + node.start_point[0] + 1,
                unread=reason,
                file=self.file,
            )
        )

    def block(self, nodes: Any, scope: _Scope, depth: int, line: int, *, recovered: bool = False) -> None:
        """Walk statements in order. bash stops a script at a syntax error, so the statements before one are read
        and the rest is one unread entry (what the parser makes of it is its recovery, not bash's reading); inside
        the parser's recovery (`recovered`), anything but a whole statement counts as the error."""
        nodes = list(nodes)
        for index, node in enumerate(nodes):
            if len(self.out) >= MAX_COMMANDS:
                return
            if node.type == "ERROR" and (node.parent is None or node.parent.type == "program"):
                # the statements the parser recovered inside the error, up to where bash would stop, then the rest
                self.block([*node.children, *nodes[index + 1 :]], scope, depth, line, recovered=True)
                return
            whole = node.type in _HANDLERS or node.type == "comment"
            if node.type == "ERROR" or node.has_error or (self.split and _split_redirect(node)) or (recovered and not whole):
                self._broken(nodes[index:], scope, line)
                return
            self.statement(node, scope, depth, line)

    def _broken(self, rest: list[Any], scope: _Scope, line: int) -> None:
        if any(self._holds(c) for c in rest):
            shown = " ".join(" ".join(text(c).split()) for c in rest)[:80]
            self._unread(rest[0], scope, line, f"the shell parser cannot read `{shown}` (nor what follows it)")

    def statement(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        kind = node.type
        if kind in ("comment", "heredoc_body", ";", "&", "\n") or not node.is_named:
            return
        if node.has_error:
            if self._holds(node):
                first = " ".join(text(node).split())[:80]
                self._unread(node, scope, line, f"the shell parser cannot read `{first}`")
            return
        if self.keywords is not None and kind in _COMPOUND and not self._matters(node):
            return  # nothing a reader wants, and nothing later commands depend on
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, node, scope, depth, line)

    # --- simple statements ------------------------------------------------------------------------------------

    def command(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:  # `FOO=1` alone parses as a command without a name in some positions
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self._assign(child, scope, exported=False)
            return
        first = text(name_node)
        if (
            self.keywords is not None
            and first not in self.functions
            and first not in _MOVES
            and not any(k in node.text for k in self.keywords)
            and not any(w in node.text for w in _SPREADS)
        ):
            return  # no keyword, no folder change, no array or argument list that could hold one
        env: list[tuple[str, str]] = []
        argv: list[str] = []
        for child in node.named_children:
            if child.type == "variable_assignment":
                found = child.child_by_field_name("name")
                if found is not None:
                    env.append((text(found), env_value(child, scope.known)))
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                continue
            elif child.type == "command_name":
                argv.extend(words(child.named_children[0], scope.known) if child.named_child_count else [text(child)])
            else:
                argv.extend(words(child, scope.known))
        self.simple(argv, env, scope, depth, line + node.start_point[0] + 1)

    def simple(self, argv: list[str], env: list[tuple[str, str]], scope: _Scope, depth: int, at: int) -> None:
        argv, folder = self.unwrap(argv, env)
        if not argv:
            return
        if folder is not None:  # `docker exec -w DIR`: the command, and what it runs, starts there
            scope = scope.branch()
            scope.working_dir = _moved(scope.working_dir, folder)
        head = argv[0]
        if head in ("cd", "pushd"):
            target = argv[1] if len(argv) > 1 else "."
            if head == "pushd":
                scope.dirs.append(scope.working_dir)
            scope.working_dir = _moved(scope.working_dir, target)
            return
        if head == "popd":
            scope.working_dir = scope.dirs.pop() if scope.dirs else scope.working_dir
            return
        if head == ":" and len(argv) > 1:
            return
        if head in ("source", ".") and len(argv) > 1 and self._source(argv[1], scope, depth):
            return
        if head in self.functions and depth < MAX_DEPTH:
            self.called.add(head)
            inner = scope.branch()
            inner.known.positional = tuple(argv[1:])
            inner.exported.update(env)
            body, offset, file = self.functions[head]
            before, self.file = self.file, file
            self.statement(body, inner, depth + 1, offset)
            self.file = before
            scope.working_dir = inner.working_dir
            return
        inline = _inline_script(argv)
        if inline is not None:
            if depth < MAX_DEPTH:
                inner = scope.branch()
                inner.exported.update(env)
                for name, value in env:
                    inner.known.scalars[name] = value
                self.script_text(inline, inner, depth + 1, at)
            else:
                self.out.append(
                    Command(
                        words=(),
                        env=(),
                        working_dir=scope.working_dir,
                        conditions=scope.conditions,
                        line=at,
                        unread=f"shell scripts nested deeper than {MAX_DEPTH}",
                    )
                )
            return
        merged = {**scope.exported, **dict(env)}
        self.out.append(
            Command(
                words=tuple(argv), env=tuple(merged.items()), working_dir=scope.working_dir, conditions=scope.conditions, line=at
            )
        )

    def _source(self, path: str, scope: _Scope, depth: int) -> bool:
        """Read `source PATH` into this walk, as bash does (its functions and variables stay); False when it
        cannot be (no loader, a run-time path, missing, too many): the command is then kept for the caller."""
        if self.load is None or "$" in path or "`" in path or depth >= MAX_DEPTH or len(self.sourced) >= MAX_SOURCED:
            return False
        target = path if path.startswith("/") else posixpath.normpath(posixpath.join(scope.working_dir, path))
        source = self.load(target)
        if source is None:
            return False
        self.sourced.append(target)
        self.split = self.split or _has_split(source)
        before, self.file = self.file, target
        root = parse(source).root_node
        self.block(root.children if root.type == "program" else [root], scope, depth + 1, 0)
        self.file = before
        return True

    def script_text(self, source: str, scope: _Scope, depth: int, at: int) -> None:
        """A script given as a string (`bash -c '...'`): its commands all at the line of the command holding it."""
        before = len(self.out)
        self.split = self.split or _has_split(source)
        root = parse(source).root_node
        self.block(root.children if root.type == "program" else [root], scope, depth, 0)
        self.out[before:] = [
            Command(words=c.words, env=c.env, working_dir=c.working_dir, conditions=c.conditions, line=at, unread=c.unread)
            for c in self.out[before:]
        ]

    def assignment(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        self._assign(node, scope, exported=False)

    def declaration(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        exported = text(node).startswith("export")
        for child in node.named_children:
            if child.type == "variable_assignment":
                self._assign(child, scope, exported=exported)
            elif child.type == "variable_name" and exported:
                value = scope.known.value(text(child))
                if value is not None:
                    scope.exported[text(child)] = value

    def _assign(self, node: Any, scope: _Scope, *, exported: bool) -> None:
        found = assigned(node, scope.known)
        if found is None:
            return
        name, value, items = found
        if items is not None:
            scope.known.arrays[name] = items
            scope.known.scalars.pop(name, None)
            return
        scope.known.arrays.pop(name, None)
        scope.known.scalars[name] = value
        if value is None:
            written = text(node.child_by_field_name("value")) if node.child_by_field_name("value") else ""
            if exported or name in scope.exported:
                scope.exported[name] = written  # the reader sees `$(...)`: known only at run time
        elif exported or name in scope.exported:
            scope.exported[name] = value

    # --- compound statements ------------------------------------------------------------------------------------

    def children(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        self.block(node.named_children, scope, depth, line)

    def subshell(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        self.block(node.named_children, scope.branch(), depth, line)

    def redirected(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, scope, depth, line)

    def negated(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        self.block(node.named_children, scope, depth, line)

    def function(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None and body is not None:
            self.functions[text(name)] = (body, line, self.file)

    def list_(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        """`a && b && c`: each part runs when the ones before succeed (a test on the way decides that); `a || b`:
        `b` runs when `a` fails; a chain mixing both is read part by part, each conditional."""
        parts = _chain(node)
        operators = {op for op, _ in parts[1:]}
        if operators == {"||"} and len(parts) == 2 and parts[0][1].type in _TESTS:
            self._when(truth(parts[0][1], scope.known).negated(), parts[1][1], scope, depth, line)
            return
        if operators <= {"&&"}:
            inner = scope.branch()
            certain = True
            for _, part in parts:
                if part.type in _TESTS:
                    decided = truth(part, scope.known)
                    if decided.value is False:
                        break
                    certain = certain and decided.value is True
                    inner.conditions = tuple(c for c in (*inner.conditions, decided.assumption()) if c)
                else:
                    self.statement(part, inner, depth, line)
            _join(scope, [inner], certain)
            return
        self.statement(parts[0][1], scope, depth, line)
        for _, part in parts[1:]:
            if part.type not in _TESTS:
                inner = scope.branch(f"runs only as `{_short(node)}` decides (known only at run time)")
                self.statement(part, inner, depth, line)
                _join(scope, [inner], False)

    def _when(self, decided: Truth, node: Any, scope: _Scope, depth: int, line: int) -> None:
        """Walk `node` as the branch a condition selects: skipped when it is known false."""
        if decided.value is False:
            return
        inner = scope.branch(decided.assumption())
        self.statement(node, inner, depth, line)
        _join(scope, [inner], decided.value is True)

    def if_(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
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
        branches: list[_Scope] = []
        before: list[Truth] = []  # the conditions that must have failed for this clause to be reached
        certain = False
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
            if commands_run:  # `if python3 run_suite.py ...; then`: the condition itself runs
                tried = scope.branch()
                tried.conditions = (*tried.conditions, *(b.negated().assumption() for b in before if b.value is None))
                self.block(commands_run, tried, depth, line)
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
        _join(scope, branches, certain and len(branches) == 1)

    def case(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        value_node = node.child_by_field_name("value")
        subject = words(value_node, scope.known)[0] if value_node is not None else ""
        branches: list[_Scope] = []
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
        _join(scope, branches, certain)

    def loop(self, node: Any, scope: _Scope, depth: int, line: int) -> None:
        body = node.child_by_field_name("body")
        if body is None:
            return
        variable = node.child_by_field_name("variable")
        values = [c for i, c in enumerate(node.children) if node.field_name_for_child(i) == "value"]
        if node.type == "for_statement" and variable is not None:
            items = [w for v in values for w in words(v, scope.known)]
            name = text(variable)
            if values and len(items) <= MAX_LOOP_VALUES and not any("$" in i or "`" in i or "*" in i for i in items):
                for item in items:
                    inner = scope.branch()
                    inner.known.scalars[name] = item
                    self.statement(body, inner, depth, line)
                return
            inner = scope.branch(f"runs once for each value of ${name} in `{_short(node)}` (known only at run time)")
            inner.known.scalars[name] = None
            self.statement(body, inner, depth, line)
            _join(scope, [inner], False)
            return
        inner = scope.branch(f"runs inside `{_short(node)}` (how often is known only at run time)")
        self.statement(body, inner, depth, line)
        _join(scope, [inner], False)


_TESTS = frozenset({"test_command", "negated_command"})


# A redirection whose target is on the next line (`<` then a line break): a syntax error to bash, read across the
# line break by the parser.
_SPLIT_REDIRECT = re.compile(rb"(?<![<>])(?:<|>|>>|&>|[0-9]>)[ \t]*\n")


@functools.lru_cache(maxsize=256)
def _has_split(source: str) -> bool:
    return _SPLIT_REDIRECT.search(source.encode("utf-8", "replace")) is not None


def _split_redirect(node: Any) -> bool:
    return b"\n" in node.text and _SPLIT_REDIRECT.search(node.text) is not None


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


def _join(scope: _Scope, branches: list[_Scope], certain: bool) -> None:
    """After a branch: what every path agrees on is known, the rest is known only at run time."""
    if certain and len(branches) == 1:
        only = branches[0]
        scope.known, scope.exported, scope.working_dir, scope.dirs = only.known, only.exported, only.working_dir, only.dirs
        return
    paths = [*branches, scope]
    for branch in branches:
        for name, value in branch.known.scalars.items():
            if any(p.known.scalars.get(name, "\x01") != value for p in paths):
                scope.known.scalars[name] = None
        for name in branch.known.arrays:
            if any(p.known.arrays.get(name) != branch.known.arrays[name] for p in paths):
                scope.known.arrays[name] = None
        for name, value in branch.exported.items():
            if name not in scope.exported or scope.exported[name] != value:
                scope.exported[name] = f"$({name} set on a branch)"
    if any(b.working_dir != scope.working_dir for b in branches):
        scope.working_dir = "$(a folder chosen on a branch)"


_WORKSPACE = re.compile(r"^(?:\$\{?GITHUB_WORKSPACE\}?|\$\{?CI_PROJECT_DIR\}?|\$\{?BUILDKITE_BUILD_CHECKOUT_PATH\}?)(?=/|$)")


def from_workspace(path: str) -> str | None:
    """`path` from the repository root when it starts at the checkout (`$GITHUB_WORKSPACE/x`), else None."""
    rooted = _WORKSPACE.sub(".", path, count=1)
    return posixpath.normpath(rooted) if rooted != path else None


def _moved(working_dir: str, target: str) -> str:
    target = _WORKSPACE.sub(".", target)  # the checkout: the repository root
    if target.startswith("/") or "$" in target or target in ("-", "~") or target.startswith("~"):
        return target
    return posixpath.normpath(posixpath.join(working_dir, target))


def _short(node: Any) -> str:
    if node is None:
        return ""
    shown = " ".join(text(node).split())
    return shown if len(shown) <= 80 else shown[:77] + "..."


_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})


def _inline_script(words: list[str]) -> str | None:
    """The script of `bash -c "..."` (also `bash -lc`, `bash -ex -c`), else None."""
    if not words or posixpath.basename(words[0]) not in _SHELLS:
        return None
    for j, flag in enumerate(words[1:], start=1):
        if flag == "-c" or (flag.startswith("-") and not flag.startswith("--") and "c" in flag[1:]):
            return words[j + 1] if j + 1 < len(words) else None
        if not flag.startswith("-") and not flag.startswith("+"):
            return None
    return None


_HANDLERS: dict[str, Any] = {
    "command": Walk.command,
    "variable_assignment": Walk.assignment,
    "variable_assignments": Walk.children,
    "declaration_command": Walk.declaration,
    "program": Walk.children,
    "compound_statement": Walk.children,
    "do_group": Walk.children,
    "subshell": Walk.subshell,
    "pipeline": Walk.children,
    "redirected_statement": Walk.redirected,
    "negated_command": Walk.negated,
    "function_definition": Walk.function,
    "list": Walk.list_,
    "if_statement": Walk.if_,
    "case_statement": Walk.case,
    "for_statement": Walk.loop,
    "c_style_for_statement": Walk.loop,
    "while_statement": Walk.loop,
}


def walk(
    script: str, working_dir: str, known: Variables, keywords: tuple[str, ...] | None, unwrap: Any, *, load: Any = None
) -> Iterator[Command]:
    """The commands of `script` run from `working_dir` with `known` variables (see the module docstring)."""
    walker = Walk(keywords, unwrap, load)
    walker.script(script, _Scope(known=known, working_dir=working_dir), 0)
    yield from walker.out
