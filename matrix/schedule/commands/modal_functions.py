"""What `modal run -m pkg.mod::function` runs and on which GPU, read from the Python file; pure.

Modal (modal.com, `modal run` CLI; `App.function(gpu=...)`) runs a decorated function in a container with the GPU
its `gpu=` argument names (`"H100"`, `"H100!"`: exactly an H100, `"A100-80GB:2"`: two of them). The function's
shell commands are the literal strings it hands to `subprocess.run/call/check_call/check_output/Popen` or
`os.system`; a command built at run time (an f-string with a value, a variable) that names pytest or make is
listed as unread. The file is parsed with `ast`, never imported.
"""

from __future__ import annotations

import ast
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace

from matrix.schedule.environment.installs import INSTALL_WORDS, fresh_python, install_step
from matrix.schedule.environment.model import InstallStep, StepKind

_RUNS = frozenset({"run", "call", "check_call", "check_output", "Popen", "system"})
_OF_INTEREST = ("pytest", "py.test", "make", "run_suite.py", ".sh", "tox", "nox")


@dataclass(frozen=True, kw_only=True)
class ModalCall:
    """`modal run [-m] MODULE_OR_FILE[::FUNCTION]`: the Python file (repo-relative) and the function, if named."""

    path: str
    function: str | None


def modal_call(words: Sequence[str], working_dir: str) -> ModalCall | None:
    """The Modal function a command runs (`modal run -m dev.modal.tests::fn`, `modal run dev/x.py::fn`)."""
    import posixpath

    if len(words) < 3 or posixpath.basename(words[0]) != "modal" or words[1] != "run":
        return None
    rest = list(words[2:])
    module = False
    target: str | None = None
    i = 0
    while i < len(rest):
        word = rest[i]
        if word in ("-m", "--module"):
            module = True
        elif word.startswith("-"):
            pass  # --detach, -q, --env=...: no value word among the ones CI uses before the target
        else:
            target = word
            break
        i += 1
    if target is None:
        return None
    name, _, function = target.partition("::")
    path = name.replace(".", "/") + ".py" if module else name
    full = path if path.startswith("/") else posixpath.normpath(posixpath.join(working_dir, path))
    return ModalCall(path=full, function=function or None)


@dataclass(frozen=True, kw_only=True)
class ModalFunction:
    """A Modal function as read: its GPU (None: none asked), its shell commands as a script (each on its source
    line), and what could not be read (line, reason)."""

    gpu: str | None
    line: int
    script: str
    unread: tuple[tuple[int, str], ...] = ()
    image: tuple[InstallStep, ...] = ()  # what the function's image holds (`matrix.schedule.environment`)


def read_function(source: str, function: str | None) -> ModalFunction | str:
    """The function `function` of a Modal app file, or why it cannot be read."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return "the Modal file does not parse as Python"
    found = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and _gpu_decorator(n) is not None]
    if function is not None:
        found = [n for n in found if n.name == function]
    if not found:
        return f"no Modal function {function or ''} with a decorator is in the file".replace("  ", " ")
    if len(found) > 1:
        return "modal run without ::function, and the file has several Modal functions"
    node = found[0]
    decorator = _gpu_decorator(node)
    assert decorator is not None
    gpu = _gpu(decorator)
    lines: dict[int, str] = {}
    unread: list[tuple[int, str]] = []
    constants = _module_strings(tree)
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not call.args or _called(call) not in _RUNS:
            continue
        command = _command(call, constants)
        if command is None:
            shown = ast.get_source_segment(source, call.args[0]) or ""
            if any(k in shown for k in _OF_INTEREST):
                unread.append((call.lineno, f"a command built at run time in the Modal function {node.name}: {shown[:80]}"))
            elif "install" in shown:
                # An install built at run time (an f-string): what it installs is not known.
                lines[call.lineno] = "pip install --built-at-run-time"
            continue
        lines[call.lineno] = command
    width = max(lines, default=0)
    script = "\n".join(lines.get(n, "") for n in range(1, width + 1)) + "\n"
    image = image_steps(tree, decorator)
    return ModalFunction(
        gpu=gpu if isinstance(gpu, str) else None, line=node.lineno, script=script, unread=tuple(unread), image=image
    )


# Modal's own images (modal.com/docs/reference/modal.Image): `debian_slim` and `micromamba` are a slim Debian with
# only Python (and micromamba); a function with no `image=` runs in `debian_slim`.
_FRESH_IMAGES = frozenset({"debian_slim", "micromamba"})
_NO_INSTALL = frozenset(
    {
        "add_local_dir",
        "add_local_file",
        "add_local_python_source",
        "env",
        "workdir",
        "apt_install",
        "entrypoint",
        "copy_local_dir",
    }
)
MAX_IMAGE_DEPTH = 16


def image_steps(tree: ast.Module, decorator: ast.Call) -> tuple[InstallStep, ...]:
    """What a Modal function's image holds, as install steps: its `image=` (else its App's, else Modal's default
    slim image), followed through the module's names and the builder's method chain."""
    bindings: dict[str, ast.expr | None] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            bindings[name] = None if name in bindings else stmt.value
    image = next((k.value for k in decorator.keywords if k.arg == "image"), None)
    owner = decorator.func.value if isinstance(decorator.func, ast.Attribute) else None
    if image is None and isinstance(owner, ast.Name) and isinstance(bindings.get(owner.id), ast.Call):
        app = bindings[owner.id]
        assert isinstance(app, ast.Call)
        image = next((k.value for k in app.keywords if k.arg == "image"), None)
    if image is None:
        return (fresh_python("modal.Image.debian_slim() (a function with no image)"),)
    return _image(image, bindings, 0)


def _image(node: ast.expr, bindings: dict[str, ast.expr | None], depth: int) -> tuple[InstallStep, ...]:
    unread = InstallStep(kind=StepKind.UNKNOWN_BASE, command="a Modal image", unread="the Modal image is not read")
    if depth > MAX_IMAGE_DEPTH:
        return (unread,)
    if isinstance(node, ast.Name):
        bound = bindings.get(node.id)
        return (unread,) if bound is None else _image(bound, bindings, depth + 1)
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return (unread,)
    method, base = node.func.attr, node.func.value
    if (dotted_name(base) or "").endswith("Image"):
        if method in _FRESH_IMAGES:
            # `python_version=` as a literal or a module constant; left out, Modal picks one (not known here)
            given = next((k.value for k in node.keywords if k.arg == "python_version"), None)
            if isinstance(given, ast.Name) and isinstance(bindings.get(given.id), ast.Constant):
                given = bindings[given.id]
            version = given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) else ""
            return (fresh_python(f"modal.Image.{method}() (a slim Debian image with Python only)", version),)
        return (replace(unread, command=f"modal.Image.{method}()", unread=f"modal.Image.{method}(): what it holds is not read"),)
    before = _image(base, bindings, depth + 1)
    literal = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if method in _NO_INSTALL:
        return before
    if method in ("pip_install", "uv_pip_install") and len(literal) == len(node.args) and not node.keywords:
        return (*before, InstallStep(command=f".{method}({', '.join(map(repr, literal))})", requirements=tuple(literal)))
    if method == "run_commands" and len(literal) == len(node.args):
        steps = [install_step(shlex.split(c)) for c in literal if any(w in c for w in INSTALL_WORDS)]
        return (*before, *(s if s is not None else replace(unread, kind=StepKind.INSTALL) for s in steps))
    said = InstallStep(command=f".{method}(...)", unread=f"the Modal image method {method} is not read")
    return (*before, said)


def dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_name(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _gpu_decorator(node: ast.FunctionDef) -> ast.Call | None:
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) and decorator.func.attr == "function":
            return decorator
    return None


def _gpu(decorator: ast.Call) -> str | None:
    for keyword in decorator.keywords:
        if keyword.arg == "gpu":
            value = keyword.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
            if isinstance(value, ast.List | ast.Tuple) and value.elts and isinstance(value.elts[0], ast.Constant):
                return str(value.elts[0].value)  # Modal tries the list in order: the first is the one asked for
            return "(known only at run time)"
    return None


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound once, to a string literal (`OLDEST = "4.52.0"`), and nowhere else in the file:
    what an f-string may put in."""
    counts: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            counts[node.id] = counts.get(node.id, 0) + 1
    out: dict[str, str] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
            and counts.get(stmt.targets[0].id) == 1
        ):
            out[stmt.targets[0].id] = stmt.value.value
    return out


def _text(node: ast.expr, constants: dict[str, str]) -> str | None:
    """A string literal, or an f-string whose every placeholder is a module constant (no conversion, no format)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts: list[str] = []
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value)
        elif (
            isinstance(value, ast.FormattedValue)
            and value.conversion == -1
            and value.format_spec is None
            and isinstance(value.value, ast.Name)
            and value.value.id in constants
        ):
            parts.append(constants[value.value.id])
        else:
            return None
    return "".join(parts)


def _command(call: ast.Call, constants: dict[str, str] | None = None) -> str | None:
    """The shell text of a subprocess call with literal arguments (f-strings of module constants too), else None."""
    first = call.args[0]
    known = constants or {}
    shell = _called(call) == "system" or any(
        k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value is True for k in call.keywords
    )
    text = _text(first, known)
    if text is not None:
        return text if shell else shlex.quote(text)  # without a shell the string is one program name
    if isinstance(first, ast.List | ast.Tuple):
        items = [_text(e, known) for e in first.elts]
        if any(i is None for i in items):
            return None
        words = [i for i in items if i is not None]
        if shell:
            return words[0] if words else None  # the first item is the command line, the rest are $0, $1...
        return shlex.join(words)
    return None


def modal_label(gpu: str) -> tuple[str, str]:
    """(runner label, the assumption it rests on) for a Modal `gpu=` value: `H100!` -> modal-h100."""
    kind, _, count = gpu.rstrip("!").partition(":")
    label = f"modal-{kind.lower()}" + (f"-x{count}" if count and count != "1" else "")
    return label, f"runs on Modal, gpu={gpu!r} (a Modal {kind} GPU)"
