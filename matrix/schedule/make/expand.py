"""GNU make's expansion of text in a scope: `$$`, `$(NAME)`, `${NAME}`, `$X`, substitution references and the
functions of `functions.py`; pure and bounded (`variables.Bounds`).

Semantics follow GNU make 4.3's `expand.c` (`variable_expand_string`: the end of a reference found by counting
the opening delimiter only, a name holding a reference expanded first, a recursive variable that references itself
an error), and the manual's "How to Use Variables" (https://www.gnu.org/software/make/manual/make.html).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from matrix.schedule.make.functions import FUNCTIONS, patsubst_words
from matrix.schedule.make.variables import (
    CLOSE,
    MAX_DEPTH,
    OPEN,
    Bounds,
    Flavor,
    MakeStops,
    MakeUnread,
    Scope,
    Undecided,
    is_known,
    opaque,
    plain,
)


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
                self.bounds.charge(steps=1)  # `$a`: a reference as `$(a)` is
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
            return patsubst_words(pattern, replacement, value)
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
