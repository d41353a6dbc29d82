"""Collection errors: a test file or conftest.py that does not parse, and what it does to a CI command.

pytest (9, `_pytest/main.py` and `_pytest/config/__init__.py`):
- a conftest.py loaded at startup (`PytestPluginManager._set_initial_conftests`: the folders of each initial path
  and their parents down from the confcutdir, and the `test*` folders right under an initial folder) that fails
  to import ends the run before collection, `--continue-on-collection-errors` or not;
- a conftest.py met while recursing into its folder, or a test file that fails to import, is a collection error:
  without `--continue-on-collection-errors` the session stops ("Interrupted: N errors during collection", exit 2)
  and runs no test; with it, the tests under that folder (or of that file) are not collected, the rest run.
Only a file that does not parse is judged here (what an import of it would raise is not read).

A node id on the command line that names no test of its file (`pytest tests/a.py::test_gone`) is a usage error
too: pytest reports "not found" and runs no test (`Session.perform_collect`, pytest 8 and 9). It is certain where
the file's static collection is complete; where a test of it may be missed (a definition under a condition, an
imported or parametrized name whose cases are not shown), it is a doubt. A path the checkout does not hold is
judged where the command line is read (`invocation.missing_path`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from matrix.pytest_suites.collect import TestFile
from matrix.pytest_suites.invocation import Invocation
from matrix.pytest_suites.rules import ignored_dir
from matrix.pytest_suites.select import ConftestIgnores, _conftest_ignored, _glob, _under, collected


@dataclass(frozen=True, kw_only=True)
class BrokenFile:
    """A file of the tree pytest would fail to import because it does not parse (`why` names the line), or cannot
    read at all (`problem`: permissions); or a folder it cannot list (`folder`), which fails as a conftest there."""

    path: str
    why: str
    line: int = 1  # where the parser stopped
    problem: str = "does not parse"
    folder: bool = False

    @property
    def is_conftest(self) -> bool:
        return self.folder or posixpath.basename(self.path) == "conftest.py"

    @property
    def home(self) -> str:
        """The folder a conftest's (or an unlistable folder's) failure stops pytest in."""
        return self.path if self.folder else posixpath.dirname(self.path) or "."


def _loaded_at_startup(folder: str, invocation: Invocation) -> bool:
    """A conftest folder pytest loads before collecting: an initial path's folder or one above it, or a `test*`
    folder right under an initial folder (`_try_load_conftest`)."""
    for arg in invocation.args:
        anchor = arg.split("::")[0].rstrip("/") or "."
        is_file = anchor.endswith(".py")
        base = (posixpath.dirname(anchor) or ".") if is_file else anchor
        if _under(base, folder):
            return True
        if not is_file and (posixpath.dirname(folder) or ".") == base and posixpath.basename(folder).startswith("test"):
            return True
    return False


def _entered(folder: str, invocation: Invocation, conftests: Sequence[ConftestIgnores]) -> bool | None:
    """Whether collection recurses into `folder`: True, False, or None when a conftest's ignore is not read."""
    targets = [a.split("::")[0].rstrip("/") or "." for a in invocation.args]
    answer: bool | None = False
    for start in targets:
        if start.endswith(".py") or not _under(folder, start) or folder == start:
            continue
        parts = folder.split("/")
        first = 0 if start in (".", "") else len(start.split("/"))
        doubts: list[str] = []
        reached = True
        for index in range(first, len(parts)):
            step = "/".join(parts[: index + 1])
            if (
                step in invocation.ignore
                or any(_glob(step, g) for g in invocation.ignore_glob)
                or _conftest_ignored(step, conftests, doubts)
                or ignored_dir(step, parts[index], invocation.config, False)
            ):
                reached = False
                break
        if reached and not doubts:
            return True
        if doubts:
            answer = None
    return answer


def with_collection_errors(
    invocations: Sequence[Invocation],
    broken: Sequence[BrokenFile],
    ignores_of: Callable[[str], tuple[ConftestIgnores, ...]],
) -> list[Invocation]:
    """Each invocation with the collection errors it meets: `why_not` when pytest stops, the broken folder ignored
    when `--continue-on-collection-errors` lets the rest run, a doubt where whether it meets one is not read."""
    out: list[Invocation] = []
    for invocation in invocations:
        if not invocation.runs or not broken:
            out.append(invocation)
            continue
        stop: str | None = None
        skipped: list[str] = []
        doubts: list[str] = []
        for bad in broken:
            said = f"{bad.path} {bad.problem} ({bad.why})"
            if bad.is_conftest:
                folder = bad.home
                if not _under(folder, invocation.confcutdir):
                    continue  # pytest loads no conftest above the confcutdir
                if _loaded_at_startup(folder, invocation):
                    stop = stop or f"{said}: pytest loads it at startup and runs no test"
                    continue
                entered = _entered(folder, invocation, ignores_of(bad.path))
            else:
                found, unsure = collected(bad.path, invocation, ignores_of(bad.path))
                entered = (None if unsure else True) if found else False
                folder = bad.path
            if entered is None:
                doubts.append(f"{said}: whether this command collects it is not read")
            elif entered and invocation.continue_on_errors:
                skipped.append(folder)
            elif entered:
                stop = stop or f"{said}: a collection error, and pytest runs no test without --continue-on-collection-errors"
        if stop is not None:
            out.append(replace(invocation, runs=False, why_not=stop, collection_error=True))
        else:
            out.append(replace(invocation, ignore=(*invocation.ignore, *skipped), doubts=(*invocation.doubts, *doubts)))
    return out


def with_missing_nodes(invocations: Sequence[Invocation], collect: Callable[[str], TestFile]) -> list[Invocation]:
    """Each invocation with the node ids it names (`path::name`) checked against the tests read from their file.

    pytest (`Session.perform_collect`) stops with "not found: ..." (exit 4, no test run) when a node id matches no
    test; pytest 9 first drops an argument another one covers (`normalize_collection_arguments`: `tests` covers
    `tests/test_a.py::test_x`), so such a node id stops nothing there, but did before: a doubt. A file whose tests
    are not all read (an imported test, a condition, a parameter id) leaves the node id unjudged: a doubt."""
    out: list[Invocation] = []
    for invocation in invocations:
        nodes = [a for a in invocation.args if "::" in a] if invocation.runs else []
        stop: str | None = None
        doubts: list[str] = []
        for node in nodes:
            found = _node_found(node, collect(node.split("::")[0]))
            if found is not False:
                if found is None:
                    doubts.append(f"{node}: whether a test matches this node id is not read")
                continue
            covering = [a for a in invocation.args if a != node and _covers(a, node)]
            if covering:
                doubts.append(f"{node}: no test matches it; pytest 9 drops it as covered by {covering[0]}, older ones stop")
            else:
                stop = stop or f"{node}: not found (no test matches this node id): pytest stops (exit 4) and runs no test"
        if stop is not None:
            out.append(replace(invocation, runs=False, why_not=stop, collection_error=True, names_nothing=True))
        elif doubts:
            out.append(replace(invocation, doubts=(*invocation.doubts, *doubts)))
        else:
            out.append(invocation)
    return out


def _node_found(node: str, test_file: TestFile) -> bool | None:
    """Whether a test of the file matches the node id: True, False, or None when the reading cannot tell."""
    if test_file.error is not None:
        return None  # a collection error: judged as one (with_collection_errors)
    bare = node.split("[", maxsplit=1)[0]
    for item in test_file.tests:
        if item.nodeid == node or item.nodeid.startswith((node + "::", node + "[")):
            return True
        if "[" in node and item.hidden_id and item.nodeid.split("[")[0] == bare:
            return None  # a parameter id this reading does not list
    if any(item.doubts or item.opaque_marks for item in test_file.tests):
        return None
    return False


def _covers(arg: str, node: str) -> bool:
    """Whether the collection argument `arg` covers the node id `node` (the same file, or a folder above it)."""
    path = node.split("::", maxsplit=1)[0]
    if "::" in arg:
        return node.startswith(arg + "::") or node.startswith(arg + "[")
    anchor = arg.rstrip("/") or "."
    return anchor == path or _under(path, anchor)
