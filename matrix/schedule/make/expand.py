"""GNU make's expansion of text: variables by flavour, origin and scope, and the functions the subset models
(`subset.FUNCTIONS`); pure and bounded.

A value the reader cannot know (`$(shell ...)`, `$(wildcard ...)`, a name nothing defines where the environment
may still set it) travels through expansion as an opaque span, `OPEN + shell text + CLOSE`: written into a recipe
it becomes that shell text (`$(git ls-files)`, `${NAME}`), which the shell reader knows as a run-time value. A
function that must look inside such a span gives an opaque span itself; a conditional that must decide on one asks
for a decision (`Undecided`), and the caller reads both ways, each under its condition.

Semantics follow GNU make 4.3's `expand.c` (`variable_expand_string`, the end of a reference found by counting the
opening delimiter only), `function.c` (argument splitting, `patsubst` by word, `strip`, `foreach`, `call`, `or`,
`and`) and the manual's "Functions for Transforming Text" (https://www.gnu.org/software/make/manual/make.html).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

OPEN, CLOSE = "\ue000", "\ue001"  # around an opaque span (private-use code points: never in a Makefile we read)
MAX_STEPS = 100_000  # variable references and function calls, over a whole read (every world, include, sub-make)
MAX_CHARS = 4_000_000  # characters produced by expansion, over a whole read
MAX_DEPTH = 64  # nested expansions (a variable naming one naming one ...)
STEP_CHARS = 64  # what one step counts against a shared character allowance (a step costs about 64 characters of time)
_SPACE = " \t\n"


class Flavor(StrEnum):
    """How a variable is expanded: `=` at each use, `:=` once when assigned (`$(flavor NAME)`)."""

    RECURSIVE = "recursive"
    SIMPLE = "simple"


class Source(StrEnum):
    """Where a variable's value came from, as `$(origin NAME)` prints it (GNU make manual, "The origin Function")."""

    DEFAULT = "default"
    ENVIRONMENT = "environment"
    FILE = "file"
    COMMAND_LINE = "command line"
    OVERRIDE = "override"
    AUTOMATIC = "automatic"


_RANK = {Source.DEFAULT: 0, Source.ENVIRONMENT: 1, Source.FILE: 2, Source.COMMAND_LINE: 3, Source.OVERRIDE: 4}


def outranks(old: Source, new: Source) -> bool:
    """Whether a value from `old` keeps a later assignment from `new` out (command line over file, override over
    both); an automatic variable is never assigned."""
    return _RANK.get(old, 5) > _RANK.get(new, 5)


@dataclass(frozen=True, kw_only=True)
class Variable:
    """One make variable: its value as stored (unexpanded when recursive), flavour, origin and export mark (None:
    make's default, which exports what came from the environment or the command line); `append` marks a
    target-specific `+=` whose value is added to the enclosing scope's at use."""

    value: str
    flavor: Flavor
    source: Source
    exported: bool | None = None
    append: bool = False


class MakeUnread(Exception):
    """The read meets a construct outside the subset, or passes a bound: the run is unread with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MakeStops(Exception):
    """GNU make itself stops here with an error (`$(error ...)`, a variable that references itself)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Undecided(Exception):
    """A conditional on a value known only at run time: the reader must read both ways. `key` names the decision
    (the same test on the same value is one decision), `said` how each answer reads (true, false)."""

    def __init__(self, key: str, said: tuple[str, str]) -> None:
        super().__init__(said[0])
        self.key = key
        self.said = said


@dataclass(kw_only=True)
class Bounds:
    """What one read may still spend, shared by every world, include and sub-make of it. Mutable by design."""

    steps: int = MAX_STEPS
    chars: int = MAX_CHARS
    spent_steps: int = 0
    spent_chars: int = 0

    def charge(self, *, steps: int = 0, chars: int = 0) -> None:
        self.spent_steps += steps
        self.spent_chars += chars
        if self.spent_steps > self.steps or self.spent_chars > self.chars:
            raise MakeUnread(
                f"expanding the Makefile's variables passes the bound of {self.steps} references and {self.chars} characters"
            )

    @property
    def spent(self) -> int:
        return self.spent_chars + STEP_CHARS * self.spent_steps


def opaque(shell_text: str) -> str:
    """An opaque span that a recipe shows as `shell_text`."""
    return OPEN + plain(shell_text) + CLOSE


def plain(text: str) -> str:
    """`text` as a recipe shows it: each opaque span its shell text."""
    return text.replace(OPEN, "").replace(CLOSE, "") if OPEN in text else text


def is_known(text: str) -> bool:
    return OPEN not in text


def words(text: str) -> list[str]:
    return text.split()


def env_name(name: str) -> bool:
    """Whether make passes `name` to a recipe's environment (letters, digits and `_`, not starting with a digit)."""
    return bool(name) and not name[0].isdigit() and all(c.isalnum() or c == "_" for c in name) and name.isascii()


@dataclass(kw_only=True)
class Scope:
    """The variables one expansion sees: automatic variables, then target-specific layers (the target's own,
    then those it inherits from the target that needed it), then the global set."""

    globals: Mapping[str, Variable]
    layers: tuple[Mapping[str, Variable], ...] = ()
    automatic: Mapping[str, str] = field(default_factory=dict)

    def find(self, name: str) -> tuple[Variable, int] | None:
        """The variable `name` and the index of its layer (len(layers) for the global set)."""
        for index, layer in enumerate(self.layers):
            if name in layer:
                return layer[name], index
        found = self.globals.get(name)
        return None if found is None else (found, len(self.layers))

    def below(self, index: int) -> Scope:
        return Scope(globals=self.globals, layers=self.layers[index + 1 :], automatic=self.automatic)


@dataclass(kw_only=True)
class Expander:
    """Expands text in one scope. `decisions` answers the run-time conditionals already decided in this world;
    `open_world` makes a name nothing defines an opaque value (the environment may set it) instead of empty."""

    scope: Scope
    bounds: Bounds
    decisions: Mapping[str, bool]
    open_world: bool = False
    where: str = ""
    warn: Callable[[str], None] | None = None
    _active: set[str] = field(default_factory=set)
    _depth: int = 0

    def using(self, scope: Scope) -> Expander:
        """The same expansion (its loop check and depth shared) in another scope."""
        return replace(self, scope=scope)

    # --- text -------------------------------------------------------------------------------------------------

    def expand(self, text: str) -> str:
        if "$" not in text:
            return text
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise MakeUnread(f"variables nested deeper than {MAX_DEPTH} at {self.where}")
            return self._expand(text)
        finally:
            self._depth -= 1

    def _expand(self, text: str) -> str:
        out: list[str] = []
        i = 0
        spans = OPEN in text
        while True:
            j = text.find("$", i)
            if spans:  # an opaque span (a run-time value already expanded) is copied as it is
                k = text.find(OPEN, i)
                if k >= 0 and (j < 0 or k < j):
                    end = text.find(CLOSE, k)
                    end = len(text) - 1 if end < 0 else end
                    out.append(text[i : end + 1])
                    i = end + 1
                    continue
            if j < 0 or j + 1 >= len(text):
                out.append(text[i:])
                break
            out.append(text[i:j])
            c = text[j + 1]
            if c == "$":
                out.append("$")
                i = j + 2
            elif c in "({":
                close = ")" if c == "(" else "}"
                piece, i = self._reference(text, j + 2, c, close)
                out.append(piece)
            else:
                out.append(self.value(c))
                i = j + 2
        result = "".join(out)
        self.bounds.charge(chars=len(result))
        return result

    def _reference(self, text: str, start: int, open_: str, close: str) -> tuple[str, int]:
        """The expansion of the reference whose body starts at `start`, and where the text goes on."""
        self.bounds.charge(steps=1)
        name_end = start
        while name_end < len(text) and (text[name_end].isalnum() or text[name_end] == "-"):
            name_end += 1
        if name_end < len(text) and text[name_end] in " \t" and name_end > start:
            end = _matching(text, start, open_, close)
            if end < 0:
                raise MakeStops(f"{self.where}: unterminated call to function '{text[start:name_end]}'")
            return self.function(text[start:name_end], text[name_end + 1 : end], open_, close, text[start - 2 : end + 1]), end + 1
        first = text.find(close, start)
        if first < 0:
            raise MakeStops(f"{self.where}: unterminated variable reference")
        body = text[start:first]
        end = first
        if "$" in body:
            matched = _matching(text, start, open_, close)
            if matched >= 0:  # `$($(A))`: the name is expanded first
                end = matched
                body = self.expand(text[start:end])
        return self._variable_or_substitution(body), end + 1

    def _variable_or_substitution(self, body: str) -> str:
        colon = body.find(":")
        if colon >= 0 and "=" in body[colon + 1 :]:
            name = body[:colon]
            pattern, _, replacement = body[colon + 1 :].partition("=")
            value = self.value(name)
            if not is_known(value):
                return opaque(f"${{{plain(name)}}}")
            if "%" not in pattern:
                pattern, replacement = "%" + pattern, "%" + replacement
            return _patsubst_words(pattern, replacement, value)
        return self.value(body)

    # --- variables --------------------------------------------------------------------------------------------

    def value(self, name: str) -> str:
        """The expanded value of variable `name` in this scope."""
        if not is_known(name):
            return opaque(f"${{{plain(name)}}}")
        if name in self.scope.automatic:
            return self.scope.automatic[name]
        found = self.scope.find(name)
        if found is None:
            if name in _AUTOMATIC_VARIANTS and name[0] in self.scope.automatic:
                return _automatic_variant(name, self.scope.automatic[name[0]])
            return opaque(f"${{{name}}}") if self.open_world and name.strip() else ""
        variable, index = found
        if variable.append:
            below = self.scope.below(index)
            base = self.using(below).value(name) if below.find(name) is not None else ""
            own = self.expand(variable.value)
            return f"{base} {own}" if base else own
        if variable.flavor is Flavor.SIMPLE:
            return variable.value
        if name in self._active:
            raise MakeStops(f"{self.where}: Recursive variable '{name}' references itself (eventually)")
        self._active.add(name)
        try:
            return self.expand(variable.value)
        finally:
            self._active.discard(name)

    def decide(self, key: str, said: tuple[str, str]) -> bool:
        """This world's answer to a run-time test (`said`: how a true and a false answer read)."""
        if key not in self.decisions:
            raise Undecided(key, said)
        return self.decisions[key]

    def nonempty(self, text: str, source: str) -> bool:
        """Whether an expanded condition is not empty (`$(if)`, `$(or)`, `$(and)` test the expansion of their
        stripped argument as it is: `function.c` func_if); a run-time value alone asks for a decision."""
        if is_known(text):
            return text != ""
        if _outside_spans(text):
            return True  # known text beside the run-time part
        shown = f"`{plain(text).strip() or source}`"
        return self.decide(f"nonempty {text}", (f"{shown} is not empty ({self.where})", f"{shown} is empty ({self.where})"))

    # --- functions --------------------------------------------------------------------------------------------

    def function(self, name: str, body: str, open_: str, close: str, source: str) -> str:
        spec = FUNCTIONS.get(name)
        if spec is None:
            raise MakeUnread(f"{source[:80]} at {self.where}: the function {name} is outside the modelled subset")
        raw = _split_arguments(body.lstrip(" \t"), open_, close, spec.most)
        if len(raw) < spec.least:
            raise MakeStops(f"{self.where}: insufficient number of arguments ({len(raw)}) to function '{name}'")
        return spec.run(self, raw, source)


def _outside_spans(text: str) -> str:
    """The known text of `text`, its opaque spans taken out."""
    out, depth = [], 0
    for char in text:
        if char == OPEN:
            depth += 1
        elif char == CLOSE:
            depth -= 1
        elif depth == 0:
            out.append(char)
    return "".join(out)


def _matching(text: str, start: int, open_: str, close: str) -> int:
    """The index of the delimiter closing a reference whose body starts at `start` (counting `open_` only)."""
    depth = 0
    for at in range(start, len(text)):
        char = text[at]
        if char == open_:
            depth += 1
        elif char == close:
            if depth == 0:
                return at
            depth -= 1
    return -1


def _split_arguments(body: str, open_: str, close: str, most: int) -> list[str]:
    """A function's arguments split at commas outside nested `open_`/`close`; the last takes the rest."""
    out: list[str] = []
    depth, piece = 0, 0
    for at, char in enumerate(body):
        if char == open_:
            depth += 1
        elif char == close:
            depth -= 1
        elif char == "," and depth == 0 and len(out) < most - 1:
            out.append(body[piece:at])
            piece = at + 1
    out.append(body[piece:])
    return out


_AUTOMATIC_VARIANTS = frozenset({"@D", "@F", "<D", "<F", "^D", "^F", "+D", "+F", "*D", "*F", "|D", "|F"})


def _automatic_variant(name: str, value: str) -> str:
    """`$(@D)` / `$(@F)`: the folder (`.` for none) or the file part of each word."""
    if name[1] == "D":
        return " ".join(w.rpartition("/")[0] or "." if "/" in w else "." for w in value.split())
    return " ".join(w.rpartition("/")[2] for w in value.split())


# --- the functions ----------------------------------------------------------------------------------------------


def _match(pattern: str, word: str) -> str | None:
    """The stem `%` in `pattern` stands for in `word`, or None; a pattern without `%` matches only itself."""
    prefix, percent, suffix = pattern.partition("%")
    if not percent:
        return "" if word == pattern else None
    if len(word) >= len(prefix) + len(suffix) and word.startswith(prefix) and word.endswith(suffix):
        return word[len(prefix) : len(word) - len(suffix)]
    return None


def _patsubst_words(pattern: str, replacement: str, text: str) -> str:
    if "%" not in pattern:  # a whole-word substitution: the text's own spacing stays (function.c subst_expand)
        return _whole_words(text, pattern, replacement)
    out = []
    for word in text.split():
        stem = _match(pattern, word)
        out.append(word if stem is None else (replacement.replace("%", stem, 1) if "%" in replacement else replacement))
    return " ".join(out)


def _whole_words(text: str, old: str, new: str) -> str:
    out, at = [], 0
    while True:
        found = text.find(old, at)
        if found < 0 or not old:
            out.append(text[at:])
            return "".join(out)
        end = found + len(old)
        if (found == 0 or text[found - 1] in _SPACE) and (end == len(text) or text[end] in _SPACE):
            out.append(text[at:found] + new)
        else:
            out.append(text[at:end])
        at = end


@dataclass(frozen=True, kw_only=True)
class FunctionSpec:
    least: int
    most: int
    run: Callable[[Expander, list[str], str], str]


def _expanded(run: Callable[[list[str]], str]) -> Callable[[Expander, list[str], str], str]:
    """A function that expands every argument first and reads its text: a run-time argument makes it opaque."""

    def call(expander: Expander, raw: list[str], source: str) -> str:
        arguments = [expander.expand(a) for a in raw]
        if not all(is_known(a) for a in arguments):
            return opaque(_shown(source, arguments))
        return run(arguments)

    return call


def _shown(source: str, arguments: Sequence[str]) -> str:
    """How an opaque call reads in a recipe: its own text, with a run-time argument shown as the shell sees it."""
    return plain(source)


def _number(text: str, name: str, which: str) -> int:
    stripped = text.strip(_SPACE)
    if not stripped.isdigit():
        raise MakeStops(f"non-numeric {which} argument to '{name}' function: '{stripped}'")
    return int(stripped)


def _word(a: list[str]) -> str:
    n = _number(a[0], "word", "first")
    if n == 0:
        raise MakeStops("first argument to 'word' function must be greater than 0")
    items = a[1].split()
    return items[n - 1] if n <= len(items) else ""


def _wordlist(a: list[str]) -> str:
    start, end = _number(a[0], "wordlist", "first"), _number(a[1], "wordlist", "second")
    if start == 0:
        raise MakeStops("invalid first argument to 'wordlist' function: '0'")
    return " ".join(a[2].split()[start - 1 : end])


def _filter(a: list[str], keep: bool) -> str:
    patterns = a[0].split()
    return " ".join(w for w in a[1].split() if any(_match(p, w) is not None for p in patterns) == keep)


def _subst(a: list[str]) -> str:
    old, new, text = a
    return text + new if not old else text.replace(old, new)


def _dir(word: str) -> str:
    return word[: word.rfind("/") + 1] if "/" in word else "./"


def _suffix(word: str) -> str | None:
    dot = word.rfind(".")
    return word[dot:] if dot > word.rfind("/") else None


def _basename(word: str) -> str:
    dot = word.rfind(".")
    return word[:dot] if dot > word.rfind("/") else word


def _join(a: list[str]) -> str:
    left, right = a[0].split(), a[1].split()
    longer = max(len(left), len(right))
    return " ".join((left[i] if i < len(left) else "") + (right[i] if i < len(right) else "") for i in range(longer))


def _if(expander: Expander, raw: list[str], source: str) -> str:
    condition = expander.expand(raw[0].strip(_SPACE))
    if expander.nonempty(condition, source):
        return expander.expand(raw[1])
    return expander.expand(raw[2]) if len(raw) > 2 else ""


def _or(expander: Expander, raw: list[str], source: str) -> str:
    for argument in raw:
        value = expander.expand(argument.strip(_SPACE))
        if expander.nonempty(value, source):
            return value
    return ""


def _and(expander: Expander, raw: list[str], source: str) -> str:
    value = ""
    for argument in raw:
        value = expander.expand(argument.strip(_SPACE))
        if not expander.nonempty(value, source):
            return ""
    return value


def _foreach(expander: Expander, raw: list[str], source: str) -> str:
    name = expander.expand(raw[0]).strip(_SPACE)
    items = expander.expand(raw[1])
    if not is_known(name) or not is_known(items):
        return opaque(plain(source))
    out = []
    for item in items.split():
        bound = {name: Variable(value=item, flavor=Flavor.SIMPLE, source=Source.AUTOMATIC)}
        inner = expander.using(replace(expander.scope, layers=(bound, *expander.scope.layers)))
        out.append(inner.expand(raw[2]))
    return " ".join(out)


def _call(expander: Expander, raw: list[str], source: str) -> str:
    name = expander.expand(raw[0]).strip(_SPACE)
    arguments = [expander.expand(a) for a in raw[1:]]
    if not is_known(name):
        return opaque(plain(source))
    if name in FUNCTIONS:
        raise MakeUnread(f"{source[:80]} at {expander.where}: $(call) of a built-in function is outside the modelled subset")
    found = expander.scope.find(name)
    if found is None:
        return ""
    numbered = {
        str(i): Variable(value=v, flavor=Flavor.SIMPLE, source=Source.AUTOMATIC) for i, v in enumerate([name, *arguments])
    }
    # Arguments an enclosing call set and this one does not pass read as empty inside it.
    numbered.update(
        {str(i): Variable(value="", flavor=Flavor.SIMPLE, source=Source.AUTOMATIC) for i in range(len(arguments) + 1, 10)}
    )
    inner = expander.using(replace(expander.scope, layers=(numbered, *expander.scope.layers)))
    variable = found[0]
    return inner.expand(variable.value) if variable.flavor is Flavor.RECURSIVE else variable.value


def _value(expander: Expander, raw: list[str], source: str) -> str:
    name = expander.expand(raw[0]).strip(_SPACE)
    found = expander.scope.find(name) if is_known(name) else None
    if found is None:
        return opaque(plain(source)) if expander.open_world or not is_known(name) else ""
    return found[0].value


def _origin(expander: Expander, raw: list[str], source: str) -> str:
    name = expander.expand(raw[0]).strip(_SPACE)
    if not is_known(name):
        return opaque(plain(source))
    if name in expander.scope.automatic:
        return "automatic"
    found = expander.scope.find(name)
    if found is None:
        return opaque(plain(source)) if expander.open_world else "undefined"
    return str(found[0].source)


def _flavor(expander: Expander, raw: list[str], source: str) -> str:
    name = expander.expand(raw[0]).strip(_SPACE)
    if not is_known(name):
        return opaque(plain(source))
    if name in expander.scope.automatic:
        return "simple"
    found = expander.scope.find(name)
    if found is None:
        return opaque(plain(source)) if expander.open_world else "undefined"
    return str(found[0].flavor)


def _error(expander: Expander, raw: list[str], source: str) -> str:
    message = expander.expand(raw[0])
    raise MakeStops(f"{expander.where}: *** {plain(message)}")


def _message(expander: Expander, raw: list[str], source: str) -> str:
    expander.expand(raw[0])  # `$(info)` / `$(warning)` print; their text may still stop make (`$(error)` inside)
    return ""


def _run_time(kind: str) -> Callable[[Expander, list[str], str], str]:
    """`$(shell CMD)` and the functions that read the file system at run time: an opaque value."""

    def call(expander: Expander, raw: list[str], source: str) -> str:
        arguments = [plain(expander.expand(a)) for a in raw]
        if kind == "shell":
            return opaque(f"$({arguments[0]})")
        return opaque(f"$({kind} {','.join(arguments)})")

    return call


FUNCTIONS: dict[str, FunctionSpec] = {
    "subst": FunctionSpec(least=3, most=3, run=_expanded(_subst)),
    "patsubst": FunctionSpec(least=3, most=3, run=_expanded(lambda a: _patsubst_words(a[0], a[1], a[2]))),
    "strip": FunctionSpec(least=1, most=1, run=_expanded(lambda a: " ".join(a[0].split()))),
    "findstring": FunctionSpec(least=2, most=2, run=_expanded(lambda a: a[0] if a[0] in a[1] else "")),
    "filter": FunctionSpec(least=2, most=2, run=_expanded(lambda a: _filter(a, True))),
    "filter-out": FunctionSpec(least=2, most=2, run=_expanded(lambda a: _filter(a, False))),
    "sort": FunctionSpec(least=1, most=1, run=_expanded(lambda a: " ".join(sorted(set(a[0].split()))))),
    "word": FunctionSpec(least=2, most=2, run=_expanded(_word)),
    "wordlist": FunctionSpec(least=3, most=3, run=_expanded(_wordlist)),
    "words": FunctionSpec(least=1, most=1, run=_expanded(lambda a: str(len(a[0].split())))),
    "firstword": FunctionSpec(least=1, most=1, run=_expanded(lambda a: (a[0].split() or [""])[0])),
    "lastword": FunctionSpec(least=1, most=1, run=_expanded(lambda a: (a[0].split() or [""])[-1])),
    "dir": FunctionSpec(least=1, most=1, run=_expanded(lambda a: " ".join(_dir(w) for w in a[0].split()))),
    "notdir": FunctionSpec(least=1, most=1, run=_expanded(lambda a: " ".join(w.rpartition("/")[2] for w in a[0].split()))),
    "suffix": FunctionSpec(least=1, most=1, run=_expanded(lambda a: " ".join(s for w in a[0].split() if (s := _suffix(w))))),
    "basename": FunctionSpec(least=1, most=1, run=_expanded(lambda a: " ".join(_basename(w) for w in a[0].split()))),
    "addsuffix": FunctionSpec(least=2, most=2, run=_expanded(lambda a: " ".join(w + a[0] for w in a[1].split()))),
    "addprefix": FunctionSpec(least=2, most=2, run=_expanded(lambda a: " ".join(a[0] + w for w in a[1].split()))),
    "join": FunctionSpec(least=2, most=2, run=_expanded(_join)),
    "if": FunctionSpec(least=2, most=3, run=_if),
    "or": FunctionSpec(least=1, most=1_000, run=_or),
    "and": FunctionSpec(least=1, most=1_000, run=_and),
    "foreach": FunctionSpec(least=3, most=3, run=_foreach),
    "call": FunctionSpec(least=1, most=1_000, run=_call),
    "value": FunctionSpec(least=1, most=1, run=_value),
    "origin": FunctionSpec(least=1, most=1, run=_origin),
    "flavor": FunctionSpec(least=1, most=1, run=_flavor),
    "error": FunctionSpec(least=1, most=1, run=_error),
    "warning": FunctionSpec(least=1, most=1, run=_message),
    "info": FunctionSpec(least=1, most=1, run=_message),
    "shell": FunctionSpec(least=1, most=1, run=_run_time("shell")),
    "wildcard": FunctionSpec(least=1, most=1, run=_run_time("wildcard")),
    "realpath": FunctionSpec(least=1, most=1, run=_run_time("realpath")),
    "abspath": FunctionSpec(least=1, most=1, run=_run_time("abspath")),
}
