"""GNU make's text functions the subset models (`subset.py`), each as `function.c` of GNU make 4.3 runs it:
arguments split at top-level commas (the last takes the rest), expanded first unless the function expands them
itself (`if`, `or`, `and`, `foreach`, `call`); a function that must read a run-time value gives an opaque one,
and a conditional one asks for a decision. GNU make manual, "Functions for Transforming Text"
(https://www.gnu.org/software/make/manual/html_node/Functions.html).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from matrix.schedule.make.variables import Flavor, MakeStops, MakeUnread, Source, Variable, is_known, opaque, plain

if TYPE_CHECKING:
    from matrix.schedule.make.expand import Expander

_SPACE = " \t\n"


def _match(pattern: str, word: str) -> str | None:
    """The stem `%` in `pattern` stands for in `word`, or None; a pattern without `%` matches only itself."""
    prefix, percent, suffix = pattern.partition("%")
    if not percent:
        return "" if word == pattern else None
    if len(word) >= len(prefix) + len(suffix) and word.startswith(prefix) and word.endswith(suffix):
        return word[len(prefix) : len(word) - len(suffix)]
    return None


def patsubst_words(pattern: str, replacement: str, text: str) -> str:
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
            return opaque(plain(source))
        return run(arguments)

    return call


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
    # function.c func_wordlist: the text from the first word's start to the last word's end, blanks inside kept
    spans = [m.span() for m in re.finditer(r"\S+", a[2])][start - 1 : end]
    return a[2][spans[0][0] : spans[-1][1]] if spans else ""


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
        expander.bounds.charge(steps=1)  # each pass is a step, whatever its body references
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
    "patsubst": FunctionSpec(least=3, most=3, run=_expanded(lambda a: patsubst_words(a[0], a[1], a[2]))),
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
