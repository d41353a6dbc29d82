"""Rows for matrix/data/distributions.toml read from wheels: each wheel's RECORD (its top-level import names) and
METADATA (`Requires-Dist`), in the table's format with the source named.

    python ci/distribution_rows.py WHEEL... > rows.toml

A name's imports are the top-level modules and packages its RECORD lists (`pkg/__init__.py`, `mod.py`, an extension
`mod.cpython-*.so`); a folder without `__init__.py` is a namespace package, listed by its subpackages (`nvidia.cublas`).
`requires` holds every Requires-Dist whose marker names no extra (so a marker on the Python version or platform
counts as possibly required), `depends` those without any marker; `submodules = false`, as a RECORD read at one
version says nothing of another version's submodules. A wheel whose `.pth` file puts a folder on sys.path (a line
that is not an `import` statement, as site.py reads it) is refused with one line on stderr, and no row is written.
"""

from __future__ import annotations

import re
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def row(wheel: Path) -> str | None:
    """The TOML row of one wheel, or None (with why on stderr) where its imports cannot be read from RECORD."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next((n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None)
        record = next((n for n in names if n.count("/") == 1 and n.endswith(".dist-info/RECORD")), None)
        if info is None or record is None:
            print(f"{wheel.name}: no METADATA or RECORD", file=sys.stderr)
            return None
        metadata = Parser().parsestr(archive.read(info).decode("utf-8", "replace"))
        listed = [line.split(",", 1)[0] for line in archive.read(record).decode("utf-8", "replace").splitlines() if line]
        paths = [p for p in listed if p.endswith(".pth") and "/" not in p]
        # A .pth line that is not an `import` statement puts a folder on sys.path (site.py, addpackage): what that
        # folder holds is importable too, and RECORD does not say so.
        adds = [p for p in paths if any(_adds_folder(line) for line in archive.read(p).decode("utf-8", "replace").splitlines())]
    if adds:
        print(f"{wheel.name}: {adds[0]} puts a folder on sys.path; its imports are not only what RECORD lists", file=sys.stderr)
        return None
    imports = _imports(listed)
    requires: list[str] = []
    depends: list[str] = []
    for line in metadata.get_all("Requires-Dist") or []:
        requirement, _, marker = line.partition(";")
        found = _NAME.match(requirement)
        if found is None or "extra" in marker:
            continue
        name = normalized(found.group(1))
        if name not in requires:
            requires.append(name)
        if not marker.strip() and name not in depends:
            depends.append(name)
    name, version = metadata["Name"], metadata["Version"]
    shown = ", ".join(imports[:4]) + (" ..." if len(imports) > 4 else "")
    source = f"{name} {version} wheel ({wheel.name}): RECORD ({shown or 'no module'}); METADATA Requires-Dist"
    return "\n".join(
        [
            "[[distribution]]",
            f"name = {normalized(name)!r}".replace("'", '"'),
            f"imports = {_list(imports)}",
            f"requires = {_list(requires)}",
            f"depends = {_list(depends)}",
            "submodules = false",
            f"source = {_quoted(source)}",
            "",
        ]
    )


def _adds_folder(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("#") and not text.startswith(("import ", "import\t"))


def _imports(listed: list[str]) -> list[str]:
    tops: dict[str, set[str]] = {}
    for path in listed:
        first, sep, rest = path.partition("/")
        if first.endswith((".dist-info", ".data")) or first.startswith("__pycache__"):
            continue
        if not sep:
            module = first.partition(".")[0]
            if first.endswith((".py", ".so", ".pyd")) and module.isidentifier():
                tops.setdefault(module, set()).add("")
            continue
        tops.setdefault(first, set()).add(rest)
    out: list[str] = []
    for top, inside in sorted(tops.items()):
        if not top.isidentifier():
            continue
        if "" in inside or "__init__.py" in inside or any(r.startswith("__init__.") for r in inside):
            out.append(top)
            continue
        # A namespace package: its subpackages and modules are what it provides.
        subs = {r.partition("/")[0].partition(".")[0] for r in inside if r and not r.startswith("__pycache__")}
        out.extend(f"{top}.{s}" for s in sorted(subs) if s.isidentifier())
    return out


def _list(items: list[str]) -> str:
    return "[" + ", ".join(_quoted(i) for i in items) + "]"


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python ci/distribution_rows.py WHEEL...", file=sys.stderr)
        return 2
    for path in argv:
        try:
            found = row(Path(path))
        except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return 2
        if found is not None:
            print(found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
