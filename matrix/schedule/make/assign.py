"""Variable assignments as GNU make 4.3's `do_variable_definition` makes them: every flavour, `override`, `export`,
the command line's precedence, target-specific variables (`read.c` record_target_var), `undefine` and
`export`/`unexport` of names; pure.
"""

from __future__ import annotations

from dataclasses import replace

from matrix.schedule.make.database import Database
from matrix.schedule.make.expand import Expander
from matrix.schedule.make.variables import Flavor, MakeUnread, Scope, Source, Variable, is_known, opaque, outranks, plain

SIMPLE_OPERATORS = (":=", "::=")  # expanded once, when assigned


def assign(
    db: Database,
    expander: Expander,
    where: str,
    *,
    name: str,
    operator: str,
    value: str,
    modifiers: tuple[str, ...],
    into: dict[str, Variable] | None = None,
) -> None:
    """One assignment (`do_variable_definition`): into the global set, or a target's own set with `into`."""
    table = db.variables if into is None else into
    source = Source.OVERRIDE if "override" in modifiers else Source.FILE
    if into is not None:
        expander = expander.using(Scope(globals=db.variables, layers=(into,)))
    existing = table.get(name)
    if name == ".RECIPEPREFIX" or (name == ".SHELLFLAGS" and value.strip() not in ("-c", "-ec", "-e -c", "-euc")):
        raise MakeUnread(f"{where}: setting {name} is outside the modelled subset")
    if name == "SHELL" and value.strip() not in ("/bin/sh", "/bin/bash", "/usr/bin/bash", "/usr/bin/env bash", "bash", "sh"):
        raise MakeUnread(f"{where}: SHELL = {value.strip()[:40]} is outside the modelled subset")
    if name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "VPATH", "GPATH", ".LIBPATTERNS"):
        raise MakeUnread(f"{where}: setting {name} is outside the modelled subset")
    if existing is not None and outranks(existing.source, source):
        if "export" in modifiers:  # read.c: the export mark goes on the variable whose value stays
            table[name] = replace(existing, exported=True)
        return
    exported = existing.exported if existing is not None else None
    if "export" in modifiers:
        exported = True
    if operator == "?=":
        found = expander.scope.find(name)
        if found is not None:
            if into is not None and found[1] == len(expander.scope.layers):
                # GNU make 4.3 (read.c record_target_var, checked against make): a target's `?=` of a variable
                # set globally resets that variable's export mark, for every target: a name of make's
                # environment is then not exported, one from the command line still is, until an `export`.
                mark = False if name in db.environment else None
                db.variables[name] = replace(found[0], exported=mark)
            if "export" in modifiers:  # the modifier marks the variable even when `?=` assigns nothing
                owner = db.variables if found[1] == len(expander.scope.layers) else table
                owner[name] = replace(owner[name], exported=True)
            return
        new = Variable(value=value, flavor=Flavor.RECURSIVE, source=source, exported=exported)
    elif operator in SIMPLE_OPERATORS:
        new = Variable(value=expander.expand(value), flavor=Flavor.SIMPLE, source=source, exported=exported)
    elif operator == "!=":
        new = Variable(
            value=opaque(f"$({plain(expander.expand(value))})"), flavor=Flavor.SIMPLE, source=source, exported=exported
        )
    elif operator == "+=":
        if existing is None:
            new = Variable(value=value, flavor=Flavor.RECURSIVE, source=source, exported=exported, append=into is not None)
        else:
            added = value if existing.flavor is Flavor.RECURSIVE else expander.expand(value)
            if not added:
                return  # appending nothing leaves the value as it is (no blank added)
            joined = f"{existing.value} {added}" if existing.value else added
            new = Variable(value=joined, flavor=existing.flavor, source=source, exported=exported, append=existing.append)
    else:
        new = Variable(value=value, flavor=Flavor.RECURSIVE, source=source, exported=exported)
    if into is not None and source is Source.FILE:
        outer = db.variables.get(name)
        if outer is not None and outer.source is Source.COMMAND_LINE:  # read.c record_target_var
            new = Variable(value=outer.value, flavor=outer.flavor, source=outer.source, exported=new.exported)
    table[name] = new


def undefine(db: Database, expander: Expander, rest: str, modifiers: tuple[str, ...]) -> None:
    """`undefine NAME...`: gone, unless the variable's origin outranks the directive's."""
    for name in expander.expand(rest).split():
        existing = db.variables.get(name)
        source = Source.OVERRIDE if "override" in modifiers else Source.FILE
        if existing is not None and not outranks(existing.source, source):
            del db.variables[name]


def export_names(db: Database, expander: Expander, where: str, modifiers: tuple[str, ...], rest: str) -> None:
    """`export NAME...` / `unexport NAME...` / a bare `export`; other modifiers without an assignment stop make."""
    if set(modifiers) - {"export", "unexport"} or len(modifiers) != 1:
        raise MakeUnread(f"{where}: '{' '.join(modifiers)}' without an assignment is outside the modelled subset")
    names = expander.expand(rest).split()
    if not is_known(" ".join(names)):
        raise MakeUnread(f"{where}: {modifiers[0]} of names known only at run time")
    if not names:
        if modifiers[0] == "unexport":
            raise MakeUnread(f"{where}: a bare 'unexport' is outside the modelled subset")
        db.export_all = True
        return
    for name in names:
        existing = db.variables.get(name)
        if existing is None:  # read.c: an exported name not yet defined is defined empty (simple), from the file
            existing = Variable(value="", flavor=Flavor.SIMPLE, source=Source.FILE)
        db.variables[name] = Variable(
            value=existing.value,
            flavor=existing.flavor,
            source=existing.source,
            exported=modifiers[0] == "export",
            append=existing.append,
        )
