"""What a command hands to other files, read through the same readers: the shell scripts it runs (`bash x.sh`,
`bash ci/run-tests` whatever its name, `./x` by its shebang), the Python programs that start pytest themselves
(`python ci/run.py`, `python -c "..."`, `./x` with a Python shebang: `commands.python_launch`), the recipes of
`make TARGET`, the commands of `tox -e ENV` / `nox -s SESSION`, and the Modal functions `modal run` starts (on
their own GPU); a command handing the run to another CI service (`matrix/data/external_ci.toml`) is unread, as
in a workflow; pure apart from the loader.

One `ScriptBudget` bounds a whole read: the scripts, Makefiles and Modal files followed count against it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import replace

from matrix.schedule.commands.modal_functions import ModalFunction, modal_call, modal_label, read_function
from matrix.schedule.commands.pytest_command import (
    MAX_SCRIPT_DEPTH,
    MAX_SCRIPTS,
    MAX_SCRIPTS_BYTES,
    ScriptBudget,
    ScriptLoader,
    ScriptResult,
    _relative,
    called_scripts,
    missing_reason,
    read_script,
    read_text,
    strip_prefixes,
)
from matrix.schedule.commands.python_launch import Launch, launch
from matrix.schedule.commands.python_scripts import PythonRun, is_test_file, main_block, python_run, starts_pytest, unittest_reach
from matrix.schedule.commands.run_files import run_files
from matrix.schedule.commands.session_files import nox_script, session_call, tox_script
from matrix.schedule.make.commands import read_make_call
from matrix.schedule.make.targets import make_call
from matrix.schedule.model import CommandReader, Origin, Selection, StepContext, UnreadableCommand


def follow(
    words: Sequence[str],
    context: StepContext,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    *,
    budget: ScriptBudget,
    depth: int = 0,
    calling: tuple[str, ...] = (),
) -> ScriptResult:
    """Everything the files `words` hand over select (see the module docstring), merged."""
    if not _may_follow(words):
        return _NOTHING
    parts: list[ScriptResult] = []
    unread: list[tuple[Origin, str]] = []
    bounds: list[tuple[tuple[Origin, str], tuple[str, ...]]] = []
    handed = _handoff(words) if depth > 0 else ""  # a workflow's own steps: `services.external_ci.handoffs`
    if handed:
        unread.append((context.origin, handed))
    scripts = called_scripts(words, context)
    for called, why in scripts:
        if called is None:
            unread.append((context.origin, why))
            continue
        parts.append(read_script(called, load, readers, context, depth=depth + 1, budget=budget, calling=calling))
    for file in () if scripts else run_files(strip_prefixes(words), context.working_dir, load):
        if file.path is None:
            unread.append((context.origin, file.why))
        elif file.python:
            program = PythonRun(script=file.written, arguments=file.arguments)
            parts.append(_launcher(program, context, load, readers, budget=budget, depth=depth, path=file.path))
        else:
            parts.append(read_script(file.path, load, readers, context, depth=depth + 1, budget=budget, calling=calling))
    make = make_call(words, context.working_dir, context.env)
    if make is not None and _elsewhere(make.folder, make.makefiles):
        shown = posixpath.join(make.folder, (make.makefiles or ("Makefile",))[0])
        unread.append((context.origin, f"make reads {shown[:80]}, a file known only at run time or outside the checkout"))
    elif make is not None:
        parts.append(read_make_call(make, context, load, readers, budget=budget, depth=depth, calling=calling))
    session = session_call(words)
    if session is not None:
        path = posixpath.normpath(posixpath.join(context.working_dir, session.file))
        text = _take(path, load, context, unread, budget=budget, depth=depth)
        if text is not None:
            script, problems = (tox_script if session.tool == "tox" else nox_script)(text, session)
            unread.extend((context.origin, f"{path}: {p}") for p in problems)
            inner = StepContext(working_dir=posixpath.dirname(path) or ".", env=dict(context.env), origin=context.origin)
            parts.append(read_text(script, path, load, readers, inner, depth=depth + 1, budget=budget, calling=(*calling, path)))
    run = python_run(strip_prefixes(words))
    if run is not None:
        parts.append(_python(run, context, load, readers, budget=budget, depth=depth))
    modal = modal_call(words, context.working_dir)
    if modal is not None:
        text = _take(modal.path, load, context, unread, budget=budget, depth=depth)
        if text is not None:
            function = read_function(text, modal.function)
            if isinstance(function, str):
                unread.append((context.origin, f"modal run {modal.path}: {function}"))
            else:
                parts.append(_modal(function, modal.path, load, readers, context, depth=depth, budget=budget, calling=calling))
    return ScriptResult(
        selections=tuple(s for p in parts for s in p.selections),
        unread=(*unread, *(u for p in parts for u in p.unread)),
        conditions=tuple(c for p in parts for c in p.conditions),
        runners=tuple(r for p in parts for r in p.runners),
        bounds=(*bounds, *(b for p in parts for b in p.bounds)),
        installs=tuple(i for p in parts for i in p.installs),
        environments=tuple(e for p in parts for e in p.environments),
    )


def _elsewhere(folder: str, makefiles: Sequence[str]) -> bool:
    """Whether make runs in a folder, or reads a Makefile, known only at run time or outside the checkout."""
    return "$" in folder or folder.startswith(("/", "../")) or any("$" in f or f.startswith("/") for f in makefiles)


_NOTHING = ScriptResult()
_HANDS_OVER = frozenset(
    {
        "bash",
        "sh",
        "dash",
        "source",
        ".",
        "make",
        "gmake",
        "$(MAKE)",
        "${MAKE}",
        "modal",
        "tox",
        "nox",
        "uvx",
        "pipx",
        "python",
        "python3",
    }
)


def _may_follow(words: Sequence[str]) -> bool:
    """A first test, never the verdict: a command that runs a script, make or modal names one of these."""
    return bool(words) and (
        posixpath.basename(words[0]) in _HANDS_OVER
        or words[0].startswith(("python", "./"))
        or "/" in words[0]
        or any(".sh" in w for w in words)
        or posixpath.basename(words[0]) in _handoff_commands()
    )


def _python(
    run: PythonRun,
    context: StepContext,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    *,
    budget: ScriptBudget,
    depth: int,
) -> ScriptResult:
    """`python -m unittest ...` (unread, bounded by its arguments where they name paths) and a test file run as a
    script (read through its `__main__` block, else unread); a script that is not a test file is not this reader's."""
    here = context.origin
    if run.code is not None:  # `python -c "import pytest; pytest.main([...])"`
        started = launch(run.code, "-c", run.arguments)
        if not started.runs and not started.unread and starts_pytest(run.code, mains=False):
            # `subprocess.run([sys.executable, "-m", "pytest", ...])`, `os.system("pytest ...")`: not read
            return ScriptResult(unread=((here, "python -c starts pytest in a way this reader does not read"),))
        return _runs(started, "python -c", context, readers)
    if run.unittest:
        item = (here, "runs python -m unittest, whose selection this audit does not read")
        found = unittest_reach(run.arguments, context.working_dir)
        return ScriptResult(unread=(item,), bounds=((item, found),) if found is not None else ())
    if not is_test_file(run.script):
        return _launcher(run, context, load, readers, budget=budget, depth=depth)
    if "$" in run.script or "`" in run.script or "__UNRESOLVED_" in run.script:
        return ScriptResult(unread=((here, f"runs the test file {run.script[:80]}, a path known only at run time"),))
    path = _relative(run.script, context.working_dir)
    if path.startswith(("/", "~", "../")):
        return ScriptResult(unread=((here, f"runs the test file {run.script[:80]}, outside the checkout"),))
    unread: list[tuple[Origin, str]] = []
    text = _take(path, load, context, unread, budget=budget, depth=depth)
    if text is None:
        return ScriptResult(unread=tuple(unread))
    started = launch(text, run.script, run.arguments, test_file=True)  # `__file__` is the path as the command gives it
    if started.runs:
        return _runs(started, path, context, readers)
    if started.calls and not started.unread:
        return _NOTHING  # its pytest.main calls are read, and none runs for these words
    block = main_block(text, run.script)
    if started.unread and not block.unread:
        block = replace(block, unread=started.unread, bounded=False)
    if block.unread:
        item = (here, block.unread)
        return ScriptResult(unread=(item,), bounds=((item, (path,)),) if block.bounded else ())
    arguments = block.pytest_arguments or (run.script,)
    how = "pytest.main" if block.pytest_arguments else "unittest.main or run_tests (its unittest.TestCase classes)"
    note = f"{path} is run as a script: its __main__ block runs it with {how}"
    selections: list[tuple[Selection, Origin]] = []
    for reader in readers:
        try:
            selections.extend((s, here) for s in reader.selections(["pytest", *arguments], context))
        except UnreadableCommand as exc:
            item = (here, f"{path} run as a script: {exc.reason}")
            return ScriptResult(unread=(item,), bounds=((item, exc.reach),) if exc.reach is not None else ())
    return ScriptResult(selections=tuple(selections), conditions=tuple((s, (note,)) for s, _ in selections))


def _launcher(
    run: PythonRun,
    context: StepContext,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    *,
    budget: ScriptBudget,
    depth: int,
    path: str | None = None,
) -> ScriptResult:
    """A Python program of the checkout that is not a test file: the pytest runs it starts itself
    (`python_launch.launch`: `pytest.main` with literal arguments, under conditions its command line decides);
    unread, and free to run any test, when it starts pytest in a way not read (a computed argument list, a
    subprocess: `python_scripts.starts_pytest`); nothing otherwise (a build or lint script). `path` is the file when
    the caller found it already (a `./x` with a Python shebang)."""
    from matrix.schedule.shell.tree import from_workspace

    if path is None:
        rooted = from_workspace(run.script)
        script = rooted if rooted is not None else run.script
        if "$" in script or "`" in script or "__UNRESOLVED_" in script or not script.endswith(".py"):
            return _NOTHING
        path = _relative(script, "." if rooted is not None else context.working_dir)
    if path.startswith(("/", "~", "../")):
        return _NOTHING
    unread: list[tuple[Origin, str]] = []
    text = _take(path, load, context, unread, budget=budget, depth=depth)
    if text is None:  # a script not in the tree runs nothing; one not read (too deep, over budget) may
        return ScriptResult(unread=tuple(u for u in unread if "is not in the tree" not in u[1]))
    started = launch(text, run.script, run.arguments)
    if started.runs or started.unread:
        return _runs(started, path, context, readers)
    if not starts_pytest(text, mains=False):  # its `pytest.main` calls are read: none runs for these words
        return _NOTHING
    return ScriptResult(
        unread=((context.origin, f"runs {path}, a Python script that starts pytest itself: what it runs is not read"),)
    )


def _runs(started: Launch, path: str, context: StepContext, readers: Sequence[CommandReader]) -> ScriptResult:
    """The pytest runs a program starts, through the readers (each with the conditions it runs under)."""
    here = context.origin
    if started.unread:
        return ScriptResult(unread=((here, started.unread),))
    selections: list[tuple[Selection, Origin]] = []
    conditions: list[tuple[Selection, tuple[str, ...]]] = []
    unread: list[tuple[Origin, str]] = []
    bounds: list[tuple[tuple[Origin, str], tuple[str, ...]]] = []
    for one in started.runs:
        note = f"{path} starts pytest itself (pytest.main)"
        for reader in readers:
            try:
                found = list(reader.selections(["pytest", *one.arguments], context))
            except UnreadableCommand as exc:
                item = (here, f"{path} runs pytest.main: {exc.reason}")
                unread.append(item)
                if exc.reach is not None:
                    bounds.append((item, exc.reach))
                continue
            selections.extend((s, here) for s in found)
            conditions.extend((s, (note, *one.conditions)) for s in found)
    return ScriptResult(selections=tuple(selections), unread=tuple(unread), conditions=tuple(conditions), bounds=tuple(bounds))


def _take(
    path: str, load: ScriptLoader, context: StepContext, unread: list[tuple[Origin, str]], *, budget: ScriptBudget, depth: int
) -> str | None:
    """The text of a followed file, counted against the budget; None (with the reason listed) when it cannot be."""
    if depth >= MAX_SCRIPT_DEPTH:
        unread.append((context.origin, f"{path}: files followed deeper than {MAX_SCRIPT_DEPTH}"))
        return None
    if budget.scripts <= 0:
        unread.append(
            (context.origin, f"{path}: over the budget of files one step may follow ({MAX_SCRIPTS}, {MAX_SCRIPTS_BYTES} bytes)")
        )
        return None
    text = load(path)
    if text is None:
        unread.append((context.origin, missing_reason(load, path).replace("the script", path, 1)))
        return None
    if budget.size < len(text):
        unread.append(
            (context.origin, f"{path}: over the budget of files one step may follow ({MAX_SCRIPTS}, {MAX_SCRIPTS_BYTES} bytes)")
        )
        return None
    budget.scripts -= 1
    budget.size -= len(text)
    return text


def _modal(
    function: ModalFunction,
    path: str,
    load: ScriptLoader,
    readers: Sequence[CommandReader],
    context: StepContext,
    *,
    depth: int,
    budget: ScriptBudget,
    calling: tuple[str, ...],
) -> ScriptResult:
    """The selections of a Modal function, each on the runner its `gpu=` names (none: Modal's CPU container)."""
    label, note = modal_label(function.gpu) if function.gpu else ("modal-cpu", "runs on Modal without a GPU")
    # The image copies the repository (`add_local_dir`); the commands run from that copy's root.
    inner = StepContext(working_dir=".", env=dict(context.env), origin=context.origin)
    result = read_text(function.script, path, load, readers, inner, depth=depth + 1, budget=budget, calling=(*calling, path))
    here = Origin(
        file=path,
        line=function.line,
        job=context.origin.job,
        via=(*context.origin.via, f"{context.origin.file}:{context.origin.line}"),
    )
    unread = tuple((Origin(file=path, line=line, job=here.job, via=here.via), why) for line, why in function.unread)
    own = dict(result.installs)
    return ScriptResult(
        selections=result.selections,
        unread=(*result.unread, *unread),
        conditions=result.conditions,
        runners=(*result.runners, *((s, (label,), (note,)) for s, _ in result.selections)),
        bounds=result.bounds,
        # The function runs in its image: what the image holds, then what the function installs.
        installs=tuple((s, (*function.image, *own.get(s, ()))) for s, _ in result.selections),
        environments=result.environments,
    )


def _handoff_commands() -> frozenset[str]:
    from matrix.schedule.services.external_ci import external_ci

    return frozenset(external_ci().commands)


def _handoff(words: Sequence[str]) -> str:
    """Why a command hands the run to another CI service (`matrix/data/external_ci.toml`), "" when it does not."""
    stripped = strip_prefixes(words)
    name = posixpath.basename(stripped[0]) if stripped else ""
    if name not in _handoff_commands():
        return ""
    from matrix.schedule.services.external_ci import external_ci

    return f"hands the run to {external_ci().commands[name]} (`{' '.join(stripped)[:80]}`); what that CI runs is not read"
