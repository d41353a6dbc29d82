"""The simple commands a bash script runs, read from its syntax tree (tree-sitter-bash); pure.

What the tree gives that a line splitter cannot: comments are not commands (a commented-out
`echo ... >> $GITHUB_OUTPUT` is not live), arrays and `"${A[@]}"`, `if`/`case`/`&&`/`||` with the branch a known
variable takes (and the condition kept on each command whose branch is not known before the run), `cd` and
`pushd` inside their block, functions called with their arguments, `FOO=1 cmd`, `export`, `unset`, pathname
patterns, and `bash -c '...'` read as a script of its own. The subset read is declared in `shell.subset`; a
statement the parser cannot read, or one outside the subset, is an unread command with its reason.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator, Sequence
from typing import Any

from matrix.schedule.containers.calls import read_marker, with_note
from matrix.schedule.shell import builtins
from matrix.schedule.shell.assignments import Assignments, restore
from matrix.schedule.shell.compound import Compound, _short
from matrix.schedule.shell.globs import Folders, expand
from matrix.schedule.shell.scope import CONTAINER, Command, Scope, normal, returned
from matrix.schedule.shell.subset import BUILTINS, Effect, Outside
from matrix.schedule.shell.words import Glob, NoMatch, Variables, env_value, is_run_time, text, words

__all__ = ["MAX_DEPTH", "Command", "Walk", "from_workspace", "parse", "walk"]

MAX_DEPTH = 4  # bash -c "sh -c '...'" nesting, and function calls inside function calls
MAX_COMMANDS = 20_000  # commands one script may give (loops over literal lists unrolled)
MAX_SOURCED = 16  # files one walk reads in through `source` / `.`
_MOVES = frozenset(name for name, b in BUILTINS.items() if b.effect is Effect.FOLDER)
# Builtins a simple statement without a keyword must still be walked for: they change the state.
_STATEFUL = frozenset(name for name, b in BUILTINS.items() if b.effect not in (Effect.NONE, Effect.WRAPPER))
_COMPOUND = frozenset({"if_statement", "case_statement", "for_statement", "c_style_for_statement", "while_statement"})
# What in a compound statement can change what later commands see: a folder, an assignment, a function, a source,
# any builtin that changes the state.
_CHANGES = re.compile(
    rb"\b(?:"
    + b"|".join(re.escape(n.encode()) for n in sorted(_STATEFUL | {"declare", "local", "function"}) if n.isidentifier())
    + rb")\b|\b[A-Za-z_]\w*\+?=|\(\)|^\s*\.\s|[;&|]\s*\.\s",
    re.M,
)
_SPREADS = (b"[@]", b"[*]", b"$@", b"$*")


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


class Walk(Compound, Assignments):
    """One walk over a script's tree, collecting its commands. `keywords` (the text a command of interest holds)
    lets the walk skip simple statements that hold none and change nothing it tracks."""

    def __init__(self, keywords: tuple[str, ...] | None, unwrap: Any, load: Any = None, folders: Folders | None = None) -> None:
        self.load = load  # path -> text or None: `source FILE` is read into this walk (its functions and variables)
        self.folders = folders  # the checkout's folders, for pathname patterns (None: a pattern is run-time)
        self.sourced: list[str] = []
        self.file = ""
        self.split = False  # whether a text this walk reads has a redirection split over a line break
        self.keywords = None if keywords is None else tuple(k.encode() for k in keywords)
        self.unwrap = unwrap  # shell.commands.unwrap: (words, env) -> (words, folder)
        self.out: list[Command] = []
        self.functions: dict[str, Any] = {}
        self.called: set[str] = set()
        self._locals: list[set[str]] = []  # the names made `local` in each function being walked, innermost last
        self._sourcing = 0  # files being read through `source` (where `return` ends the file)

    def script(self, source: str, scope: Scope, depth: int, line: int = 0) -> None:
        self.split = self.split or _has_split(source)
        root = parse(source).root_node
        self.block(root.children if root.type == "program" else [root], scope, depth, line)
        for name, (body, offset, file) in self.functions.items():
            if name not in self.called and self._holds(body):
                self.file = file
                self._unread(
                    body,
                    scope,
                    offset,
                    f"a command of interest inside the shell function {name}(), which this script does not call itself"
                    " (a script sourcing it may; that call is not followed)",
                )

    def _matters(self, node: Any) -> bool:
        """Whether a compound statement may run a command of interest or change what later ones see (a folder,
        a variable, a function, a sourced file, a shell option)."""
        body = node.text
        return (
            any(k in body for k in self.keywords or ())
            or _CHANGES.search(body) is not None
            or any(name.encode() in body for name in self.functions)
        )

    def _holds(self, node: Any) -> bool:
        return self.keywords is None or any(k in node.text for k in self.keywords)

    def _unread(self, node: Any, scope: Scope, line: int, reason: str) -> None:
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

    def _glob(self, scope: Scope) -> Glob | None:
        if scope.noglob:
            return None
        folders, options, working = self.folders, scope.glob, scope.working_dir

        def matches(pattern: str) -> Sequence[str] | None:
            if folders is None:
                return None
            found = expand(pattern, working, folders, options)
            return None if found is None else (found if found or not options.nullglob else NoMatch())

        return matches

    def block(self, nodes: Any, scope: Scope, depth: int, line: int, *, recovered: bool = False) -> None:
        """Walk statements in order. bash stops a script at a syntax error, so the statements before one are read
        and the rest is one unread entry (what the parser makes of it is its recovery, not bash's reading); inside
        the parser's recovery (`recovered`), anything but a whole statement counts as the error."""
        nodes = list(nodes)
        for index, node in enumerate(nodes):
            if len(self.out) >= MAX_COMMANDS or scope.stopped:
                return
            if node.type == "ERROR" and (node.parent is None or node.parent.type == "program"):
                # the statements the parser recovered inside the error, up to where bash would stop, then the rest
                self.block([*node.children, *nodes[index + 1 :]], scope, depth, line, recovered=True)
                return
            whole = node.type in _HANDLERS or node.type == "comment"
            if (
                node.type == "ERROR"
                or node.has_error
                or (self.split and _split_redirect(node))
                or (recovered and not whole)
                or _stray_line_break(node)
            ):
                self._broken(nodes[index:], scope, line)
                return
            self.statement(node, scope, depth, line)

    def _broken(self, rest: list[Any], scope: Scope, line: int) -> None:
        if any(self._holds(c) for c in rest):
            shown = " ".join(" ".join(text(c).split()) for c in rest)[:80]
            self._unread(rest[0], scope, line, f"the shell parser cannot read `{shown}` (nor what follows it)")

    def statement(self, node: Any, scope: Scope, depth: int, line: int) -> None:
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
        if handler is None:
            self._outside(node, scope, line, f"`{_short(node)}` ({kind.replace('_', ' ')})")
            return
        try:
            handler(self, node, scope, depth, line)
        except Outside as exc:
            self._outside(node, scope, line, exc.construct, later=exc.later)

    def _outside(self, node: Any, scope: Scope, line: int, construct: str, *, later: bool | None = None) -> None:
        """A statement outside the subset: unread when it may run a command of interest; when it may change what
        later commands see (`later`; by default: when it holds a word that changes the state), every later command
        of interest is unread too."""
        if self._holds(node):
            self._unread(node, scope, line, f"{construct} is outside what this reader models")
        if later or (later is None and _CHANGES.search(node.text) is not None):
            scope.outside = scope.outside or f"{construct} (line {line + node.start_point[0] + 1})"

    # --- simple statements ------------------------------------------------------------------------------------

    def command(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        name_node = node.child_by_field_name("name")
        if name_node is None:  # `FOO=1` alone parses as a command without a name in some positions
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self._assign(child, scope)
            return
        first = text(name_node)
        if (
            self.keywords is not None
            and first not in self.functions
            and first not in _STATEFUL
            and not any(k in node.text for k in self.keywords)
            and not any(w in node.text for w in _SPREADS)
        ):
            return  # no keyword, no state change, no array or argument list that could hold one
        self._substitutions(node, scope, depth, line)
        env: list[tuple[str, str]] = []
        argv: list[str] = []
        glob = self._glob(scope)
        for child in node.named_children:
            if child.type == "variable_assignment":
                found = child.child_by_field_name("name")
                if found is not None:
                    env.append((text(found), env_value(child, scope.known)))
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                continue
            elif child.type == "command_name":
                argv.extend(words(child.named_children[0], scope.known, glob) if child.named_child_count else [text(child)])
            else:
                argv.extend(words(child, scope.known, glob))
        self.simple(argv, env, scope, depth, line + node.start_point[0] + 1, node=node)

    def _substitutions(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        """`$(pytest ...)`, `<(pytest ...)` inside a command: they run, in a subshell."""
        if self.keywords is None or not any(k in node.text for k in self.keywords):
            return
        stack = list(node.named_children)
        while stack:
            child = stack.pop()
            if child.type in ("command_substitution", "process_substitution"):
                if self._holds(child):
                    self.block(child.named_children, scope.branch(), depth, line)
            else:
                stack.extend(child.named_children)

    def simple(self, argv: list[str], env: list[tuple[str, str]], scope: Scope, depth: int, at: int, *, node: Any = None) -> None:
        written = argv[0] if argv else ""
        argv, folder = self.unwrap(argv, env)
        if not argv:
            marker = next((v for k, v in env if k == CONTAINER), None)
            if marker is not None:  # `docker run -d --name C IMAGE`: a start, running no command
                pairs = normal(scope.exported.items(), scope.removed, env)[0]
                lost = read_marker(marker).lost
                why = f"{lost}: what it runs is not read" if lost and node is not None and self._holds(node) else ""
                self.out.append(
                    Command(words=(), env=pairs, working_dir=scope.working_dir, conditions=scope.conditions, line=at, unread=why)
                )
            return
        here = scope
        if folder is not None:  # `docker exec -w DIR`, `env -C DIR`: the command, and what it runs, starts there
            here = scope.branch()
            here.working_dir = builtins.moved(scope.working_dir, folder)
        head = argv[0]
        pairs, unset, cleared, stops = normal(scope.exported.items(), scope.removed, env)
        entering = any(k == CONTAINER for k, _ in env)
        sourced = not entering and not scope.container and head in ("source", ".") and len(argv) > 1
        if sourced and self._source(argv[1], scope, depth):
            return
        if scope.container and head in ("source", ".") and len(argv) > 1 and CONTAINER in scope.exported:
            if not argv[1].endswith("/bin/activate"):  # a virtualenv's activate sets no variable a test reads
                note = f"`source {argv[1][:60]}` in the container may set variables"
                scope.exported[CONTAINER] = with_note(scope.exported[CONTAINER], note)
            return
        # `command f`, `env f`, `sudo f`, `timeout 5 f` run a program, never the shell's function f (`time` is a
        # reserved word of bash: `time f` runs the function)
        calls = written in (head, "time")
        if calls and not entering and not scope.container and head in self.functions and depth < MAX_DEPTH:
            self._call(head, argv, env, scope, depth)
            return
        if head == "return" and not self._locals and not self._sourcing:
            return  # bash refuses `return` outside a function or a sourced file, and goes on
        if not entering and builtins.effect(argv, scope):
            if head == "trap" and len(argv) > 1 and self._holds_text(argv[1]):
                self._emit(argv, (), scope, at, unread=f"`trap {argv[1][:60]}` runs its command at a signal or at exit")
            return
        inline = _inline_script(argv)
        if inline is not None:
            self._inline(inline, argv, (pairs, unset, cleared), (here, scope), at=at, depth=depth, entering=entering)
        elif scope.outside:
            self._emit(argv, (), here, at, unread=f"runs after {scope.outside}, outside what this reader models")
        else:
            self.out.append(
                Command(
                    words=tuple(argv),
                    env=pairs,
                    working_dir=here.working_dir,
                    conditions=scope.conditions,
                    line=at,
                    unset=unset,
                    cleared=cleared,
                )
            )
        if folder is None and here is not scope:
            scope.working_dir = here.working_dir
        if stops:
            scope.stopped = "exit"

    def _holds_text(self, value: str) -> bool:
        return self.keywords is None or any(k in value.encode() for k in self.keywords)

    def _emit(self, argv: list[str], env: tuple[tuple[str, str], ...], scope: Scope, at: int, *, unread: str) -> None:
        if self._holds_text(" ".join(argv)):
            self.out.append(
                Command(words=(), env=env, working_dir=scope.working_dir, conditions=scope.conditions, line=at, unread=unread)
            )

    def _inline(
        self,
        inline: str,
        argv: list[str],
        environment: tuple[tuple[tuple[str, str], ...], tuple[str, ...], bool],
        scopes: tuple[Scope, Scope],
        *,
        depth: int,
        at: int,
        entering: bool,
    ) -> None:
        """`bash -c SCRIPT` (also `-lc`, `-ex -c`): SCRIPT read as a script of its own, in a child shell that knows
        the environment only (`environment`: the pairs, unset names and `env -i` of the command; `scopes`: the
        command's own and the script's). In a container the child starts from nothing the runner's shell knows."""
        here, scope = scopes
        if depth >= MAX_DEPTH:
            self._emit(argv, (), here, at, unread=f"shell scripts nested deeper than {MAX_DEPTH}")
            return
        if scope.outside:
            self._emit(argv, (), here, at, unread=f"runs after {scope.outside}, outside what this reader models")
            return
        pairs, unset, cleared = environment
        child = Variables()
        if not (entering or scope.container or cleared):
            for name in scope.inherited - set(unset):
                if name in scope.known.scalars and name not in scope.known.unset:
                    child.scalars[name] = scope.known.scalars[name]
        for name, value in pairs:
            if not name.startswith("@"):
                child.set(name, None if is_run_time(value) else value)
        inner = Scope(
            known=child,
            working_dir=here.working_dir,
            exported=dict(pairs),
            removed=set(unset),
            inherited=frozenset(child.scalars),
            conditions=scope.conditions,
            container=entering or scope.container,
        )
        if inner.container and _login(argv):
            inner.exported[CONTAINER] = with_note(inner.exported.get(CONTAINER, ""), _LOGIN)
        if inner.container and _interactive(argv):
            inner.exported[CONTAINER] = with_note(inner.exported.get(CONTAINER, ""), _INTERACTIVE)
        if inner.container and CONTAINER in inner.exported:
            inner.exported[CONTAINER] = with_note(inner.exported[CONTAINER], "", shell=posixpath.basename(argv[0]))
        self.script_text(inline, inner, depth + 1, at)

    def _call(self, head: str, argv: list[str], env: list[tuple[str, str]], scope: Scope, depth: int) -> None:
        """A shell function: its body with these arguments; the variables it sets are the caller's afterwards, but
        for those it made `local` (and the prefix assignments, which last the call only)."""
        self.called.add(head)
        inner = scope.branch()
        inner.known.positional = tuple(argv[1:])
        prefix = {k: v for k, v in env if not k.startswith("@")}
        for name, value in prefix.items():
            inner.assign(name, value, value)
            inner.exported[name] = value
        inner_locals: set[str] = set()
        body, offset, file = self.functions[head]
        before, self.file = self.file, file
        self._locals.append(inner_locals)
        try:
            self.statement(body, inner, depth + 1, offset)
        finally:
            self._locals.pop()
            self.file = before
        saved = scope.branch()
        positional = scope.known.positional
        if inner.stopped in ("exit", "fail"):
            scope.take(inner)
        else:
            returned(inner, saved.carried)
            scope.take(inner)
        scope.known.positional = positional
        for name in inner_locals | set(prefix):
            restore(scope, saved, name)

    def _source(self, path: str, scope: Scope, depth: int) -> bool:
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
        self._sourcing += 1
        carried = scope.carried
        try:
            self.block(root.children if root.type == "program" else [root], scope, depth + 1, 0)
        finally:
            self._sourcing -= 1
        if scope.stopped not in ("exit", "fail"):
            returned(scope, carried)
        self.file = before
        return True

    def script_text(self, source: str, scope: Scope, depth: int, at: int) -> None:
        """A script given as a string (`bash -c '...'`): its commands all at the line of the command holding it."""
        before = len(self.out)
        self.split = self.split or _has_split(source)
        root = parse(source).root_node
        self.block(root.children if root.type == "program" else [root], scope, depth, 0)
        self.out[before:] = [
            Command(
                words=c.words,
                env=c.env,
                working_dir=c.working_dir,
                conditions=c.conditions,
                line=at,
                unread=c.unread,
                unset=c.unset,
                cleared=c.cleared,
            )
            for c in self.out[before:]
        ]

    def function(self, node: Any, scope: Scope, depth: int, line: int) -> None:
        name = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        if name is not None and body is not None:
            self.functions[text(name)] = (body, line, self.file)


_SPLIT_REDIRECT = re.compile(rb"(?<![<>])(?:<|>|>>|&>|[0-9]>)[ \t]*\n")


@functools.lru_cache(maxsize=256)
def _stray_line_break(node: Any) -> bool:
    """Whether an unquoted word of the statement spans a line break that no backslash escapes: bash ends a command
    there, so the parse is the parser's recovery, not bash's reading (`cd ..` then a line `\\;|` was read as one
    command joined into a pipeline)."""
    stack, seen = [node], 0
    while stack and seen < 10_000:
        current = stack.pop()
        seen += 1
        if current.type == "word" and _STRAY_BREAK.search(text(current)):
            return True
        stack.extend(current.named_children)
    return False


_STRAY_BREAK = re.compile(r"(?<!\\)\n")


def _has_split(source: str) -> bool:
    return _SPLIT_REDIRECT.search(source.encode("utf-8", "replace")) is not None


def _split_redirect(node: Any) -> bool:
    return b"\n" in node.text and _SPLIT_REDIRECT.search(node.text) is not None


_WORKSPACE = re.compile(r"^(?:\$\{?GITHUB_WORKSPACE\}?|\$\{?CI_PROJECT_DIR\}?|\$\{?BUILDKITE_BUILD_CHECKOUT_PATH\}?)(?=/|$)")


def from_workspace(path: str) -> str | None:
    """`path` from the repository root when it starts at the checkout (`$GITHUB_WORKSPACE/x`), else None."""
    rooted = _WORKSPACE.sub(".", path, count=1)
    return posixpath.normpath(rooted) if rooted != path else None


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


def _login(words: list[str]) -> bool:
    """Whether `bash -lc` / `bash --login -c` starts a login shell (it reads /etc/profile and /etc/profile.d)."""
    flags = [w for w in words[1:] if w.startswith("-")]
    return "--login" in flags or any(not f.startswith("--") and "l" in f[1:] for f in flags)


_LOGIN = "a login shell (`bash -l`) reads /etc/profile and /etc/profile.d in the container"


def _interactive(words: list[str]) -> bool:
    """Whether `bash -ic` / `bash --rcfile F -c` starts an interactive shell (it reads ~/.bashrc or the file)."""
    flags = [w for w in words[1:] if w.startswith("-")]
    return bool({"--rcfile", "--init-file"} & set(flags)) or any(not f.startswith("--") and "i" in f[1:] for f in flags)


_INTERACTIVE = "an interactive shell (`bash -i`) reads ~/.bashrc in the container"


_HANDLERS: dict[str, Any] = {
    "command": Walk.command,
    "variable_assignment": Walk.assignment,
    "variable_assignments": Walk.children,
    "declaration_command": Walk.declaration,
    "unset_command": Walk.unset,
    "program": Walk.children,
    "compound_statement": Walk.children,
    "do_group": Walk.children,
    "subshell": Walk.subshell,
    "pipeline": Walk.pipeline,
    "redirected_statement": Walk.redirected,
    "negated_command": Walk.negated,
    "function_definition": Walk.function,
    "list": Walk.list_,
    "if_statement": Walk.if_,
    "case_statement": Walk.case,
    "for_statement": Walk.loop,
    "c_style_for_statement": Walk.loop,
    "while_statement": Walk.loop,
    "test_command": Walk.test,
}


def walk(
    script: str,
    working_dir: str,
    known: Variables,
    keywords: tuple[str, ...] | None,
    unwrap: Any,
    *,
    load: Any = None,
    folders: Folders | None = None,
) -> Iterator[Command]:
    """The commands of `script` run from `working_dir` with `known` variables (see the module docstring); the
    names `known` holds are the script's environment (already exported)."""
    walker = Walk(keywords, unwrap, load, folders)
    walker.script(script, Scope(known=known, working_dir=working_dir, inherited=frozenset(known.scalars)), 0)
    yield from walker.out
