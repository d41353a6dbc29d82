"""Where a job has the repository: `actions/checkout` puts it in the workspace, or in `path:` under it; `${{
github.workspace }}` is the workspace; pure.

GitHub's docs ("Workflow syntax": `jobs.<job_id>.steps[*].working-directory` and `defaults.run`; "Contexts
reference": `github.workspace`, "the default working directory on the runner for steps, and the default location
of your repository when using the checkout action"; actions/checkout README: `path`, "relative path under
$GITHUB_WORKSPACE to place the repository", and `repository`, default `${{ github.repository }}`). A folder the job
names is from the workspace; the readers name files from the repository's root, so a job whose checkout has a
`path:` has its folders rebased, and a file outside that checkout (or in another repository's checkout) is no file of
this repository.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from matrix.schedule.model import PytestSelection, Selection

_WORKSPACE = re.compile(r"^\$\{\{\s*github\.workspace\s*\}\}(?=/|$)", re.IGNORECASE)
_OWN_REPOSITORY = re.compile(r"^\$\{\{\s*github\.repository\s*\}\}$", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class Checkout:
    """Where the repository is in the job's workspace ("" for the workspace itself), and the folders other
    repositories are checked out in."""

    path: str = ""
    foreign: tuple[str, ...] = ()

    @property
    def plain(self) -> bool:
        """The usual case: the repository is the workspace, and nothing else is checked out in it."""
        return not self.path and not self.foreign

    def after(self, step: Mapping[str, Any]) -> Checkout:
        """The checkout once `step` has run (itself, unless the step is `actions/checkout`)."""
        uses = step.get("uses")
        if not isinstance(uses, str) or uses.split("@", 1)[0].strip().lower() != "actions/checkout":
            return self
        given = step.get("with")
        options = given if isinstance(given, Mapping) else {}
        repository, path = options.get("repository"), options.get("path")
        folder = posixpath.normpath(str(path)) if isinstance(path, str | int) and str(path).strip() else "."
        folder = "" if folder == "." else folder
        if repository is None or _OWN_REPOSITORY.match(str(repository).strip()):
            return replace(self, path=folder, foreign=tuple(f for f in self.foreign if f != folder))
        return replace(self, foreign=(*self.foreign, folder or "."))

    def folder(self, written: str) -> str:
        """A folder the job names from the workspace, named from the repository's root (`..` for a folder above the
        repository when it is checked out under `path:`)."""
        normal = posixpath.normpath(workspace_folder(written))
        if not self.path or normal.startswith("/"):
            return normal
        return posixpath.relpath(normal, self.path)

    def own(self, path: str) -> str | None:
        """The repository's path for a path the readers computed from the repository's root, or None when it lies
        outside this checkout (above it, or in another repository's checkout)."""
        normal = posixpath.normpath(path)
        if normal.startswith("/"):
            return normal
        if self.path:
            inside = posixpath.normpath(posixpath.join(self.path, normal))
            if inside == self.path:
                return "."
            return inside[len(self.path) + 1 :] if inside.startswith(self.path + "/") else None
        if any(f in (".", normal) or normal.startswith(f + "/") for f in self.foreign):
            return None
        return normal

    def selection(self, selection: Selection) -> Selection | None:
        """A selection with its paths named from the repository's root; None when it runs from outside this checkout."""
        if self.plain or not isinstance(selection, PytestSelection):
            return selection
        folder = self.own(selection.working_dir)
        if folder is None:
            return None
        moved = [self.own(p) for p in (*selection.paths, *selection.ignore, *selection.deselect)]
        if any(p is None for p in moved):
            return None
        paths = [p for p in moved if p is not None]
        n, m = len(selection.paths), len(selection.ignore)
        return replace(
            selection, working_dir=folder, paths=tuple(paths[:n]), ignore=tuple(paths[n : n + m]), deselect=tuple(paths[n + m :])
        )


def workspace_folder(written: str) -> str:
    """A folder with a leading `${{ github.workspace }}` named from the workspace (`.`, or `./sub`)."""
    return _WORKSPACE.sub(".", written.strip(), count=1)
