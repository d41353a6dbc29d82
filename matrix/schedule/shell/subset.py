"""The part of bash the shell reader models, declared in one place; pure data.

A reviewer reads here what the reader claims to understand: the statements it walks (`STATEMENTS`), the builtins
and what each does to the state it tracks (variables, the environment, the folder, functions, shell options:
`BUILTINS`), and the options of `set` and `shopt` it follows (`SET_OPTIONS`, `SHOPT_OPTIONS`). Anything else is
*outside*: the command holding it is unread with the construct named (`Outside`), and a construct that may change
what later commands do (`eval`, `trap`, `set -k`, ...) makes every later command of interest unread too, so a test
only such a command runs is undetermined, never given a verdict. The rules are bash 5.2's (GNU Bash Reference
Manual, https://www.gnu.org/software/bash/manual/bash.html, "Shell Builtin Commands", "The Set Builtin", "The Shopt
Builtin", "Shell Expansions"); `tests/schedule/test_shell_oracle.py` checks the modelled part against bash itself.

Assumptions the reader makes inside the subset, stated once: every command succeeds (so `set -e` stops nothing and
`a || b` runs `b` only under a condition); a variable a command reads is set (`set -u` stops nothing); an external
program changes none of the shell's variables, folder or functions; a file `source`d from outside the checkout (a
virtualenv's `bin/activate`, a conda profile) defines no function a later command names and sets no variable a
later command's words read; an `alias` is never expanded (bash does not expand aliases in a script unless
`shopt -s expand_aliases`, which is outside).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class Outside(Exception):
    """A construct outside the modelled subset: what depends on it is unread, with the construct named."""

    def __init__(self, construct: str, *, later: bool | None = None) -> None:
        super().__init__(construct)
        self.construct = construct
        # Whether what follows depends on it too (a builtin that may change any state); None: when the statement
        # holding it changes the state.
        self.later = later


class Effect(StrEnum):
    """What a builtin does to the state the reader tracks."""

    NONE = "none"  # changes nothing the reader tracks
    FOLDER = "folder"  # cd, pushd, popd
    DECLARE = "declare"  # export, declare, typeset, local, readonly: assignments and attributes
    UNSET = "unset"
    SOURCE = "source"  # source, .
    RUN_TIME = "run-time"  # the names it is given become run-time values
    SET = "set"  # set: options and positional parameters
    SHOPT = "shopt"
    STOP = "stop"  # exit, return: the rest of the script (function) does not run
    EXEC = "exec"  # exec CMD: runs CMD, then nothing after it
    TRAP = "trap"
    WRAPPER = "wrapper"  # runs the command after its own options (env, command, builtin, time, nohup ...)
    OUTSIDE = "outside"  # may change what later commands do in ways the reader does not follow


@dataclass(frozen=True, kw_only=True)
class Builtin:
    """One builtin (or wrapper program) the reader knows: its effect and how it is read."""

    effect: Effect
    reading: str


BUILTINS: Mapping[str, Builtin] = {
    "cd": Builtin(effect=Effect.FOLDER, reading="moves later commands to its folder (a run-time folder is unknown)"),
    "pushd": Builtin(effect=Effect.FOLDER, reading="like cd, keeping the folder it leaves on a stack"),
    "popd": Builtin(effect=Effect.FOLDER, reading="returns to the folder pushd left"),
    "export": Builtin(
        effect=Effect.DECLARE,
        reading="exports its names (literal or run-time values); `export -n` takes them out of the environment",
    ),
    "declare": Builtin(
        effect=Effect.DECLARE,
        reading="assignments; `-x` exports, `+x` un-exports, `-a` arrays; `-i`, `-l`, `-u` values are run-time; "
        "`-n` (a name reference) and `-A` are outside",
    ),
    "typeset": Builtin(effect=Effect.DECLARE, reading="as declare"),
    "local": Builtin(effect=Effect.DECLARE, reading="as declare, the names restored when the function returns"),
    "readonly": Builtin(effect=Effect.DECLARE, reading="an assignment"),
    "unset": Builtin(
        effect=Effect.UNSET,
        reading="removes variables from the shell and the environment (`-v`, the default); `-f` forgets a function",
    ),
    "source": Builtin(
        effect=Effect.SOURCE,
        reading="reads a file of the checkout at a literal path into the script (its functions and variables stay); "
        "any other file is not read (see the assumptions above)",
    ),
    ".": Builtin(effect=Effect.SOURCE, reading="as source"),
    "read": Builtin(effect=Effect.RUN_TIME, reading="the names it reads into become run-time values"),
    "mapfile": Builtin(effect=Effect.RUN_TIME, reading="its array becomes a run-time value"),
    "readarray": Builtin(effect=Effect.RUN_TIME, reading="as mapfile"),
    "printf": Builtin(effect=Effect.RUN_TIME, reading="`printf -v NAME` makes NAME a run-time value; otherwise prints"),
    "getopts": Builtin(effect=Effect.RUN_TIME, reading="its name and OPTIND/OPTARG become run-time values"),
    "let": Builtin(effect=Effect.RUN_TIME, reading="the names it assigns become run-time values"),
    "shift": Builtin(effect=Effect.SET, reading="the positional parameters become run-time values"),
    "set": Builtin(effect=Effect.SET, reading="the options of SET_OPTIONS; `set -- ...` sets the positional parameters"),
    "shopt": Builtin(effect=Effect.SHOPT, reading="the options of SHOPT_OPTIONS"),
    "exit": Builtin(
        effect=Effect.STOP,
        reading="ends the script (on a branch known only at run time: later commands run only if it was not taken); "
        "`exit N` with a literal N other than 0 fails the step, a path the reading excludes (every command succeeds)",
    ),
    "return": Builtin(effect=Effect.STOP, reading="ends the function (or the sourced file)"),
    "exec": Builtin(
        effect=Effect.EXEC,
        reading="`exec CMD` runs CMD and ends the script; `exec` with redirections only changes nothing tracked",
    ),
    "eval": Builtin(effect=Effect.OUTSIDE, reading="runs text as shell code"),
    "trap": Builtin(
        effect=Effect.TRAP,
        reading="an EXIT, ERR or signal action runs after the commands read (one holding a command of interest is "
        "unread); a DEBUG or RETURN action runs between commands: outside",
    ),
    "enable": Builtin(effect=Effect.OUTSIDE, reading="turns builtins on or off"),
    "coproc": Builtin(effect=Effect.OUTSIDE, reading="runs a command beside the script"),
    "select": Builtin(effect=Effect.OUTSIDE, reading="reads a choice from the terminal"),
    # Builtins and programs that change nothing the reader tracks.
    **{
        name: Builtin(effect=Effect.NONE, reading="prints, tests or waits: changes nothing tracked")
        for name in (
            ":",
            "true",
            "false",
            "echo",
            "test",
            "[",
            "[[",
            "wait",
            "sleep",
            "type",
            "hash",
            "ulimit",
            "umask",
            "alias",
            "unalias",
            "dirs",
            "jobs",
            "disown",
            "kill",
            "times",
            "help",
            "caller",
            "compgen",
            "complete",
            "history",
            "bind",
            "logout",
            "fc",
            "suspend",
        )
    },
    # Wrappers: the command after their own options runs (`shell.commands.unwrap` takes them off).
    **{
        name: Builtin(
            effect=Effect.WRAPPER,
            reading="runs the command after its options; `env` also sets (`NAME=V`), "
            "removes (`-u NAME`) and clears (`-i`) the command's environment, and `-C DIR` is its folder",
        )
        for name in (
            "env",
            "command",
            "builtin",
            "time",
            "nohup",
            "nice",
            "stdbuf",
            "ionice",
            "chronic",
            "unbuffer",
            "timeout",
            "sudo",
        )
    },
    "sudo": Builtin(
        effect=Effect.WRAPPER,
        reading="runs the command after its options; without `-E`/`--preserve-env` the runner's sudoers policy resets "
        "its environment (not read): outside, unless the command installs packages (apt-get, pip, conda)",
    ),
}

# `set` options (single letters and `-o NAME`): read as below; any other option is outside.
SET_OPTIONS: Mapping[str, str] = {
    "e": "errexit: every command is read as succeeding, so it stops nothing",
    "errexit": "as -e",
    "u": "nounset: every variable a command reads is read as set",
    "nounset": "as -u",
    "x": "xtrace: prints commands",
    "xtrace": "as -x",
    "v": "verbose: prints input lines",
    "verbose": "as -v",
    "pipefail": "a pipeline's status: every command is read as succeeding",
    "E": "errtrace: ERR traps (trap is outside)",
    "errtrace": "as -E",
    "T": "functrace: DEBUG traps (trap is outside)",
    "functrace": "as -T",
    "h": "hashall: remembers program paths",
    "hashall": "as -h",
    "C": "noclobber: redirections only",
    "noclobber": "as -C",
    "B": "braceexpand (on by default): brace expansion itself is outside",
    "braceexpand": "as -B",
    "a": "allexport: every variable assigned after it is exported",
    "allexport": "as -a",
    "f": "noglob: pathname patterns stay as written",
    "noglob": "as -f",
}

# `shopt -s/-u` options read; any other is outside.
SHOPT_OPTIONS: Mapping[str, str] = {
    "globstar": "`**` matches any folders, zero or more",
    "nullglob": "a pattern that matches nothing expands to nothing",
    "dotglob": "patterns match names starting with a dot",
    "inherit_errexit": "command substitutions keep -e: every command is read as succeeding",
    "checkwinsize": "terminal size only",
    "histappend": "history only",
    "cmdhist": "history only",
    "extglob": "extended patterns: a pattern using one (`+(...)`, `@(...)`, `!(...)`) is outside",
}

# Statements (tree-sitter-bash node types) the walk reads, and how; any other statement is outside.
STATEMENTS: Mapping[str, str] = {
    "program": "its statements in order; a syntax error stops bash there, so the rest is unread",
    "command": "a simple command: words expanded (known variables, `$@`, arrays, pathname patterns), prefix "
    "assignments for its environment only, wrappers taken off, builtins as BUILTINS says, functions inlined with "
    "their arguments, `bash -c`/`sh -c` read as a script of their own",
    "variable_assignment": "an assignment: literal and known values are kept, `$(...)` and unknown ones are run-time",
    "variable_assignments": "several assignments",
    "declaration_command": "export, declare, typeset, local, readonly (see BUILTINS)",
    "unset_command": "unset (see BUILTINS)",
    "compound_statement": "`{ ...; }` in the same shell; `(( ... ))` arithmetic makes the names it assigns run-time",
    "do_group": "a loop's body",
    "subshell": "`( ... )`: its changes stay inside",
    "pipeline": "each part in a subshell of its own: their changes stay inside",
    "redirected_statement": "the statement; its redirections and here-documents change nothing tracked",
    "negated_command": "the command",
    "function_definition": "defined, read where it is called (variables it sets are global, `local` ones not)",
    "list": "`a && b`, `a || b`: a test on the way decides the rest when its variables are known, else conditional",
    "if_statement": "the branch known variables decide, else each branch under its condition",
    "case_statement": "the item a known subject matches, else each under its pattern; `;&` and `;;&` are outside",
    "for_statement": "a literal list of up to 16 words unrolled, else the body once, conditional; `select` is outside",
    "c_style_for_statement": "the body once, conditional",
    "while_statement": "the body once, conditional (also `until`)",
    "test_command": "`[ ... ]`, `[[ ... ]]` alone: changes nothing",
    "comment": "nothing",
}


def builtin(name: str) -> Builtin | None:
    """The declared reading of a builtin or wrapper, None for any other program (an external command)."""
    return BUILTINS.get(name)
