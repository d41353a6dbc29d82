"""Where a repository's CI files are: its GitHub workflows and the scripts they run (the edge: reads folders).

Kept apart from the walker (`github.py`) so that a run whose schedule comes from the cache finds the files it
hashes without importing the walker, the expression reader and the shell splitter.
"""

from __future__ import annotations

import re
from pathlib import Path

from matrix.core.errors import ConfigError
from matrix.core.textfiles import read_limited

__all__ = ["CI_NAME", "ci_script_files", "ci_script_names", "container_files", "find_workflows", "in_repo", "workflow_files"]

MAX_FILES = 512
CI_SCRIPT_DIRS = ("scripts/ci", ".github/actions", ".github/scripts", ".buildkite", "ci")
MAX_SCRIPT_BYTES = 8 * 1024 * 1024
# An upper-case word of three or more characters (`\b[A-Z][A-Z0-9_]{2,}\b`), spelled so that the search starts
# with a character class: the regex engine then skips to the next capital letter instead of trying every position
# (a quarter of the time over sglang's 1.8 MB of CI files); the look-behind is the leading `\b`.
CI_NAME = re.compile(r"[A-Z](?<!\w[A-Z])[A-Z0-9_]{2,}\b")


def workflow_files(root: Path) -> tuple[Path, list[Path]]:
    """(repository root, `.github/workflows/*.yml|yaml`) under `root`, which may also be the workflows folder."""
    folder = root / ".github" / "workflows"
    repo = root
    if not folder.is_dir() and root.name == "workflows" and root.parent.name == ".github":
        folder, repo = root, root.parent.parent
    if not folder.is_dir():
        raise ConfigError(f"--workflows {root}: no .github/workflows folder there")
    files = sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
    if not files:
        raise ConfigError(f"--workflows {root}: .github/workflows has no *.yml files")
    if len(files) > MAX_FILES:
        raise ConfigError(f"--workflows {root}: more than {MAX_FILES} workflow files")
    return repo, files


def in_repo(repo: Path, path: Path) -> bool:
    """Whether `path`, every symlink resolved, lies inside `repo`: a CI file linked from outside the repository is
    never read (its text would show up as the repository's schedule)."""
    try:
        return path.resolve().is_relative_to(repo.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def ci_script_files(repo: Path) -> list[Path]:
    """The scripts CI runs (`scripts/ci`, local actions), up to MAX_SCRIPT_BYTES in all."""
    out: list[Path] = []
    budget = MAX_SCRIPT_BYTES
    for folder in CI_SCRIPT_DIRS:
        base = repo / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix not in (".sh", ".py", ".yml", ".yaml", ".bash", ".env") or not path.is_file():
                continue
            if path.is_symlink() and not in_repo(repo, path):
                continue
            try:
                budget -= path.stat().st_size
            except OSError:
                continue
            if budget < 0:
                return out
            out.append(path)
    return out


def ci_script_names(repo: Path) -> set[str]:
    """Upper-case names in the scripts CI runs: variables they may export."""
    names: set[str] = set()
    for path in ci_script_files(repo):
        try:
            names.update(CI_NAME.findall(read_limited(path, MAX_SCRIPT_BYTES).decode("utf-8", "replace")))
        except OSError:
            continue
    return names


def find_workflows(start: Path) -> Path | None:
    """The nearest folder at or above `start` that has `.github/workflows` (what `guards` reads by itself)."""
    current = start.resolve()
    if current.is_file():
        current = current.parent
    for folder in (current, *current.parents):
        if (folder / ".github" / "workflows").is_dir():
            return folder
    return None


# Where a job's `docker build -f FILE` is looked for (and what the schedule cache hashes): the root and these
# folders, three levels deep. A Dockerfile elsewhere is not read, and the container built from it is unread.
CONTAINER_DIRS = ("", "docker", "ci", "scripts", ".github", ".buildkite")
MAX_CONTAINER_FILES = 128


def container_files(repo: Path) -> list[Path]:
    """The Dockerfiles (`Dockerfile`, `X.Dockerfile`, `Dockerfile.X`, `Containerfile`) a job may build its image from."""
    out: list[Path] = []
    for folder in CONTAINER_DIRS:
        base = repo / folder if folder else repo
        if not base.is_dir():
            continue
        for depth in range(1, 4 if folder else 2):
            for path in sorted(base.glob("/".join(["*"] * depth))):
                if _dockerfile(path.name) and path.is_file() and in_repo(repo, path):
                    out.append(path)
                    if len(out) >= MAX_CONTAINER_FILES:
                        return out
    return out


def _dockerfile(name: str) -> bool:
    return name in ("Dockerfile", "Containerfile") or name.endswith(".Dockerfile") or name.startswith("Dockerfile.")
