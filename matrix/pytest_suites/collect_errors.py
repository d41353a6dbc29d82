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
imported or parametrized name whose cases are not shown), the command may stop, and so may one that names a path
the checkout does not hold ("file or directory not found", unless a step creates it): no verdict of it is certain.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from matrix.pytest_suites.invocation import Invocation
from matrix.pytest_suites.rules import ignored_dir
from matrix.pytest_suites.select import ConftestIgnores, _conftest_ignored, _glob, _under, collected

if TYPE_CHECKING:
    from matrix.pytest_suites.collect import TestFile


@dataclass(frozen=True, kw_only=True)
class BrokenFile:
    """A file of the tree pytest would fail to import because it does not parse (`why` names the line)."""

    path: str
    why: str
    line: int = 1  # where the parser stopped

    @property
    def is_conftest(self) -> bool:
        return posixpath.basename(self.path) == "conftest.py"


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
            said = f"{bad.path} does not parse ({bad.why})"
            if bad.is_conftest:
                folder = posixpath.dirname(bad.path) or "."
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


def with_named_paths_checked(
    invocations: Sequence[Invocation], collect: Callable[[str], TestFile], exists: Callable[[str], bool]
) -> list[Invocation]:
    """Each invocation checked against the paths and node ids its command names: one that runs no test when a node
    id names no test of a file whose collection is complete; one that may stop (`may_stop`) when a path does not
    exist in the checkout (a step may create it) or a node id names nothing this reading finds."""
    out: list[Invocation] = []
    files: dict[str, TestFile] = {}
    for invocation in invocations:
        if not invocation.runs:
            out.append(invocation)
            continue
        stop: str | None = None
        unsure: list[str] = []
        for arg in invocation.args:
            path = arg.split("::")[0]
            if not path.startswith(("/", "..")) and not exists(path):
                unsure.append(
                    f"{path} is not in the checkout: pytest stops ('file or directory not found') unless a step creates it"
                )
                continue
            if "::" not in arg:
                continue
            found = files[path] if path in files else files.setdefault(path, collect(path))
            if found.error is not None or _matches(arg, found):
                continue  # a file that does not parse is a collection error (above)
            said = f"the node id {arg} names no test of its file"
            # A case id is matched against the ids this reading gives the cases: a doubt, never a certain stop.
            if "[" in arg or found.notes or any(t.doubts or t.hidden_id for t in found.tests):
                unsure.append(f"{said} as read here (a test of it may be missed): pytest stops when one names nothing")
            else:
                stop = stop or f"{said}: pytest stops with 'not found' and runs no test"
        if stop is not None:
            out.append(replace(invocation, runs=False, why_not=stop, collection_error=True))
        elif unsure:
            out.append(replace(invocation, may_stop="; ".join(unsure[:3])))
        else:
            out.append(invocation)
    return out


def _matches(arg: str, found: TestFile) -> bool:
    """pytest's matching of a node id argument: the test itself, a class or test it is a prefix of (`::`), every
    case of a parametrized test, or one case of one whose cases this reading does not show."""
    for test in found.tests:
        nodeid = test.nodeid
        if nodeid == arg or nodeid.startswith((arg + "::", arg + "[")):
            return True
        if test.hidden_id and arg.startswith(nodeid + "["):
            return True
    return False
