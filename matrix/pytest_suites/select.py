"""Which CI invocations select a test: initial paths, ignores, `--deselect`, `-k` and `-m`, as pytest applies them.

Collection of a file follows `Dir.collect` and `pytest_ignore_collect` (`_pytest/main.py`, pytest 9): an initial
path, and every folder that is one or holds one, is never ignored; below it each folder and file is checked
against `--ignore` (equal paths), `--ignore-glob` and the conftest's `collect_ignore`/`collect_ignore_glob`
(fnmatch on the absolute path), and folders against `norecursedirs`; a file not named on the command line must
match `python_files`. `--deselect` is a prefix of the node id relative to the rootdir
(`pytest_collection_modifyitems` in `_pytest/main.py`). `-k` and `-m` are compiled and evaluated by pytest's own
`_pytest.mark.expression.Expression` with matchers built from the static item as pytest's `KeywordMatcher` and
`MarkMatcher` build theirs. Anything that cannot be decided is a doubt: the test is never called certain to run.
"""

from __future__ import annotations

import fnmatch
import functools
import itertools
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from matrix.pytest_suites.invocation import Invocation
from matrix.pytest_suites.rules import ignored_dir, is_test_file
from matrix.schedule.model import ScheduleEntry

MAX_EXPRESSION = 2_000
MAX_UNKNOWN_WORDS = 8
_ROOT = "/__root__"  # an absolute stand-in for the checkout, for pytest's absolute-path glob matching


@dataclass(frozen=True, kw_only=True)
class ConftestIgnores:
    """A conftest's `collect_ignore` / `collect_ignore_glob` (None: not set; `unread`: set, but not literally)."""

    folder: str
    ignore: tuple[str, ...] | None = None
    ignore_glob: tuple[str, ...] | None = None
    unread: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Selected:
    """An entry that runs a test, with the assumptions taken to say so and the doubts that it does."""

    entry: ScheduleEntry
    assumptions: tuple[str, ...] = ()
    doubts: tuple[str, ...] = ()
    # A doubt that reaches the skip verdict too (a conftest the static reading applied that pytest does not load).
    skips_unsure: bool = False


@dataclass(frozen=True, kw_only=True)
class Deselected:
    """An entry whose command collects a test's file but does not run the test, and what leaves it out."""

    entry: ScheduleEntry
    why: str


@functools.lru_cache(maxsize=4096)
def _compiled(text: str) -> object | None:
    from _pytest.mark.expression import Expression

    if len(text) > MAX_EXPRESSION:
        return None
    try:
        return Expression.compile(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def evaluate(text: str, known: Callable[[str], bool], unknown: Callable[[str], bool] = lambda _: False) -> bool | None:
    """pytest's verdict on an expression; None when it does not compile, uses call arguments this reading cannot
    check, or its value depends on words `unknown` says may match names this reading cannot see."""
    expression = _compiled(text.lstrip())
    if expression is None:
        return None
    listed = getattr(expression, "idents", None)
    if listed is None:  # pytest before 9 does not list an expression's words: decided only with every name known
        return None if unknown("") else _evaluate_known(expression, known)
    idents = sorted(listed())
    open_words = [w for w in idents if not known(w) and unknown(w)][: MAX_UNKNOWN_WORDS + 1]
    if len(open_words) > MAX_UNKNOWN_WORDS:
        return None
    results: set[bool] = set()
    for values in itertools.product((False, True), repeat=len(open_words)):
        try:
            results.add(bool(expression.evaluate(_Matcher(dict(zip(open_words, values, strict=True)), known))))  # type: ignore[attr-defined]
        except Exception:  # call arguments (`-m "mark(x=1)"`) or anything else pytest's matchers would refuse
            return None
        if len(results) > 1:
            return None
    return results.pop() if results else None


def _evaluate_known(expression: object, known: Callable[[str], bool]) -> bool | None:
    try:
        return bool(expression.evaluate(_Matcher({}, known)))  # type: ignore[attr-defined]
    except Exception:
        return None


class _CallArguments(Exception):
    pass


@dataclass(frozen=True)
class _Matcher:
    """An ExpressionMatcher: the assumed value of a word no name shows, else the known one."""

    assumed: dict[str, bool]
    known: Callable[[str], bool]

    def __call__(self, name: str, /, **kwargs: object) -> bool:
        if kwargs:
            raise _CallArguments
        return self.assumed[name] if name in self.assumed else self.known(name)


def matches_expression(text: str, *, keyword: bool, names: Iterable[str]) -> bool | None:
    """A -k (keyword: case-insensitive substring of any name) or -m (marker named exactly) expression on a name
    set; None when it does not compile."""
    pool = [n.lower() for n in names] if keyword else list(names)
    if keyword:
        return evaluate(text, lambda w: any(w.lower() in n for n in pool))
    return evaluate(text, lambda w: w in pool)


def _under(path: str, folder: str) -> bool:
    return folder in (".", "") or path == folder or path.startswith(folder.rstrip("/") + "/")


def _glob(path: str, pattern: str) -> bool:
    # pytest: fnmatch(str(collection_path), str(absolutepath(glob))), both absolute; `*` crosses folders.
    return fnmatch.fnmatch(f"{_ROOT}/{path}", f"{_ROOT}/{pattern}" if pattern != "." else _ROOT)


def collected(path: str, invocation: Invocation, conftests: Sequence[ConftestIgnores]) -> tuple[bool, tuple[str, ...]]:
    """Whether the invocation collects the file, and the doubts of that reading."""
    if not invocation.runs:
        return False, ()
    conftests = [c for c in conftests if _under(c.folder, invocation.confcutdir)]  # pytest loads none above it
    targets = [a.split("::")[0].rstrip("/") or "." for a in invocation.args]
    if path in targets:
        return True, ()  # an initial path is collected whatever its name and whatever the ignores say
    starts = [t for t in targets if t != path and _under(path, t)]
    if not starts:
        return False, ()
    initial = {posixpath.normpath(t) for t in targets}
    parents = initial | {p for t in targets for p in _parents(t)}
    doubts: list[str] = []
    for start in sorted(starts, key=len):
        verdict = _reach(path, start, invocation=invocation, conftests=conftests, parents=parents, doubts=doubts)
        if verdict:
            return True, tuple(doubts)
    return False, tuple(doubts) if doubts else ()


def _parents(path: str) -> list[str]:
    out = []
    while path not in (".", "", "/"):
        path = posixpath.dirname(path) or "."
        out.append(path)
    return out


def _reach(
    path: str, start: str, *, invocation: Invocation, conftests: Sequence[ConftestIgnores], parents: set[str], doubts: list[str]
) -> bool:
    config = invocation.config
    parts = path.split("/")
    first = 0 if start in (".", "") else len(start.split("/"))
    for index in range(first, len(parts)):
        step = "/".join(parts[: index + 1])
        is_file = index == len(parts) - 1
        if not is_file and step in parents:
            continue
        if step in invocation.ignore:
            return False
        if any(_glob(step, g) for g in invocation.ignore_glob):
            return False
        ignored = _conftest_ignored(step, conftests, doubts)
        if ignored:
            return False
        if not is_file and ignored_dir(step, parts[index], config, False):
            return False
    return is_test_file(path, config)


def _conftest_ignored(step: str, conftests: Sequence[ConftestIgnores], doubts: list[str]) -> bool:
    """pytest reads `collect_ignore` (and `_glob`) from the nearest conftest above the path that sets it."""
    parent = posixpath.dirname(step) or "."
    for attribute in ("ignore", "ignore_glob"):
        for conftest in sorted((c for c in conftests if _under(parent, c.folder)), key=lambda c: -len(c.folder)):
            name = f"collect_{attribute}"
            if name in conftest.unread:
                doubts.append(f"{conftest.folder}/conftest.py sets {name} in a way not read")
                break
            values = getattr(conftest, attribute)
            if values is None:
                continue
            full = [posixpath.normpath(posixpath.join(conftest.folder, v)) for v in values]
            if attribute == "ignore" and step in full:
                return True
            if attribute == "ignore_glob" and any(_glob(step, g) for g in full):
                return True
            break
    return False


def _within(nodeid: str, prefix: str) -> bool:
    """The node is `prefix` or under it: a class's test, or a case of a parametrized test (`test_f[x]`)."""
    return nodeid == prefix or nodeid.startswith((prefix + "::", prefix + "["))


def keyword_names(nodeid: str, rootdir: str, markers: Iterable[str]) -> list[str]:
    """What pytest's KeywordMatcher matches a `-k` word against: the names of the item and its parents (the
    function with its parameter id, classes, the module file, the folders below the rootdir) and its markers."""
    path, _, rest = nodeid.partition("::")
    relative = path if rootdir in (".", "") else posixpath.relpath(path, rootdir)
    return [*rest.split("::"), *relative.split("/"), *markers]


def selects(
    entry: ScheduleEntry,
    invocation: Invocation,
    item: object,
    conftests: Sequence[ConftestIgnores],
    found_file: tuple[bool, tuple[str, ...]] | None = None,
) -> Selected | None:
    """Whether an invocation of this entry runs the test; None when it does not (`found_file`: `collected` of
    the test's file, when the caller has it)."""
    found = selection(entry, invocation, item, conftests, found_file)
    return found if isinstance(found, Selected) else None


def selection(
    entry: ScheduleEntry,
    invocation: Invocation,
    item: object,
    conftests: Sequence[ConftestIgnores],
    found_file: tuple[bool, tuple[str, ...]] | None = None,
) -> Selected | Deselected | None:
    """What an invocation of this entry does with the test: runs it (`Selected`), collects its file but leaves
    it out (`Deselected`: node ids named, `--deselect`, `-k`, `-m`), or never collects its file (None)."""
    from matrix.pytest_suites.collect import TestItem

    assert isinstance(item, TestItem)
    nodeid = item.nodeid
    path = item.path
    found, doubts_found = found_file if found_file is not None else collected(path, invocation, conftests)
    if not found:
        return None
    doubts = [*invocation.doubts, *doubts_found]
    assumptions: list[str] = list(invocation.assumptions)
    node_args = [a for a in invocation.args if "::" in a]
    whole = any(_under(path, a.rstrip("/") or ".") for a in invocation.args if "::" not in a)
    if node_args and not whole and not any(_within(nodeid, a) for a in node_args):
        named = [a for a in node_args if a.split("::")[0] == path] or node_args
        return Deselected(entry=entry, why=f"the command names only the node ids {_listed(named)}")
    rootdir = invocation.config.rootdir
    if rootdir in (".", "") or path.startswith(rootdir + "/"):
        pytest_id = nodeid if rootdir in (".", "") else nodeid[len(rootdir) + 1 :]
    else:
        pytest_id = nodeid
        doubts.append(f"{path} lies outside the rootdir {rootdir}: its node id is not read")
    gone = next((d for d in invocation.deselect if pytest_id.startswith(d)), None)
    if gone is not None:
        return Deselected(entry=entry, why=f"--deselect {gone}")
    if item.hidden_id and any(d.startswith(pytest_id + "[") for d in invocation.deselect):
        assumptions.append("some parametrized cases are deselected")
    if invocation.keyword:
        names = [n.lower() for n in keyword_names(nodeid, rootdir, item.markers)]

        def known(word: str) -> bool:
            return any(word.lower() in n for n in names)

        verdict = evaluate(invocation.keyword, known, lambda _: item.hidden_id or item.opaque_marks)
        if verdict is False:
            return Deselected(entry=entry, why=f"-k {_shown(invocation.keyword)}")
        if verdict is None:
            doubts.append(f"-k {_shown(invocation.keyword)}: not decided for this test")
    if invocation.markexpr:
        verdict = evaluate(invocation.markexpr, lambda w: w in item.markers, lambda _: item.opaque_marks)
        if verdict is False:
            return Deselected(entry=entry, why=f"-m {_shown(invocation.markexpr)}")
        if verdict is None:
            doubts.append(f"-m {_shown(invocation.markexpr)}: not decided for this test")
    above = [c.folder for c in conftests if not _under(c.folder, invocation.confcutdir)]
    if above:
        doubts.append(f"conftest files above the confcutdir {invocation.confcutdir} are not loaded by pytest: {', '.join(above)}")
    if invocation.may_stop:
        doubts.append(invocation.may_stop)
    unsure = bool(above) or bool(invocation.may_stop)
    return Selected(entry=entry, assumptions=tuple(assumptions), doubts=(*doubts, *item.doubts), skips_unsure=unsure)


def _shown(expression: str) -> str:
    """An expression as a finding quotes it (bounded: one from a CI file may be long)."""
    text = expression if len(expression) <= 120 else expression[:117] + "..."
    return repr(text)


def _listed(node_ids: Sequence[str]) -> str:
    return ", ".join(node_ids[:3]) + (f" and {len(node_ids) - 3} more" if len(node_ids) > 3 else "")
