"""The unittest half of the ledger hook: `TestResult` methods patched to record each outcome.

Imported by `matrix.ledger.hook` only once the process has imported `unittest.result`.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from matrix.ledger.hook import State, plain, record_test, relative


def _module_file(state: State, module: str) -> str:
    known = state.files.get(module)
    if known is not None:
        return known
    mod = sys.modules.get(module)
    path = getattr(mod, "__file__", None) if mod is not None else None
    rel = relative(state, path) if isinstance(path, str) else module.replace(".", "/") + ".py"
    state.files[module] = rel
    return rel


def _unittest_id(state: State, test: Any) -> tuple[str, str]:
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
            if plain(prefix) and len(prefix) <= 1000:
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


def patch_unittest_result(state: State, result_module: Any) -> None:
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
            if (
                fragment is not None
                and state.head is not None
                and state.started
                and len(method) <= 1000
                and method.isascii()
                and method.isidentifier()
            ):
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
