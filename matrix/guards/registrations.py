"""Read sglang CI registrations (`register_cuda_ci(...)` and siblings) from a syntax tree."""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import Any

from matrix.guards.model import Platform, Registration
from matrix.guards.names import dotted, straight_line
from matrix.guards.source import SourceText

# register_cuda_ci(est_time, suite=None, nightly=False, disabled=None, *, stage=None, runner_config=None)
POSITIONAL = ("est_time", "suite", "nightly", "disabled")
KEYWORDS = frozenset((*POSITIONAL, "stage", "runner_config"))
_REGISTER = re.compile(r"^register_([a-z0-9]+)_ci$")
_PLATFORM_ALIASES = {"rocm": Platform.AMD}


def platform_of(function: str) -> Platform | None:
    """The platform a registration function targets; None when the name is not one."""
    match = _REGISTER.match(function)
    if match is None:
        return None
    word = match.group(1)
    if word in _PLATFORM_ALIASES:
        return _PLATFORM_ALIASES[word]
    try:
        return Platform(word)
    except ValueError:
        return Platform.OTHER


def read_registrations(tree: ast.Module, text: str | SourceText) -> tuple[Registration, ...]:
    """Every module-level `register_*_ci(...)` statement, in file order."""
    source = text if isinstance(text, SourceText) else SourceText(text)
    out: list[Registration] = []
    for stmt in straight_line(tree.body):
        if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
            continue
        name = dotted(stmt.value.func)
        function = name.rpartition(".")[2] if name else ""
        platform = platform_of(function)
        if platform is not None:
            out.append(_registration(stmt.value, function, platform, source))
    return tuple(out)


def _registration(call: ast.Call, function: str, platform: Platform, source: SourceText) -> Registration:
    text = source.segment(call) or ast.unparse(call)
    base = Registration(function=function, platform=platform, line=call.lineno, source=text)
    values, problem = _arguments(call, function)
    if problem is None:
        problem = _check_types(values, function)
    if problem is not None:
        return replace(base, problem=problem)
    suite, stage, runner_config = values.get("suite"), values.get("stage"), values.get("runner_config")
    if stage is not None or runner_config is not None:
        if suite is not None:
            problem = f"{function}: give either suite= or stage=/runner_config=, not both"
        elif stage is None or runner_config is None:
            problem = f"{function}: stage= and runner_config= go together"
        else:
            suite = f"{stage}-test-{runner_config}"
    elif suite is None and values.get("disabled") is None:
        problem = f"{function}: no suite (give suite= or stage= and runner_config=)"
    if "est_time" not in values and problem is None:
        problem = f"{function}: est_time is missing"
    return replace(
        base,
        suite=suite,
        stage=stage,
        runner_config=runner_config,
        nightly=bool(values.get("nightly", False)),
        disabled=values.get("disabled"),
        est_time=values.get("est_time"),
        problem=problem,
    )


def _arguments(call: ast.Call, function: str) -> tuple[dict[str, Any], str | None]:
    values: dict[str, Any] = {}
    if len(call.args) > len(POSITIONAL):
        return values, f"{function}: too many positional arguments"
    pairs: list[tuple[str | None, ast.expr]] = list(zip(POSITIONAL, call.args, strict=False))
    pairs.extend((kw.arg, kw.value) for kw in call.keywords)
    for key, node in pairs:
        if key is None or isinstance(node, ast.Starred):
            return values, f"{function}: *args/**kwargs cannot be read statically"
        if key not in KEYWORDS:
            return values, f"{function}: unknown argument {key!r}"
        if key in values:
            return values, f"{function}: argument {key!r} given twice"
        if not isinstance(node, ast.Constant):
            return values, f"{function}: {key} must be a literal, got `{ast.unparse(node)}`"
        values[key] = node.value
    return values, None


def _check_types(values: dict[str, Any], function: str) -> str | None:
    # sglang's own collector accepts `suite=""` together with `disabled=` (a registration kept for the record,
    # e.g. register_npu_ci(est_time=..., suite="", nightly=True, disabled="...")), so only then may it be empty.
    if values.get("suite") == "" and isinstance(values.get("disabled"), str):
        values = {k: v for k, v in values.items() if k != "suite"}
    for key in ("suite", "stage", "runner_config"):
        if values.get(key) is not None and not (isinstance(values[key], str) and values[key]):
            return f"{function}: {key} must be a non-empty string, got {values[key]!r}"
    est = values.get("est_time")
    if est is not None and (isinstance(est, bool) or not isinstance(est, int | float)):
        return f"{function}: est_time must be a number, got {est!r}"
    if not isinstance(values.get("nightly", False), bool):
        return f"{function}: nightly must be True or False, got {values['nightly']!r}"
    if values.get("disabled") is not None and not isinstance(values["disabled"], str):
        return f"{function}: disabled must be a reason string or None, got {values['disabled']!r}"
    return None
