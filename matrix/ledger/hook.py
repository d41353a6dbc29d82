"""Start-up hook: append one JSON line per test outcome and per process to the file `SPECMATRIX_LEDGER` names.

Loaded by the `.pth` line `specmatrix ledger --install-hook` writes, and only when that variable is set. Standard
library only, nothing imported eagerly that a plain `python -c pass` would not load: unittest and pytest are patched
when (and if) the process imports them, through a finder on `sys.meta_path`. Nothing here may raise into the
process under test: every entry point swallows its own errors, and a record that cannot be written is dropped.

Each record is one `os.write` of a whole line to a descriptor opened with `O_APPEND`, so concurrent processes never
interleave inside a line and a process killed with SIGKILL leaves every record it wrote.
"""

from __future__ import annotations

import atexit
import os
import sys
import time
from typing import Any

ENV_LEDGER = "SPECMATRIX_LEDGER"
ENV_ROOT = "SPECMATRIX_LEDGER_ROOT"
ENV_DETECT = "SPECMATRIX_DETECT"
ENV_DETECT_WITH = "SPECMATRIX_LEDGER_DETECT"  # "torch": import torch to read the GPUs when nothing else says
LEDGER_VERSION = 1
MAX_TEXT = 2000  # characters kept of a reason or message, so every line stays small
_STATE_KEY = "_specmatrix_ledger_state"
_UNKNOWN_RUNNER = '{"source":"unknown"}'


class _State:
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


def _text(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _runner_facts() -> dict[str, Any] | None:
    """GPU count, capability and name, from SPECMATRIX_DETECT, else from torch if CUDA is already initialised."""
    override = os.environ.get(ENV_DETECT)
    if override:
        import json

        try:
            data = json.loads(override)
        except ValueError:
            return {"source": ENV_DETECT, "error": "not valid JSON"}
        if not isinstance(data, dict):
            return {"source": ENV_DETECT, "error": "not a JSON object"}
        facts: dict[str, Any] = {"source": ENV_DETECT}
        for key in ("gpus", "capability", "name"):
            if key in data:
                facts[key] = data[key]
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
        return {"source": "torch", "error": _text(exc)}


def _plain(text: str) -> bool:
    """Whether `text` is its own JSON string body (printable ASCII with nothing to escape)."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _quote(text: str) -> str:
    """A JSON string; the common case (printable ASCII, nothing to escape) without loading json."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return '"' + text + '"'
    import json

    return json.dumps(text, ensure_ascii=True)


def _head(state: _State) -> str:
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


def _emit(state: _State, fields: str) -> None:
    """One record, one line, one `os.write` to an O_APPEND descriptor."""
    if state.fd < 0:
        state.fd = os.open(state.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    data = f'{_head(state)}{fields},"pid":{state.pid},"time":{time.time():.3f}}}\n'.encode("ascii")
    if os.write(state.fd, data) != len(data):
        # A short write (a full disk) leaves a torn line; end it so the next record starts on its own line.
        os.write(state.fd, b"\n")


def _write(state: _State, record: dict[str, Any]) -> None:
    """A process or exit record (rare, so plain json)."""
    import json

    _emit(state, json.dumps(record, separators=(",", ":"), ensure_ascii=True)[1:-1])


def _relative(state: _State, path: str) -> str:
    full = os.path.abspath(path)
    root = state.root
    if full == root or full.startswith(root + os.sep):
        full = os.path.relpath(full, root)
    return full.replace(os.sep, "/")


def _script() -> str:
    argv = getattr(sys, "argv", None) or [""]
    return str(argv[0])


def _ensure_started(state: _State) -> None:
    if state.started:
        return
    state.started = True
    script = _script()
    _write(
        state,
        {
            "kind": "process",
            "script": _relative(state, script) if script.endswith(".py") else script,
            "argv": [_text(a) for a in (getattr(sys, "argv", None) or [])[1:20]],
        },
    )


def record_test(state: _State, file: str, test: str, status: str, reason: str = "") -> None:
    """One test outcome (also used by the pytest plugin object below); the hot path, so no json here."""
    if not state.started:
        _ensure_started(state)
    state.tests += 1
    tail = f',"reason":{_quote(_text(reason))}' if reason else ""
    _emit(state, f'"kind":"test","file":{_quote(file)},"test":{_quote(test)},"status":"{status}"{tail}')


# ----------------------------------------------------------------------------------------------- unittest


def _module_file(state: _State, module: str) -> str:
    known = state.files.get(module)
    if known is not None:
        return known
    mod = sys.modules.get(module)
    path = getattr(mod, "__file__", None) if mod is not None else None
    rel = _relative(state, path) if isinstance(path, str) else module.replace(".", "/") + ".py"
    state.files[module] = rel
    return rel


def _unittest_id(state: _State, test: Any) -> tuple[str, str]:
    """(file, pytest-style test id) for a unittest test, an `_ErrorHolder` or a loader's stand-in case."""
    cls = type(test)
    known = state.classes.get(cls)
    if known is not None:
        return known[0], known[1] + test._testMethodName
    case = getattr(test, "test_case", None)  # a _SubTest reports for the test it belongs to
    if case is not None and hasattr(case, "_testMethodName"):
        test, cls = case, type(case)
    method = getattr(test, "_testMethodName", None)
    if method is not None:
        if cls.__module__ == "unittest.loader":
            # ModuleSkipped / _FailedTest: the method is named after the module that could not be loaded.
            file = _module_file(state, method)
            return file, file
        file = _module_file(state, cls.__module__)
        if case is None:
            prefix = f"{file}::{cls.__qualname__}::"
            state.classes[cls] = (file, prefix)
            if _plain(prefix):
                state.fragments[cls] = f'"kind":"test","file":"{file}","test":"{prefix}'
        return file, f"{file}::{cls.__qualname__}::{method}"
    # _ErrorHolder: "setUpClass (pkg.mod.Class)" or "setUpModule (pkg.mod)".
    description = str(getattr(test, "description", "") or test)
    inner = description.partition(" (")[2].rstrip(")")
    if not inner:
        return "", description
    module, _, name = inner.rpartition(".")
    if module and module in sys.modules and not isinstance(getattr(sys.modules[module], name, None), type(sys)):
        file = _module_file(state, module)
        return file, f"{file}::{name}"
    file = _module_file(state, inner)
    return file, file


def _patch_unittest_result(state: _State, result_module: Any) -> None:
    cls = result_module.TestResult
    if getattr(cls, "_specmatrix_ledger", False):
        return

    def wrap(name: str, status: str, reason_at: int | None) -> None:
        original = getattr(cls, name)

        def patched(self: Any, test: Any, *args: Any) -> Any:
            try:
                if name != "addSubTest" or args[1] is not None:
                    file, test_id = _unittest_id(state, test)
                    reason = ""
                    if reason_at is not None and len(args) > reason_at:
                        detail = args[reason_at]
                        reason = detail if isinstance(detail, str) else _exc_line(detail)
                    record_test(state, file, test_id, status, reason)
            except Exception:
                pass
            return original(self, test, *args)

        patched.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(cls, name, patched)

    success = cls.addSuccess

    def add_success(self: Any, test: Any) -> Any:
        # The hot path (one call per passing test): a class seen before and a plain method name go straight to a
        # pre-built line; everything else takes the general path.
        try:
            fragment = state.fragments.get(type(test))
            method = test._testMethodName if fragment is not None else ""
            if fragment is not None and state.head is not None and state.started and method.isascii() and method.isidentifier():
                state.tests += 1
                line = f'{state.head}{fragment}{method}","status":"passed","pid":{state.pid},"time":{time.time():.3f}}}\n'
                data = line.encode("ascii")
                if os.write(state.fd, data) != len(data):
                    os.write(state.fd, b"\n")
            else:
                record_test(state, *_unittest_id(state, test), "passed")
        except Exception:
            pass
        return success(self, test)

    add_success.__wrapped__ = success  # type: ignore[attr-defined]
    cls.addSuccess = add_success
    wrap("addFailure", "failed", 0)
    wrap("addError", "error", 0)
    wrap("addSkip", "skipped", 0)
    wrap("addExpectedFailure", "xfailed", 0)
    wrap("addUnexpectedSuccess", "xpassed", None)
    wrap("addSubTest", "failed", 1)
    cls._specmatrix_ledger = True


def _exc_line(exc_info: object) -> str:
    if isinstance(exc_info, tuple) and len(exc_info) == 3 and exc_info[1] is not None:
        value = exc_info[1]
        return f"{type(value).__name__}: {value}"
    return ""


# ----------------------------------------------------------------------------------------------- pytest


class _PytestLedger:
    """A pytest plugin object: one record per test (its worst phase) and one per skipped or broken collector."""

    def __init__(self, state: _State) -> None:
        self.state = state
        self.root = ""
        self.outcomes: dict[str, tuple[str, str]] = {}

    def pytest_configure(self, config: Any) -> None:
        self.root = str(config.rootpath)

    def _file_and_id(self, nodeid: str) -> tuple[str, str]:
        path, sep, rest = nodeid.partition("::")
        file = _relative(self.state, os.path.join(self.root, path))
        return file, f"{file}{sep}{rest}"

    def pytest_collectreport(self, report: Any) -> None:
        try:
            if report.outcome == "passed" or "::" in report.nodeid or not report.nodeid:
                return
            file, test_id = self._file_and_id(report.nodeid)
            status = "skipped" if report.outcome == "skipped" else "error"
            record_test(self.state, file, test_id, status, _longrepr_reason(report))
        except Exception:
            pass

    def pytest_runtest_logreport(self, report: Any) -> None:
        try:
            status, reason = _pytest_status(report)
            previous = self.outcomes.get(report.nodeid)
            if status is not None and (previous is None or _RANK[status] > _RANK[previous[0]]):
                self.outcomes[report.nodeid] = (status, reason)
            if report.when == "teardown":
                final = self.outcomes.pop(report.nodeid, None)
                if final is not None:
                    file, test_id = self._file_and_id(report.nodeid)
                    record_test(self.state, file, test_id, final[0], final[1])
        except Exception:
            pass

    def pytest_sessionfinish(self, session: Any, exitstatus: Any) -> None:
        try:
            self.state.exit_status = int(exitstatus)
            self.state.exit_how = "pytest"
        except Exception:
            pass


_RANK = {"passed": 0, "xfailed": 1, "xpassed": 1, "skipped": 2, "failed": 3, "error": 4}


def _longrepr_reason(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return _text(str(longrepr[2]).removeprefix("Skipped: "))
    text = str(getattr(report, "longreprtext", "") or "")
    lines = [line for line in text.splitlines() if line.strip()]
    return _text(lines[-1].strip()) if lines else ""


def _pytest_status(report: Any) -> tuple[str | None, str]:
    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        return ("xfailed" if report.skipped else "xpassed"), str(wasxfail)
    if report.skipped:
        return "skipped", _longrepr_reason(report)
    if report.failed:
        return ("failed" if report.when == "call" else "error"), _longrepr_reason(report)
    return ("passed" if report.when == "call" else None), ""


def _patch_pytest_config(state: _State, config_module: Any) -> None:
    manager = config_module.PytestPluginManager
    if getattr(manager, "_specmatrix_ledger", False):
        return
    original = manager.__init__

    def patched(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        try:  # noqa: SIM105  (contextlib is not loaded at start-up; the hook imports nothing it does not need)
            self.register(_PytestLedger(state), "specmatrix-ledger")
        except Exception:
            pass

    manager.__init__ = patched
    manager._specmatrix_ledger = True


# ----------------------------------------------------------------------------------------------- start-up


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


def _on_exit(state: _State) -> None:
    try:
        if not state.started and not _script().endswith(".py"):
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


def _install_exit_watchers(state: _State) -> None:
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
                file = _relative(state, _raising_module_file(tb) or _script())
                record_test(state, file, file, "skipped", str(value))
        except Exception:
            pass
        real_hook(kind, value, tb)

    sys.excepthook = excepthook


def _raising_module_file(tb: Any) -> str | None:
    """The file of the innermost module-level frame in a traceback (the module that raised)."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and not code.co_filename.startswith("<"):
            found = code.co_filename
        tb = tb.tb_next
    return found


def activate(environ: Any = os.environ) -> None:
    """Start recording for this process; a no-op when the variable is unset or the hook is already active."""
    path = environ.get(ENV_LEDGER)
    if not path or getattr(sys, _STATE_KEY, None) is not None:
        return
    root = os.path.abspath(environ.get(ENV_ROOT) or os.getcwd())
    state = _State(os.path.abspath(path), root)
    setattr(sys, _STATE_KEY, state)
    patches: dict[str, Any] = {
        "unittest.result": lambda module: _patch_unittest_result(state, module),
        "_pytest.config": lambda module: _patch_pytest_config(state, module),
    }
    for name in list(patches):
        if name in sys.modules:
            patches.pop(name)(sys.modules[name])
    if patches:
        sys.meta_path.insert(0, _PatchOnImport(patches))
    _install_exit_watchers(state)
    atexit.register(_on_exit, state)
    os.register_at_fork(after_in_child=lambda: setattr(state, "pid", os.getpid()))
    if _script().endswith(".py"):
        _ensure_started(state)


try:  # noqa: SIM105  (see above)
    activate()
except Exception:
    pass
