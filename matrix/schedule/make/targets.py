"""The recipe `make TARGET` runs, read from the Makefile as a shell script; pure.

GNU make rules this follows (GNU make manual, "Rule Syntax", "Recipe Syntax", "Variables"): a rule is `targets:
prerequisites` (not `:=`), its recipe the TAB-indented lines after it, a line ending in `\\` continued on the next;
`@`, `-`, `+` in front of a recipe line are make's, not the shell's; `$$` is a `$`; `$(NAME)` / `${NAME}` are make
variables (`NAME = v`, `:=`, `?=`, and `NAME=v` on the command line, which wins). Each recipe line runs in a shell
of its own, so the script given here puts each in a subshell (a `cd` does not carry to the next line).
Prerequisites run first. `$(if COND,THEN,ELSE)` is read (`_conditionals`). What this does not read (pattern
rules, other functions such as `$(shell ...)`, includes) stays as written, and a command holding it is unread by
the command readers rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MAX_TARGETS = 32  # targets followed per `make` (prerequisites included)
MAX_EXPANSIONS = 8  # nested variable references
_RULE = re.compile(r"^([^\t#=:][^#=:]*?)\s*::?(?![=])\s*(.*)$")
_ASSIGN = re.compile(r"^(?:export\s+|override\s+)?([A-Za-z_][\w.-]*)\s*(\?=|:=|::=|\+=|=)\s*(.*)$")
_REFERENCE = re.compile(r"\$[({]([A-Za-z_][\w.-]*)[)}]")
_MAKE_VALUED = frozenset({"-C", "--directory", "-f", "--file", "--makefile", "-j", "--jobs", "-l", "-I", "-o", "-W"})


@dataclass(frozen=True, kw_only=True)
class MakeCall:
    """`make [-C DIR] [-f FILE] [NAME=v] [TARGET...]`: the Makefile (repo-relative), targets, and variables."""

    makefile: str
    targets: tuple[str, ...]
    variables: tuple[tuple[str, str], ...]


def make_call(words: Sequence[str], working_dir: str) -> MakeCall | None:
    """The make invocation `words` are, else None (`$(MAKE)` and `gmake` count)."""
    if not words or words[0].rsplit("/", 1)[-1] not in ("make", "gmake", "$(MAKE)", "${MAKE}"):
        return None
    folder = working_dir
    file = "Makefile"
    targets: list[str] = []
    variables: list[tuple[str, str]] = []
    i = 1
    while i < len(words):
        word = words[i]
        if word in _MAKE_VALUED:
            value = words[i + 1] if i + 1 < len(words) else ""
            if word in ("-C", "--directory"):
                folder = _join(folder, value)
            elif word in ("-f", "--file", "--makefile"):
                file = value
            i += 2
            continue
        if word.startswith("-"):
            name, eq, value = word.partition("=")
            if name in ("--directory",) and eq:
                folder = _join(folder, value)
            elif name in ("--file", "--makefile") and eq:
                file = value
            elif word.startswith("-C") and len(word) > 2:
                folder = _join(folder, word[2:])
            i += 1
            continue
        if _ASSIGN.match(word) and "=" in word:
            name, _, value = word.partition("=")
            variables.append((name, value))
        else:
            targets.append(word)
        i += 1
    return MakeCall(makefile=_join(folder, file), targets=tuple(targets), variables=tuple(variables))


def _join(folder: str, path: str) -> str:
    import posixpath

    return path if path.startswith("/") else posixpath.normpath(posixpath.join(folder, path))


@dataclass(frozen=True, kw_only=True)
class Rule:
    line: int
    prerequisites: tuple[str, ...]
    recipe: tuple[tuple[int, str], ...]  # (line, text) with continuations joined


def parse_makefile(text: str) -> tuple[dict[str, Rule], dict[str, str], str | None]:
    """(rules by target, variables, the default goal) of a Makefile's text."""
    rules: dict[str, Rule] = {}
    variables: dict[str, str] = {}
    default: str | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        raw = lines[i]
        if raw.startswith("\t") or not raw.strip() or raw.lstrip().startswith("#"):
            i += 1
            continue
        logical, i = _continued(lines, i)
        assignment = _ASSIGN.match(logical)
        if assignment:
            name, operator, value = assignment.groups()
            if operator == "?=":
                variables.setdefault(name, value.strip())
            elif operator == "+=":
                variables[name] = f"{variables.get(name, '')} {value.strip()}".strip()
            else:
                variables[name] = value.strip()
            continue
        rule = _RULE.match(logical)
        if rule is None:
            continue
        start = i
        recipe: list[tuple[int, str]] = []
        while i < len(lines) and (lines[i].startswith("\t") or not lines[i].strip() or lines[i].lstrip().startswith("#")):
            if lines[i].startswith("\t"):
                number = i + 1
                body, i = _continued(lines, i)
                recipe.append((number, body.strip().lstrip("@-+").strip()))
            else:
                i += 1
        prerequisites = tuple(p for p in rule.group(2).split(";")[0].split() if p)
        for target in rule.group(1).split():
            if target.startswith("."):
                continue  # .PHONY and the other special targets
            if "%" in target:  # a pattern rule: used for a target no explicit rule names
                rules.setdefault(target, Rule(line=start, prerequisites=(), recipe=tuple(recipe)))
                continue
            default = default or target
            rules.setdefault(target, Rule(line=start, prerequisites=prerequisites, recipe=tuple(recipe)))
    return rules, variables, default


def _continued(lines: list[str], i: int) -> tuple[str, int]:
    parts = [lines[i]]
    while parts[-1].endswith("\\") and i + 1 < len(lines):
        parts[-1] = parts[-1][:-1]
        i += 1
        parts.append(lines[i].lstrip("\t"))
    return " ".join(p.strip() for p in parts), i + 1


def recipe_script(text: str, call: MakeCall) -> tuple[str, tuple[str, ...]]:
    """A shell script holding the recipes `call` runs, each command on its Makefile line (blank lines keep the
    numbering), and the targets the Makefile does not have."""
    rules, variables, default = parse_makefile(text)
    values = {**variables, **dict(call.variables)}
    wanted = list(call.targets) or ([default] if default else [])
    order: list[str] = []
    missing: list[str] = []

    recipes: list[tuple[int, str]] = []

    def visit(target: str, depth: int) -> None:
        if target in order or len(order) >= MAX_TARGETS or depth > MAX_TARGETS:
            return
        rule = rules.get(target)
        stem = ""
        if rule is None:
            found = _pattern_rule(rules, target)
            if found is None:
                if "/" not in target and "." not in target:
                    missing.append(target)  # a file prerequisite is no rule of its own
                return
            rule, stem = found
        for prerequisite in rule.prerequisites:
            visit(prerequisite, depth + 1)
        order.append(target)
        automatic = {"@": target, "*": stem}
        recipes.extend((number, _automatic(line, automatic)) for number, line in rule.recipe)

    for target in wanted:
        visit(target, 0)
    # Each line runs in a shell of its own, so their order changes nothing a reader sees: they are placed on
    # their own Makefile lines, which names each command where it is written.
    out: list[str] = []
    for number, line in sorted(recipes):
        while len(out) < number - 1:
            out.append("")
        out.append(f"( {expand_make(line, values)} )")
    return "\n".join(out) + "\n", tuple(missing)


def _pattern_rule(rules: Mapping[str, Rule], target: str) -> tuple[Rule, str] | None:
    """The pattern rule (`%: ...`, `test-%: ...`) that makes `target`, with the stem `%` stands for."""
    for pattern, rule in rules.items():
        if "%" not in pattern:
            continue
        prefix, _, suffix = pattern.partition("%")
        if target.startswith(prefix) and target.endswith(suffix) and len(target) >= len(prefix) + len(suffix):
            return rule, target[len(prefix) : len(target) - len(suffix)]
    return None


def _automatic(line: str, values: Mapping[str, str]) -> str:
    """`$@` (the target) and `$*` (the stem) in a recipe line; `$$@` is the shell's own."""
    return re.sub(r"(?<!\$)\$([@*])", lambda m: values[m.group(1)], line)


def expand_make(line: str, values: Mapping[str, str]) -> str:
    """Make's expansion of one recipe line: known `$(NAME)` substituted, `$(if ...)` read (`_conditionals`),
    `$$` made `$`."""
    for _ in range(MAX_EXPANSIONS):
        replaced = _REFERENCE.sub(lambda m: values.get(m.group(1), m.group(0)), line)
        if replaced == line:
            break
        line = replaced
    return _conditionals(line).replace("$$", "$")


MAX_CONDITIONALS = 3  # `$(if ...)` read per recipe line (each doubles the branches)


def _conditionals(line: str) -> str:
    """`$(if COND,THEN[,ELSE])` (GNU make manual, "Functions for Conditionals": THEN when COND expands to a
    non-empty string, else ELSE). A COND made of text alone is decided here; one that still names a variable (the
    job's environment may set it: make reads the environment) becomes a shell `if [ -n "${NAME}" ]` around the
    line with each branch, so the shell reader reads both, each under its condition. A COND holding another
    function (`$(shell ...)`) leaves the line as written (unread)."""
    for _ in range(MAX_CONDITIONALS):
        found = _first_if(line)
        if found is None:
            return line
        start, end, arguments = found
        condition = arguments[0].strip()
        then = arguments[1] if len(arguments) > 1 else ""
        otherwise = arguments[2] if len(arguments) > 2 else ""
        head, tail = line[:start], line[end:]
        if "$" not in condition:
            line = head + (then if condition else otherwise) + tail
            continue
        if "$(" in _REFERENCE.sub("", condition) or "${" in _REFERENCE.sub("", condition):
            return line  # a function in the condition: not read
        test = _REFERENCE.sub(lambda m: "${" + m.group(1) + "}", condition).replace('"', '\\"')
        line = f'if [ -n "{test}" ]; then {head}{then}{tail}; else {head}{otherwise}{tail}; fi'
    return line


def _first_if(line: str) -> tuple[int, int, list[str]] | None:
    """(start, end, arguments split at its top-level commas) of the first `$(if ...)`, or None."""
    start = line.find("$(if ")
    if start < 0:
        return None
    depth, arguments, piece = 0, [], start + len("$(if ")
    for at in range(piece, len(line)):
        char = line[at]
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                arguments.append(line[piece:at])
                return start, at + 1, arguments if len(arguments) <= 3 else [*arguments[:2], ",".join(arguments[2:])]
            depth -= 1
        elif char == "," and depth == 0:
            arguments.append(line[piece:at])
            piece = at + 1
    return None
