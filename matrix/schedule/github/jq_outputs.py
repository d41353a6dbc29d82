"""Step outputs a `run:` block computes with `jq` (flashinfer's PR Test builds its test matrix that way), read
without running the step; pure apart from the loader.

What is evaluated: `echo "NAME=VALUE" >> $GITHUB_OUTPUT` where VALUE is literal or a command substitution this
module can evaluate: `$(cat FILE)` of a file an earlier statement wrote (`{ ... } | jq -s ... > FILE`), `$(jq ...
FILE)` of a repository file. The statements producing JSON may be `jq -n [--arg k v]... PROGRAM` (run with the jq
library), `{ }` groups, pipelines into `jq`, `if` on a test (decided by known variables, else both ways with the
condition kept as an assumption), and `for` over literal words or `$(jq -r ... <<< "$VAR")`. Anything else makes
the output unknown, never guessed. jq programs that can run unbounded (`range`, `repeat`, recursion, `def`, string
repetition) are not run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from matrix.schedule.shell.conditions import truth
from matrix.schedule.shell.words import Variables, text, word

MAX_VALUES = 512  # JSON values one statement may print
MAX_TEXT = 256 * 1024  # characters of one output or file
MAX_PROGRAM = 4096
_UNBOUNDED = re.compile(
    r"\b(range|repeat|recurse|while|until|def|limit|foreach|reduce|inputs?|walk|env|combinations|getpath|paths|splits|ltrimstr|pow|getpath)\b|\.\.|\*|\$__loc__|\$ENV"
)
_OUTPUT = re.compile(r"^([A-Za-z_][\w-]*)=(.*)$", re.DOTALL)

Loader = Callable[[str], str | None]


@dataclass(frozen=True, kw_only=True)
class StepOutputs:
    """The outputs a step writes that could be read (name -> text), and the assumptions they rest on."""

    values: Mapping[str, str]
    assumptions: tuple[str, ...] = ()


@dataclass(kw_only=True)
class _Run:
    """One evaluation of a step: known variables, files written so far, outputs, assumptions. Mutable: one per step."""

    load: Loader
    known: Variables
    files: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)


def step_outputs(run: str, env: Mapping[str, str], load: Loader) -> StepOutputs:
    """The `$GITHUB_OUTPUT` values `run` computes statically, given the step's env (values with `${{` unknown)."""
    from matrix.schedule.shell.tree import parse

    state = _Run(load=load, known=Variables(scalars={k: (None if "${{" in v else v) for k, v in env.items()}))
    root = parse(run).root_node
    if root.has_error:
        return StepOutputs(values={})
    for node in root.named_children:
        _statement(node, state)
    return StepOutputs(values=dict(state.outputs), assumptions=tuple(dict.fromkeys(state.assumptions)))


def _statement(node: Any, state: _Run) -> None:
    if node.type != "redirected_statement":
        return
    body = node.child_by_field_name("body")
    for redirect in node.children_by_field_name("redirect"):
        target = redirect.child_by_field_name("destination")
        if body is None or target is None:
            continue
        where = word(target, state.known)
        operator = text(redirect.children[0]) if redirect.child_count else ""
        if "GITHUB_OUTPUT" in text(target) and operator == ">>":
            _echo_output(body, state)
        elif operator == ">" and "$" not in where:
            printed = _stdout(body, state, None)
            if printed is not None:
                state.files[where] = "".join(printed)[:MAX_TEXT]
            else:
                state.files.pop(where, None)


def _echo_output(body: Any, state: _Run) -> None:
    if body.type != "command" or text(body.child_by_field_name("name") or body) != "echo":
        return
    arguments = [c for c in body.named_children if c.type != "command_name"]
    if len(arguments) != 1:
        return
    value = _expanded(arguments[0], state)
    match = _OUTPUT.match(value) if value is not None else None
    if match:
        state.outputs[match.group(1)] = match.group(2)[:MAX_TEXT]


def _expanded(node: Any, state: _Run) -> str | None:
    """A word with its command substitutions evaluated; None when one cannot be."""
    if node.type == "command_substitution":
        inner = node.named_children
        printed = _stdout(inner[0], state, None) if len(inner) == 1 else None
        return None if printed is None else "".join(printed).rstrip("\n")
    if node.type in ("string", "concatenation"):
        parts: list[str] = []
        children = node.children[1:-1] if node.type == "string" else node.children
        for child in children:
            if child.type == "command_substitution":
                found = _expanded(child, state)
                if found is None:
                    return None
                parts.append(found)
            elif child.type == "string_content":
                parts.append(text(child))
            else:
                parts.append(word(child, state.known))
        result = "".join(parts)
        return None if "$" in result else result
    result = word(node, state.known)
    return None if "$" in result else result


def _stdout(node: Any, state: _Run, given: str | None) -> list[str] | None:
    """What a statement prints (lines of text), `given` on its standard input; None when it is not known."""
    kind = node.type
    if kind in ("compound_statement", "do_group"):
        out: list[str] = []
        for child in node.named_children:
            printed = _stdout(child, state, None)
            if printed is None:
                return None
            out.extend(printed)
        return out
    if kind == "pipeline":
        parts = list(node.named_children)
        flowing: str | None = given
        for part in parts:
            printed = _stdout(part, state, flowing)
            if printed is None:
                return None
            flowing = "".join(printed)
        return [flowing or ""]
    if kind == "if_statement":
        return _if(node, state)
    if kind == "for_statement":
        return _for(node, state)
    if kind == "command":
        return _command(node, state, given)
    return None


def _if(node: Any, state: _Run) -> list[str] | None:
    condition = node.child_by_field_name("condition")
    if condition is None or node.child_count == 0 or any(c.type in ("elif_clause", "else_clause") for c in node.children):
        return None
    decided = truth(condition, state.known)
    if decided.value is False:
        return []
    if decided.value is None:
        state.assumptions.append(f"the output assumes {decided.shown} holds (not known before the run)")
    body = [c for c in node.named_children if c != condition]
    out: list[str] = []
    for child in body:
        printed = _stdout(child, state, None)
        if printed is None:
            return None
        out.extend(printed)
    return out


def _for(node: Any, state: _Run) -> list[str] | None:
    variable, body = node.child_by_field_name("variable"), node.child_by_field_name("body")
    if variable is None or body is None:
        return None
    items: list[str] = []
    for value in node.children_by_field_name("value"):
        if value.type == "command_substitution":
            found = _expanded(value, state)
            if found is None:
                return None
            items.extend(found.split())
        else:
            found = word(value, state.known)
            if "$" in found:
                return None
            items.append(found)
    out: list[str] = []
    name = text(variable)
    for item in items[:MAX_VALUES]:
        state.known.scalars[name] = item
        printed = _stdout(body, state, None)
        if printed is None:
            return None
        out.extend(printed)
    state.known.scalars[name] = None
    return out


def _command(node: Any, state: _Run, given: str | None) -> list[str] | None:
    words: list[str] = []
    herestring: str | None = None
    for child in node.named_children:
        if child.type == "herestring_redirect":
            inner = child.named_children
            herestring = _expanded(inner[-1], state) if inner else None
            if herestring is None:
                return None
        elif child.type == "command_name":
            words.append(word(child.named_children[0], state.known) if child.named_child_count else text(child))
        elif child.type in ("file_redirect", "heredoc_redirect", "variable_assignment"):
            return None
        else:
            found = word(child, state.known)
            if "$" in found and child.type != "raw_string":  # a shell value not known; '$x' is jq's own
                return None
            words.append(found)
    if not words:
        return None
    if words[0] == "cat" and len(words) == 2:
        content = state.files.get(words[1])
        if content is None:
            content = state.load(words[1])
        return None if content is None else [content]
    if words[0] == "jq":
        return _jq(words[1:], state, herestring if herestring is not None else given)
    return None


def _jq(arguments: list[str], state: _Run, given: str | None) -> list[str] | None:
    """`jq [-n] [-c] [-r] [-s] [--arg k v] [--argjson k j] PROGRAM [FILE]` with the jq library."""
    import jq

    null_input = slurp = raw = False
    args: dict[str, Any] = {}
    positional: list[str] = []
    i = 0
    while i < len(arguments):
        option = arguments[i]
        if option in ("--arg", "--argjson") and i + 2 < len(arguments):
            try:
                args[arguments[i + 1]] = arguments[i + 2] if option == "--arg" else json.loads(arguments[i + 2])
            except ValueError:
                return None
            i += 3
            continue
        if option.startswith("-") and not option.startswith("--") and len(option) > 1:
            flags = set(option[1:])
            if not flags <= set("ncrsjM"):
                return None
            null_input |= "n" in flags
            slurp |= "s" in flags
            raw |= "r" in flags or "j" in flags
        elif option.startswith("--"):
            if option not in ("--compact-output", "--raw-output", "--null-input", "--slurp"):
                return None
            null_input |= option == "--null-input"
            slurp |= option == "--slurp"
            raw |= option == "--raw-output"
        else:
            positional.append(option)
        i += 1
    if not positional or len(positional[0]) > MAX_PROGRAM or _UNBOUNDED.search(positional[0]):
        return None
    program, files = positional[0], positional[1:]
    source = given
    if files:
        loaded = [state.files.get(f) or state.load(f) for f in files]
        if any(t is None for t in loaded):
            return None
        source = "".join(t or "" for t in loaded)
    try:
        compiled = jq.compile(program, args=args)
        if null_input:
            values = compiled.input_value(None).all()
        elif source is None:
            return None
        else:
            values = compiled.input_text(source[:MAX_TEXT], slurp=slurp).all()
    except ValueError:
        return None
    printed = [v if raw and isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in values[:MAX_VALUES]]
    return [f"{p}\n" for p in printed]


_STEP_OUTPUT = re.compile(r"^\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}$")


def job_outputs(job: Mapping[str, Any], load: Loader) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The job's `outputs:` (and its steps' `steps.ID.outputs.N`, keyed `ID.N`) that its `run:` steps compute
    with jq, each with the assumptions it rests on. A step env naming an earlier step's computed output gets it."""
    steps = job.get("steps")
    if not isinstance(steps, list):
        return {}
    computed: dict[str, tuple[str, tuple[str, ...]]] = {}
    for step in steps:
        if not isinstance(step, Mapping):
            continue
        run, step_id = step.get("run"), step.get("id")
        if not isinstance(run, str) or step_id is None or "GITHUB_OUTPUT" not in run or "jq" not in run:
            continue
        env_block = step.get("env")
        env: dict[str, str] = {}
        notes: list[str] = []
        for key, value in env_block.items() if isinstance(env_block, Mapping) else ():
            written = str(value)
            match = _STEP_OUTPUT.match(written.strip())
            if match and f"{match.group(1)}.{match.group(2)}" in computed:
                env[str(key)], earlier = computed[f"{match.group(1)}.{match.group(2)}"]
                notes.extend(earlier)
            else:
                env[str(key)] = written
        found = step_outputs(run, env, load)
        for name, value in found.values.items():
            computed[f"{step_id}.{name}"] = (value, (*notes, *found.assumptions))
    outputs = job.get("outputs")
    out = dict(computed)
    for key, value in outputs.items() if isinstance(outputs, Mapping) else ():
        match = _STEP_OUTPUT.match(str(value).strip())
        if match and f"{match.group(1)}.{match.group(2)}" in computed:
            out[str(key)] = computed[f"{match.group(1)}.{match.group(2)}"]
    return out
