"""pytest's JUnit names for a node id, and the way back from a run's names to the tests static collection found.

pytest names a testcase from its node id (`mangle_test_address` and `_NodeReporter.record_testreport` in
`_pytest/junitxml.py`, pytest 8 and 9): the path part (before the first `::`) with `/` as `.` and `.py` dropped,
then the class names, joined with `.`, are the `classname` (after the `--junit-prefix` when one is given); the last
name with its parameter id (`[...]`, kept whole, a `::` inside it included) is the `name`, written through
`bin_xml_escape` (a character XML cannot carry becomes `#xNN`). A collection report's node id (a file or a folder)
has no `::`: its classname is empty (or the prefix) and its name is the dotted path.

The names lose where the path ends (`a.b.c` is `a/b.py::c` or `a/b/c.py`) and where the run's rootdir was (a run
from a sub-folder, or with `--rootdir`, drops or adds leading parts; a `--junit-prefix` adds one), so a run is read
against the tests static collection found: each testsuite's `Offset` (leading parts dropped, parts put in front) is
the one most of its classnames agree on, and each testcase is looked up under it by its names. A parametrized case
the static collection kept as one test (ids it could not read) is found by its name without the id.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from matrix.pytest_suites.junit_runs import RunCase

MAX_SAMPLES = 256  # distinct classnames of a testsuite that vote on its offset

# bin_xml_escape's set (`_pytest/junitxml.py`): everything but tab, LF, CR, printable ASCII (no DEL) and the
# XML-valid non-ASCII ranges is written as `#xNN` / `#xNNNN`.
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\u007e\u0080-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"#x{code:02X}" if code <= 0xFF else f"#x{code:04X}"


def xml_visible(text: str) -> str:
    """`bin_xml_escape` of pytest's JUnit writer."""
    if text.isascii() and text.isprintable():  # nearly every name: nothing to escape (DEL is not printable)
        return text
    return _NOT_XML.sub(_visible, text)


def dotted_path(path: str) -> str:
    r"""A node id's path part as a classname starts: `/` as `.`, `.py` dropped (pytest: `re.sub(r"\.py$", "", ...)`)."""
    dotted = path.replace("/", ".")
    return dotted[:-3] if dotted.endswith(".py") else dotted


def junit_names(nodeid: str) -> tuple[str, str]:
    """(classname, name) pytest writes for a node id (no `--junit-prefix`)."""
    path, sep, tail = nodeid.partition("::")
    if not sep:
        return "", xml_visible(dotted_path(path))
    names, bracket, params = tail.partition("[")
    parts = names.split("::")
    return ".".join([dotted_path(path), *parts[:-1]]), xml_visible(parts[-1] + bracket + params)


@dataclass(frozen=True, kw_only=True)
class Offset:
    """How a run's dotted names map onto the static ones: drop `drop` leading parts, then put `add` in front."""

    drop: int = 0
    add: tuple[str, ...] = ()

    def apply(self, parts: Sequence[str]) -> tuple[str, ...]:
        return (*self.add, *parts[self.drop :])

    @property
    def said(self) -> str:
        """The offset in words (empty when there is none)."""
        words = []
        if self.drop:
            words.append(f"{self.drop} leading name part(s) dropped")
        if self.add:
            words.append(f"{'.'.join(self.add)!r} put in front")
        return " and ".join(words)


class NodeIndex:
    """The static tests by their JUnit names, their modules and folders by dotted path, and every tail of their
    classnames that still names the module (to find a run's offset)."""

    def __init__(self, tests: Iterable[tuple[str, str]]):
        self.names: dict[tuple[str, str], str] = {}
        self.modules: dict[str, list[str]] = defaultdict(list)  # a module's dotted path -> its tests
        self.module_paths: dict[str, str] = {}
        self.tails: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
        self.folders: dict[str, tuple[str, ...]] = {}  # a folder's dotted path -> its tests, worked out when asked
        seen: set[str] = set()
        for nodeid, path in tests:
            classname, name = junit_names(nodeid)
            self.names.setdefault((classname, name), nodeid)
            module = self.module_of(path)
            self.modules[module].append(nodeid)
            if classname in seen:
                continue
            seen.add(classname)
            split = tuple(classname.split("."))
            # Only tails that still hold the module's last part: a bare class name says nothing of the rootdir.
            for j in range(module.count(".") + 1):
                self.tails[split[j:]].add(split[:j])

    def module_of(self, path: str) -> str:
        """A test file's dotted path; a module seen for the first time adds its own tails (collection records)."""
        module = dotted_path(path)
        if module not in self.module_paths:
            self.module_paths[module] = path
            split = tuple(module.split("."))
            for j in range(len(split)):
                self.tails[split[j:]].add(split[:j])
        return module

    def under(self, dotted: str) -> tuple[str, ...]:
        """The tests of a module, or of every module under a folder, by dotted path."""
        if dotted in self.modules:
            return tuple(self.modules[dotted])
        if dotted not in self.folders:
            inside = [m for m in self.modules if m.startswith(dotted + ".")]
            self.folders[dotted] = tuple(t for m in sorted(inside) for t in self.modules[m])
        return self.folders[dotted]

    def offset(self, cases: Sequence[RunCase]) -> Offset:
        """The offset most of the cases' distinct classnames agree on (fewest changes on a tie); none when none fits."""
        samples: list[tuple[str, ...]] = []
        distinct: set[tuple[str, ...]] = set()
        for case in cases:
            parts = _parts(case)
            if parts not in distinct:
                distinct.add(parts)
                samples.append(parts)
                if len(samples) >= MAX_SAMPLES:
                    break
        votes: Counter[Offset] = Counter()
        for parts in samples:
            votes.update({Offset(drop=k, add=add) for k in range(len(parts)) for add in self.tails.get(parts[k:], ())})
        if not votes:
            return Offset()
        return max(votes, key=lambda o: (votes[o], -o.drop - len(o.add), o.add))

    def locate(self, case: RunCase, offset: Offset) -> tuple[str, ...]:
        """The static tests a testcase is: one test, every test of a module or folder (a collection report), or
        none."""
        if case.collector:
            return self.under(".".join(offset.apply(_parts(case))))
        classname = ".".join(offset.apply(case.classname.split(".")))
        found = self.names.get((classname, case.name))
        if found is None:
            base, bracket, _ = case.name.partition("[")
            # A parametrized test statically kept as one (ids it could not read): each of its cases.
            found = self.names.get((classname, base)) if bracket else None
        return (found,) if found is not None else ()

    def node_id(self, case: RunCase, offset: Offset) -> tuple[str, str]:
        """(node id, path) of a testcase no static test is, read back from its names: the longest leading part that
        is a module static collection knows, else its `file` attribute, else the parts up to the first capitalised
        one (a class, by convention) as the file."""
        parts = offset.apply(_parts(case))
        if case.collector:
            path = case.file or "/".join(parts)
            return path, path
        for m in range(len(parts), 0, -1):
            known = self.module_paths.get(".".join(parts[:m]))
            if known is not None:
                return "::".join([known, *parts[m:], case.name]), known
        if case.file.endswith(".py"):
            module = offset.apply(case.file.removesuffix(".py").split("/"))
            if tuple(parts[: len(module)]) == module:
                path = "/".join(module) + ".py"
                return "::".join([path, *parts[len(module) :], case.name]), path
        cut = next((k for k, p in enumerate(parts) if k and p[:1].isupper()), len(parts))
        path = "/".join(parts[:cut]) + ".py"
        return "::".join([path, *parts[cut:], case.name]), path


def _parts(case: RunCase) -> tuple[str, ...]:
    """A testcase's dotted parts: its classname's, and for a collection report (classname empty, or only the
    `--junit-prefix`) its name's after them."""
    head = tuple(case.classname.split(".")) if case.classname else ()
    return (*head, *case.name.split(".")) if case.collector else head
