"""A test file run as a script (`python tests/test_x.py`) and `python -m unittest ...`; pure.

Neither is a pytest command line, yet both run tests. A test file run as a script runs what its `__main__` block
runs: read when that block clearly calls `pytest.main([__file__, ...])` (pytest runs the file, with the literal
options given) or `unittest.main()` (unittest runs the file's `unittest.TestCase` classes; PyTorch's `run_tests()`
does the same); anything else is listed
as unread with its reason, bounded to the file. `python -m unittest` is always unread (this audit reads pytest's
selection, not unittest's), bounded to the paths its arguments name where they name any.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_SOURCE = 4 * 1024 * 1024

_PYTHON = re.compile(r"^python(?:[23](?:\.\d+)?)?[mtd]?(?:\.exe)?$")
_PYTHON_VALUED = frozenset({"-W", "-X", "--check-hash-based-pycs"})
_UNITTEST_VALUED = frozenset({"-k", "-s", "--start-directory", "-p", "--pattern", "-t", "--top-level-directory"})


@dataclass(frozen=True, kw_only=True)
class PythonRun:
    """`python [options] FILE.py args` (`script` set), `python [options] -m unittest args` (`unittest` true) or
    `python -c CODE args` (`code` set)."""

    script: str = ""  # as written
    unittest: bool = False
    arguments: tuple[str, ...] = ()
    code: str | None = None


def python_options(words: Sequence[str]) -> tuple[str, str, int] | None:
    """CPython's command line (`python [options] (-c CODE | -m MODULE | FILE | -) args`): ("c", code, where its
    arguments start), ("m", module, ...), ("file", path, ...), or None for none of these (stdin, `-V`). Short
    options combine (`-Bm pytest`, `-mpytest`, `-uc CODE`)."""
    i = 1
    while i < len(words):
        word = words[i]
        if word == "-" or not word.startswith("-") or word == "--":
            break
        if word.startswith("--"):
            i += 2 if word in _PYTHON_VALUED else 1
            continue
        for j, letter in enumerate(word[1:], start=1):
            if letter in "cm":
                value = word[j + 1 :] or (words[i + 1] if i + 1 < len(words) else "")
                start = i + 1 if word[j + 1 :] else i + 2
                return ("c" if letter == "c" else "m"), value, start
            if letter in "WX":  # `-W error`, `-Wignore`: a value, glued or next
                i += 0 if word[j + 1 :] else 1
                break
        i += 1
    if i >= len(words) or words[i] in ("-", "--"):
        return None
    return "file", words[i], i + 1


def python_run(words: Sequence[str]) -> PythonRun | None:
    """The script, the inline code or the unittest run of `words`, None when they run none of these."""
    if not words or _PYTHON.match(posixpath.basename(words[0])) is None:
        return None
    found = python_options(words)
    if found is None:
        return None
    how, value, start = found
    if how == "m":
        return PythonRun(unittest=True, arguments=tuple(words[start:])) if value == "unittest" else None
    if how == "c":
        return PythonRun(code=value, arguments=tuple(words[start:]))
    return PythonRun(script=value, arguments=tuple(words[start:]))


def is_test_file(path: str) -> bool:
    """A file name pytest collects by default (`test_*.py`, `*_test.py`): a script run as such runs tests."""
    name = posixpath.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def unittest_reach(arguments: Sequence[str], working_dir: str) -> tuple[str, ...] | None:
    """The repository-relative paths `python -m unittest ARGS` can run: the start folder of `discover -s DIR`, the
    files and the top packages of the dotted names it is given; None when a word is known only at run time, or when
    it discovers from where it starts (the checkout root: anything)."""
    if any("$" in a or "`" in a or "__UNRESOLVED_" in a for a in arguments):
        return None
    words = list(arguments)
    found: list[str] = []
    if not words or words[0] == "discover" or all(w.startswith("-") for w in words):
        start = "."
        for index, word in enumerate(words):
            if word in ("-s", "--start-directory") and index + 1 < len(words):
                start = words[index + 1]
        positional = [w for i, w in enumerate(words[1:], 1) if not w.startswith("-") and words[i - 1] not in _UNITTEST_VALUED]
        start = positional[0] if positional and start == "." else start
        folder = _relative(start, working_dir)
        return None if folder == "." else (folder,)
    for index, word in enumerate(words):
        if word.startswith("-") or (index and words[index - 1] in _UNITTEST_VALUED):
            continue
        if word.endswith(".py") or "/" in word:
            found.append(_relative(word, working_dir))
        else:  # a dotted name: its top package, imported from the folder unittest starts in
            found.append(_relative(word.split(".", 1)[0], working_dir))
    return tuple(dict.fromkeys(found)) or None


@dataclass(frozen=True, kw_only=True)
class MainBlock:
    """What a test file's `__main__` block runs: pytest's arguments (`__file__` as the script path given), or
    unittest's TestCase classes (`unittest` true), or why it is not read (`unread`)."""

    pytest_arguments: tuple[str, ...] = ()
    unittest: bool = False
    unread: str = ""
    bounded: bool = False  # an unread block that can run only the file's own tests


def main_block(source: str, script: str) -> MainBlock:
    """Read the `if __name__ == "__main__":` block of a test file run as `python SCRIPT`."""
    if len(source) > MAX_SOURCE:
        return MainBlock(unread=f"{script} is over the size limit ({MAX_SOURCE} bytes)")
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return MainBlock(unread=f"{script} does not parse as Python")
    blocks = [node for node in tree.body if isinstance(node, ast.If) and _is_main_test(node.test)]
    if not blocks:
        # Run as a script, the file runs its module-level code only: its own tests at most, never another file's.
        return MainBlock(unread=f"{script} is run as a script and has no __main__ block: what it runs is not read", bounded=True)
    calls = [node for block in blocks for stmt in block.body for node in ast.walk(stmt) if isinstance(node, ast.Call)]
    torch_runner = _imports_run_tests(tree)
    runners = [
        c
        for c in calls
        if _dotted(c.func) in ("pytest.main", "unittest.main")
        or (torch_runner and isinstance(c.func, ast.Name) and c.func.id == "run_tests")
    ]
    if len(runners) != 1:
        return MainBlock(
            unread=f"{script} is run as a script; its __main__ block calls neither pytest.main nor unittest.main once: "
            "which tests it runs is not read"
        )
    call = runners[0]
    if _dotted(call.func) == "unittest.main" or isinstance(call.func, ast.Name):
        if call.args or any(k.arg in ("argv", "defaultTest", "module", "testLoader") for k in call.keywords):
            return MainBlock(unread=f"{script} calls unittest.main with its own module, tests or argv: not read")
        plain = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")]
        if plain:
            return MainBlock(
                unread=f"{script} runs unittest.main, which runs its TestCase classes but not its test functions "
                f"({', '.join(plain[:3])}): what runs is not read as pytest's selection",
                bounded=True,
            )
        return MainBlock(unittest=True)
    arguments = _pytest_arguments(call, script)
    if arguments is None:
        return MainBlock(
            unread=f"{script} calls pytest.main with arguments that are not a literal list of __file__ and text: not read"
        )
    return MainBlock(pytest_arguments=arguments)


def _pytest_arguments(call: ast.Call, script: str) -> tuple[str, ...] | None:
    if call.keywords or len(call.args) != 1 or not isinstance(call.args[0], ast.List | ast.Tuple):
        return None  # `pytest.main()` reads the command's own arguments; a computed list is run-time
    out: list[str] = []
    for item in call.args[0].elts:
        if isinstance(item, ast.Name) and item.id == "__file__":
            out.append(script)
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        else:
            return None
    if script not in out:
        return None  # it names other tests than its own file: not this reader's to guess
    return tuple(out)


def _imports_run_tests(tree: ast.Module) -> bool:
    """Whether the module takes `run_tests` from PyTorch's test harness (`torch/testing/_internal/common_utils.py`,
    `run_tests`: without `--use-pytest` it calls `unittest.main` on the `__main__` module, as `unittest.main()` does)."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "torch.testing._internal.common_utils"
        and any(alias.name == "run_tests" and alias.asname is None for alias in node.names)
        for node in tree.body
    )


def _is_main_test(test: ast.expr) -> bool:
    if not isinstance(test, ast.Compare) or len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return ""


def _relative(path: str, working_dir: str) -> str:
    joined = posixpath.normpath(posixpath.join(working_dir, path)) if not path.startswith("/") else path
    return joined.removeprefix("./")


# A pytest command word in a string: `"pytest"`, `"-m pytest"`, `f"python3 -m pytest {cmd}"`, `"py.test"`.
# a pytest command word, or Python code that starts pytest (`exec("import pytest; pytest.main([...])")`)
_PYTEST_WORD = re.compile(r"(?:^|\s)(?:pytest|py\.test)(?:\s|$)|\bimport\s+pytest\b|\bfrom\s+pytest\s+import\b|\bpytest\.main\b")
_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def starts_pytest(text: str, *, mains: bool = True) -> bool:
    """Whether a Python script (not a test file) may start pytest itself: it calls `pytest.main`, imports a helper
    whose name says pytest (`from runner.pytest_runner import run_pytest`), or holds a string, other than a
    docstring, that is a pytest command word (`[sys.executable, "-m", "pytest", target]`). A comment or docstring
    naming pytest does not count; a script that does not parse may (its text names pytest). Without `mains`, a
    `pytest.main` reference does not count (`python_launch` reads those)."""
    if "pytest" not in text and "py.test" not in text:
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, _DOCUMENTED) and node.body and isinstance(node.body[0], ast.Expr)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings and _PYTEST_WORD.search(node.value):
                return True
        elif isinstance(node, ast.Import | ast.ImportFrom):
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            named = [module, *(a.name for a in node.names)]
            if any("pytest" in n and n != "pytest" for n in named):
                return True
        elif (
            mains
            and isinstance(node, ast.Attribute)
            and node.attr == "main"
            and isinstance(node.value, ast.Name)
            and node.value.id == "pytest"
        ):
            return True
    return False
