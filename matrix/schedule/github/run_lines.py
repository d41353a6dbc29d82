"""Which line of a workflow (or action) file each line of a `run:` script is written on; pure.

A `run:` value is a YAML scalar: a literal block (`|`, its lines kept as written, starting on the line after the
indicator), a folded block (`>`, lines joined by a space unless a blank or more-indented line stands between), or a
plain or quoted scalar (folded the same way, starting where the value starts). The loader tells where the value
starts and its style (`matrix.schedule.yamldoc.Marks`); the script's own lines are then found in the file in order,
so a command cites its own line (`pytest ...` on the second line of a block), not the block's first line.
"""

from __future__ import annotations

from collections.abc import Sequence

# How far past the last line found a folded script line is looked for (a block's blank lines and indented lines).
_WINDOW = 64


def script_lines(lines: Sequence[str], at: int, style: str, script: str) -> tuple[int, ...]:
    """For each line of `script` (the scalar's value as YAML gives it), the 1-based file line it starts on; `at` is
    the line the scalar starts on (a block's indicator line), `lines` the file's lines."""
    count = script.count("\n") + 1
    if style == "|":
        return tuple(min(at + i, max(len(lines), at)) for i in range(1, count + 1))
    first = at + 1 if style == ">" else at
    out: list[int] = []
    cursor = first  # the next file line a script line may start on
    for number, text in enumerate(script.split("\n")):
        wanted = text.strip()
        if number == 0 and style != ">":
            out.append(at)  # a plain or quoted scalar's first line is where the value starts
            cursor = at + 1
            continue
        found = _find(lines, cursor, wanted)
        out.append(found)
        cursor = found + 1 if wanted else found
    return tuple(out)


def _find(lines: Sequence[str], cursor: int, wanted: str) -> int:
    """The first file line at or after `cursor` whose text the script line starts with; `cursor` itself for a blank
    script line, or when no line within the window matches (an escape in a quoted scalar changes the text)."""
    if not wanted:
        return min(cursor, max(len(lines), 1))
    for number in range(cursor, min(len(lines), cursor + _WINDOW) + 1):
        written = lines[number - 1].strip().strip("'\"")
        if written and (wanted.startswith(written) or written.startswith(wanted)):
            return number
    return min(cursor, max(len(lines), 1))
