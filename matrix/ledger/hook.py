"""Start-up hook: append one JSON line per test outcome and per process to the file `SPECMATRIX_LEDGER` names.

Loaded by the `.pth` line `specmatrix ledger --install-hook` writes, and only when that variable is set. Standard
library only, and nothing imported at load that a plain `python -c pass` does not load (json comes with the first
record). unittest and pytest are patched when (and if) the process imports them, through a finder on
`sys.meta_path` that loads `hook_unittest` or `hook_pytest` then. Nothing here may raise into the process under
test: every entry point swallows its own errors, and a record that cannot be written is dropped.

Each record is one `os.write` of a whole line to a descriptor opened with `O_APPEND`, so concurrent processes never
interleave inside a line and a process killed with SIGKILL leaves every record it wrote.
"""

from __future__ import annotations

import atexit
import os
import sys
import time

# typing is not loaded at interpreter start-up; the annotations here are strings, so only mypy needs it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENV_LEDGER = "SPECMATRIX_LEDGER"
ENV_ROOT = "SPECMATRIX_LEDGER_ROOT"
ENV_DETECT = "SPECMATRIX_DETECT"
ENV_DETECT_WITH = "SPECMATRIX_LEDGER_DETECT"  # "torch": import torch to read the GPUs when nothing else says
LEDGER_VERSION = 1
MAX_TEXT = 2000  # characters kept of a reason or message, so every line stays small
MAX_ID = 8000  # characters kept of a file or test id (the reader keeps 8192)
MAX_DETECT = 64 * 1024  # characters of SPECMATRIX_DETECT read
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_STATE_KEY = "_specmatrix_ledger_state"
_UNKNOWN_RUNNER = '{"source":"unknown"}'


class State:
    """Everything the hook keeps for this process (one instance, stored on `sys` so a second load reuses it)."""

    def __init__(self, path: str, root: str) -> None:
        self.path = path
        self.root = root
        self.fd = -1
        self.pid = os.getpid()  # kept current in forked children by an at-fork hook, saving a syscall per record
        self.head: str | None = None
        self.classes: dict[type, tuple[str, str]] = {}  # test class -> (file, "file::Class::")
        self.fragments: dict[type, str] = {}  # test class -> its record's fields up to the method name, as JSON
        self.runner: str | None = None  # the JSON text of the runner facts, once known
        self.started = False
        self.tests = 0
        self.exit_status: int | None = None
        self.exit_how = "end"
        self.files: dict[str, str] = {}  # module name -> file relative to root
        self.pytest_root: str | None = None


def text(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def ident(value: str) -> str:
    """A file or test id cut to MAX_ID characters (the reader's line limit is 1 MiB; a JSON-escaped character
    takes at most 12 bytes), so an absurd id still leaves a record of its outcome."""
    return value if len(value) <= MAX_ID else value[: MAX_ID - 1] + "…"


def _runner_facts() -> dict[str, Any] | None:
    """GPU count, capability and name, from SPECMATRIX_DETECT, else from torch if CUDA is already initialised."""
    override = os.environ.get(ENV_DETECT)
    if override:
        import json

        try:
            data = json.loads(override[:MAX_DETECT])
        except (ValueError, RecursionError):
            return {"source": ENV_DETECT, "error": "not valid JSON (or nested too deeply)"}
        if not isinstance(data, dict):
            return {"source": ENV_DETECT, "error": "not a JSON object"}
        facts: dict[str, Any] = {"source": ENV_DETECT}
        for key in ("gpus", "capability", "name"):
            if key in data:
                value = _fact(data[key])
                if value is None:
                    return {"source": ENV_DETECT, "error": f"{key!r} must be a number, a string or [major, minor]"}
                facts[key] = value
        return facts
    torch = sys.modules.get("torch")
    if torch is None and os.environ.get(ENV_DETECT_WITH) == "torch":
        try:
            import torch  # type: ignore[no-redef]  # asked for explicitly
        except Exception:
            return {"source": "torch", "error": "torch is not importable"}
    if torch is None:
        return None
    try:
        cuda = torch.cuda
        # Never initialise CUDA here (a forked worker would break); read it only once the process has.
        if not cuda.is_initialized() and os.environ.get(ENV_DETECT_WITH) != "torch":
            return None
        count = int(cuda.device_count()) if cuda.is_available() else 0
        if not count:
            return {"source": "torch", "gpus": 0}
        major, minor = cuda.get_device_capability(0)
        return {"source": "torch", "gpus": count, "capability": [int(major), int(minor)], "name": str(cuda.get_device_name(0))}
    except Exception as exc:
        return {"source": "torch", "error": text(exc)}


def _fact(value: object) -> object:
    """A runner fact kept only when it is flat (a number, a short string, a list of two numbers): no nesting survives."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | str):
        return text(value) if isinstance(value, str) else value
    if isinstance(value, list) and len(value) <= 4 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return value
    return None


def plain(text: str) -> bool:
    """Whether `text` is its own JSON string body (printable ASCII with nothing to escape)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _quote(text: str) -> str:
    """A JSON string; the common case (printable ASCII, nothing to escape) without loading json."""
    if plain(text):
        return '"' + text + '"'
    import json

    return json.dumps(text, ensure_ascii=True)


def _head(state: State) -> str:
    """The start of every line: version and runner facts (looked up until they are known, then cached)."""
    if state.head is not None:
        return state.head
    if state.runner is None and (ENV_DETECT in os.environ or "torch" in sys.modules or ENV_DETECT_WITH in os.environ):
        facts = _runner_facts()
        if facts is not None:
            import json

            state.runner = json.dumps(facts, separators=(",", ":"), ensure_ascii=True)
    head = f'{{"ledger":{LEDGER_VERSION},"runner":{state.runner or _UNKNOWN_RUNNER},'
    if state.runner is not None:
        state.head = head
    return head


def open_ledger(path: str) -> int:
    """A descriptor to append to; never blocks (a FIFO with no reader fails at once), never follows a symlink,
    never a FIFO, device or folder: anything but a regular file raises OSError, and the record is dropped."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | _NOFOLLOW | _CLOEXEC
    fd = os.open(path, flags, 0o644)
    try:
        if not _is_regular(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_regular(mode: int) -> bool:
    return (mode & 0o170000) == 0o100000  # stat.S_ISREG, without importing stat at start-up


def _emit(state: State, fields: str) -> None:
    """One record, one line, one `os.write` to an O_APPEND descriptor."""
    if state.fd < 0:
        state.fd = open_ledger(state.path)
    data = f'{_head(state)}{fields},"pid":{state.pid},"time":{time.time():.3f}}}\n'.encode("ascii")
    if os.write(state.fd, data) != len(data):
        # A short write (a full disk) leaves a torn line; end it so the next record starts on its own line.
        os.write(state.fd, b"\n")


def _write(state: State, record: dict[str, Any]) -> None:
    """A process or exit record (rare, so plain json)."""
    import json

    _emit(state, json.dumps(record, separators=(",", ":"), ensure_ascii=True)[1:-1])


def relative(state: State, path: str) -> str:
    full = os.path.abspath(path)
    root = state.root
    if full == root or full.startswith(root + os.sep):
        full = os.path.relpath(full, root)
    return full.replace(os.sep, "/")


def script_path() -> str:
    argv = getattr(sys, "argv", None) or [""]
    return str(argv[0])


def _ensure_started(state: State) -> None:
    if state.started:
        return
    state.started = True
    script = script_path()
    _write(
        state,
        {
            "kind": "process",
            "script": relative(state, script) if script.endswith(".py") else script,
            "argv": [text(a) for a in (getattr(sys, "argv", None) or [])[1:20]],
        },
    )


def record_test(state: State, file: str, test: str, status: str, reason: str = "") -> None:
    """One test outcome (also used by the pytest plugin object below); the hot path, so no json here."""
    if not state.started:
        _ensure_started(state)
    state.tests += 1
    tail = f',"reason":{_quote(text(reason))}' if reason else ""
    _emit(state, f'"kind":"test","file":{_quote(ident(file))},"test":{_quote(ident(test))},"status":"{status}"{tail}')


class _PatchOnImport:
    """A `sys.meta_path` finder that patches a module right after it executes, the first time it is imported."""

    def __init__(self, patches: dict[str, Any]) -> None:
        self.patches = patches

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        patch = self.patches.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module
        patches = self.patches

        def exec_module(module: Any) -> None:
            original(module)
            patches.pop(name, None)
            try:  # noqa: SIM105  (see above)
                patch(module)
            except Exception:
                pass

        # Per-spec shim: the loader object itself (shared by many modules) is left alone.
        spec.loader = _Loader(loader, exec_module)  # type: ignore[assignment]
        return spec


class _Loader:
    def __init__(self, inner: Any, exec_module: Any) -> None:
        self._inner = inner
        self.exec_module = exec_module

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _on_exit(state: State) -> None:
    try:
        if not state.started and not script_path().endswith(".py"):
            return  # `python -c`, a REPL, a console script that ran no test: nothing to say
        _ensure_started(state)
        status = state.exit_status if state.exit_status is not None else 0
        _write(state, {"kind": "exit", "status": status, "how": state.exit_how, "tests": state.tests})
    except Exception:
        pass


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code)  # sys.exit(True) from unittest.main() is exit status 1
    return 1  # sys.exit("message") prints the message and exits 1


def _install_exit_watchers(state: State) -> None:
    real_exit = sys.exit

    def exit(status: object = None) -> None:
        state.exit_status = _exit_code(status)
        state.exit_how = "sys.exit"
        real_exit(status)  # type: ignore[arg-type]

    sys.exit = exit  # type: ignore[assignment]
    real_hook = sys.excepthook

    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        try:
            state.exit_status = 130 if issubclass(kind, KeyboardInterrupt) else 1
            state.exit_how = f"uncaught {kind.__name__}"
            if kind.__name__ in ("SkipTest", "Skipped") and kind.__module__.startswith(("unittest", "_pytest")):
                # A module that raises SkipTest while it is imported or run as a script: the whole file is skipped.
                file = relative(state, _raising_module_file(tb) or script_path())
                record_test(state, file, file, "skipped", str(value))
        except Exception:
            pass
        real_hook(kind, value, tb)

    sys.excepthook = excepthook


def _load(name: str) -> Any:
    """A sibling module, imported only when the process needs it."""
    module = f"matrix.ledger.{name}"
    __import__(module)
    return sys.modules[module]


def _raising_module_file(tb: Any) -> str | None:
    """The file of the innermost module-level frame in a traceback (the module that raised)."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and not code.co_filename.startswith("<"):
            found = code.co_filename
        tb = tb.tb_next
    return found


def _forked(state: State) -> None:
    """A forked child is a process of its own: its pid, and an exit record that counts only its own outcomes."""
    state.pid = os.getpid()
    state.tests = 0


def activate(environ: Any = os.environ) -> None:
    """Start recording for this process; a no-op when the variable is unset or the hook is already active."""
    path = environ.get(ENV_LEDGER)
    if not path or getattr(sys, _STATE_KEY, None) is not None:
        return
    root = os.path.abspath(environ.get(ENV_ROOT) or os.getcwd())
    state = State(os.path.abspath(path), root)
    setattr(sys, _STATE_KEY, state)
    patches: dict[str, Any] = {
        "unittest.result": lambda module: _load("hook_unittest").patch_unittest_result(state, module),
        "_pytest.config": lambda module: _load("hook_pytest").patch_pytest_config(state, module),
    }
    for name in list(patches):
        if name in sys.modules:
            patches.pop(name)(sys.modules[name])
    if patches:
        sys.meta_path.insert(0, _PatchOnImport(patches))
    _install_exit_watchers(state)
    atexit.register(_on_exit, state)
    os.register_at_fork(after_in_child=lambda: _forked(state))
    if script_path().endswith(".py"):
        _ensure_started(state)


try:  # noqa: SIM105  (see above)
    activate()
except Exception:
    pass
