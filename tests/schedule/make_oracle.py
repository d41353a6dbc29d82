"""GNU make as the oracle of the Makefile reader: a checkout written to a sandbox folder, make run on it twice (a
dry run, `make -n`, whose printed lines show each command's text; and a real run with stub `pytest` and `python`
first on PATH, which record the arguments, folder and environment each pytest command gets), and the reader's
`MakeRun` of the same call and environment compared with both. Helpers for `test_make_oracle.py` and
`test_make_subset.py`.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from matrix.schedule.make.outcome import MakeRun
from matrix.schedule.make.targets import make_call
from matrix.schedule.make.worlds import read_make

MAKE = shutil.which("make")
if MAKE is None and os.environ.get("CI"):  # a CI machine without make would skip the oracle silently
    raise RuntimeError("GNU make is missing on a CI machine: the Makefile oracle cannot run (install make)")
POOL = ("SUITE", "ARGS", "MODE", "EXTRA", "KIND", "FLAGS")  # the variables whose environment the stubs record

STUB = """#!/usr/bin/python3 -SE
import json, os, sys
names = {pool!r}
with open(os.environ["ORACLE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({{
        "program": os.path.basename(sys.argv[0]),
        "argv": sys.argv[1:],
        "folder": os.path.relpath(os.getcwd(), os.environ["ORACLE_ROOT"]),
        "env": {{k: os.environ.get(k) for k in names}},
    }}) + "\\n")
"""


Call = tuple[str, tuple[str, ...], str, tuple[tuple[str, str | None], ...]]  # program, arguments, folder, environment


@dataclass
class MakeCase:
    """A checkout (path -> text), the make command's arguments, and the environment make starts with."""

    files: dict[str, str] = field(default_factory=dict)
    arguments: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    folder: str = "."

    def shown(self) -> str:
        parts = [f"make {' '.join(map(shlex.quote, self.arguments))} in {self.folder} env {self.env}"]
        parts += [f"--- {path}\n{text}" for path, text in sorted(self.files.items())]
        return "\n".join(parts)


@dataclass(frozen=True, kw_only=True)
class RealRun:
    exit_code: int
    printed: tuple[str, ...]  # `make -n` stdout, make's own messages taken out
    dry_exit_code: int
    calls: tuple[Call, ...]


def stub_folder(where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name in ("pytest", "python"):
        path = where / name
        path.write_text(STUB.format(pool=POOL), encoding="utf-8")
        path.chmod(0o755)
    return where


def write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def base_env(root: Path, stub: Path, case: MakeCase) -> dict[str, str]:
    return {"PATH": f"{stub}:/usr/bin:/bin", "ORACLE_LOG": str(root.parent / "calls.jsonl"), "ORACLE_ROOT": str(root), **case.env}


def real_make(root: Path, stub: Path, case: MakeCase) -> RealRun:
    """Make's dry run and real run of `case` in `root` (10 s each at most)."""
    assert MAKE is not None
    env = base_env(root, stub, case)
    log = Path(env["ORACLE_LOG"])
    where = root / case.folder
    dry = subprocess.run(
        [MAKE, "--no-print-directory", "-n", *case.arguments],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    log.unlink(missing_ok=True)
    real = subprocess.run(
        [MAKE, "--no-print-directory", *case.arguments],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    calls = _calls(log)
    # make's own messages, and what `$(info info: ...)` prints, are no commands
    printed = tuple(line for line in dry.stdout.splitlines() if not line.startswith(("make: ", "make[", "info: ")))
    return RealRun(exit_code=real.returncode, printed=printed, dry_exit_code=dry.returncode, calls=tuple(calls))


@dataclass(kw_only=True)
class SandboxFiles:
    """The sandbox checkout as the reader sees it (the folder is a plain checkout: every path is known)."""

    root: Path
    listed: dict[str, frozenset[str]] = field(default_factory=dict)

    def text(self, path: str) -> str | None:
        target = self.root / path
        return target.read_text(encoding="utf-8") if target.is_file() else None

    def exists(self, path: str) -> bool:
        folder, _, name = path.rpartition("/")
        return name in self.names(folder or ".")

    def names(self, folder: str) -> frozenset[str]:
        if folder not in self.listed:
            try:
                self.listed[folder] = frozenset(os.listdir(self.root / folder))
            except OSError:
                self.listed[folder] = frozenset()
        return self.listed[folder]


def reader_run(root: Path, stub: Path, case: MakeCase) -> MakeRun:
    call = make_call([MAKE or "make", *case.arguments], case.folder, {})
    assert call is not None
    return read_make(call, SandboxFiles(root=root), base_env(root, stub, case), open_world=False)


def dry_lines(run: MakeRun) -> list[str]:
    """What `make -n` prints for the reader's run: every command's text; a sub-make's own commands only when make
    runs its line under -n too (`$(MAKE)` in it, or `+`)."""
    out: list[str] = []
    skip_below: int | None = None
    for command in run.commands:
        if skip_below is not None:
            if command.level > skip_below:
                continue
            skip_below = None
        out.extend(command.text.split("\n"))
        if command.inlined and not command.recursive:
            skip_below = command.level
    return out


def replayed_calls(root: Path, stub: Path, case: MakeCase, run: MakeRun) -> tuple[Call, ...]:
    """The pytest commands the reader's run starts, as the stubs record them: each command the reader says make
    hands to a shell is run with `/bin/sh -c` (as make runs it) in its folder and environment."""
    environment = base_env(root, stub, case)
    log = Path(environment["ORACLE_LOG"])
    log.unlink(missing_ok=True)
    for command in run.commands:
        if command.inlined:
            continue
        env = {**environment, **dict(command.env)}
        subprocess.run(
            ["/bin/sh", "-c", command.text],
            cwd=root / command.folder,
            env={k: v for k, v in env.items() if v is not None},
            capture_output=True,
            timeout=10,
            check=False,
        )
    return _calls(log)


def _calls(log: Path) -> tuple[Call, ...]:
    calls = []
    if log.is_file():
        for line in log.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            calls.append((record["program"], tuple(record["argv"]), record["folder"], tuple(sorted(record["env"].items()))))
        log.unlink()
    return tuple(calls)


def disagreements(case: MakeCase, real: RealRun, run: MakeRun, replayed: tuple[Call, ...], *, inside: bool = True) -> list[str]:
    """Where the reader's run contradicts make's. Inside the subset the reader must read the program (unread is a
    failure too), or stop where make stops; a program outside must come out unread."""
    unread = [p.reason for p in run.problems if not p.stops]
    if not inside:
        return [] if unread else ["a program outside the subset came out read"]
    if real.exit_code != 0:
        return [] if run.problems else [f"make exits {real.exit_code}; the reader neither stops nor calls it unread"]
    wrong: list[str] = []
    if run.problems:
        wrong.append(f"make runs it; the reader says: {[p.reason for p in run.problems]}")
        return wrong
    if replayed != real.calls:
        wrong.append(f"pytest commands differ:\n  make:   {list(real.calls)}\n  reader: {list(replayed)}")
    if real.dry_exit_code == 0 and dry_lines(run) != list(real.printed):
        wrong.append(f"dry-run lines differ:\n  make:   {list(real.printed)}\n  reader: {dry_lines(run)}")
    return wrong


def check(case: MakeCase, scratch: Path, stub: Path, *, inside: bool = True) -> None:
    root = scratch / "repo"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    write(root, case.files)
    real = real_make(root, stub, case)
    run = reader_run(root, stub, case)
    wrong = disagreements(case, real, run, replayed_calls(root, stub, case, run), inside=inside)
    assert not wrong, "\n".join([*wrong, case.shown()])
