"""matrix/data/distribution_modules.toml from wheels: which subpackages of a package each exact release holds
(transformers' `transformers/models/<name>`), so a guard that tries `import transformers.models.mllama` is decided
on a job that pins that release.

    python ci/distribution_modules.py transformers transformers.models VERSION... [--wheels DIR] > table.toml
    python ci/distribution_modules.py transformers transformers.models 4.52.0 --verify

`--verify` checks the table against Python itself: each release is installed (with its dependencies, from the
package index) into a new virtual environment, every subpackage the table names is imported there, and each answer
the table gives for that release is compared with the import's.

Each wheel is downloaded with `pip download NAME==VERSION --no-deps --only-binary :all:` (into `--wheels DIR`, kept
there; default a temporary folder) and read with zipfile: a subpackage is a folder under the package with an
`__init__.py`. It counts as importable only where that `__init__.py` hands its names to a `_LazyModule` (importing
it imports none of the folder's modules, so nothing optional it may need); a subpackage whose `__init__.py` does
more is listed under `eager` for that release, and a guard on it stays unknown. The table gives, per subpackage, the
spans of listed releases holding it (`["4.45.0", "5.25.0"]`: every listed release from the first to the last).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.version import Version


def subpackages(wheel: Path, package: str) -> tuple[set[str], set[str]]:
    """The subpackages directly under `package` in the wheel: (lazy ones, eager ones)."""
    folder = package.replace(".", "/") + "/"
    shape = re.compile(re.escape(folder) + r"([A-Za-z_][A-Za-z0-9_]*)/__init__\.py$")
    lazy: set[str] = set()
    eager: set[str] = set()
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            found = shape.match(name)
            if found is None:
                continue
            text = archive.read(name).decode("utf-8", "replace")
            (lazy if "_LazyModule(" in text else eager).add(found.group(1))
    return lazy, eager


def download(name: str, version: str, into: Path) -> Path:
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q"]
    subprocess.run(
        [*pip, "-d", str(into), f"{name}=={version}"],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    stem = re.sub(r"[-_.]+", "_", name).lower()
    wheels = [w for w in into.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")]
    if len(wheels) != 1:
        raise SystemExit(f"{name}=={version}: expected one wheel in {into}, found {len(wheels)}")
    return wheels[0]


def spans(present: list[bool], versions: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    start: int | None = None
    for index, here in enumerate([*present, False]):
        if here and start is None:
            start = index
        elif not here and start is not None:
            out.append([versions[start], versions[index - 1]])
            start = None
    return out


def table(name: str, package: str, versions: list[str], wheels: Path) -> str:
    versions = sorted(set(versions), key=Version)
    read: dict[str, tuple[set[str], set[str]]] = {}
    for version in versions:
        read[version] = subpackages(download(name, version, wheels), package)
        print(f"{name} {version}: {len(read[version][0])} lazy, {len(read[version][1])} eager", file=sys.stderr)
    everything = sorted(set().union(*(lazy | eager for lazy, eager in read.values())))
    lines = [
        "[[distribution]]",
        f"name = {name!r}",
        f"package = {package!r}",
        "versions = [",
        *(f"  {', '.join(repr(v) for v in versions[i : i + 10])}," for i in range(0, len(versions), 10)),
        "]",
        f"source = {_source(name, package, versions)!r}",
        "",
        f"[distribution.modules]  # subpackage of {package} -> spans of the listed releases that hold it (lazy)",
    ]
    for module in everything:
        held = spans([module in read[v][0] for v in versions], versions)
        if held:
            lines.append(f"{module} = {held!r}".replace("'", '"'))
    lines += ["", "[distribution.eager]  # release -> subpackages whose __init__.py imports more than a _LazyModule"]
    for version in versions:
        if read[version][1]:
            lines.append(f"{version!r} = {sorted(read[version][1])!r}".replace("'", '"'))
    return "\n".join(lines) + "\n"


def _source(name: str, package: str, versions: list[str]) -> str:
    return (
        f"the {name} wheels on PyPI ({name}-VERSION-py3-none-any.whl), {versions[0]} to {versions[-1]}: the folders "
        f"under {package.replace('.', '/')}/ with an __init__.py; read by ci/distribution_modules.py"
    )


_IMPORT_EACH = """
import importlib, json, sys
out = {}
for name in sys.argv[2:]:
    try:
        importlib.import_module(sys.argv[1] + "." + name)
        out[name] = True
    except ImportError:
        out[name] = False
print(json.dumps(out))
"""


def verify(name: str, version: str) -> int:
    """Install `name==version` into a new virtual environment and import every subpackage the table names: the
    table's answer for that release against Python's. Prints each disagreement; exit 1 when there is one."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from matrix.schedule.environment.releases import release_holds, release_table

    row = release_table().get(name)
    if row is None:
        raise SystemExit(f"{name}: not in matrix/data/distribution_modules.toml")
    with tempfile.TemporaryDirectory(prefix="specmatrix-verify-") as scratch:
        venv = Path(scratch) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        subprocess.run([python, "-m", "pip", "install", "-q", f"{name}=={version}"], check=True)
        names = sorted(row.spans)
        found = subprocess.run([python, "-c", _IMPORT_EACH, row.package, *names], capture_output=True, text=True, check=True)
        imported: dict[str, bool] = json.loads(found.stdout.strip().splitlines()[-1])
    wrong = 0
    for module in names:
        said = release_holds(name, version, f"{row.package}.{module}")
        if said is not None and said[0] != imported[module]:
            wrong += 1
            print(f"{row.package}.{module}: the table says {said[0]}, importing it says {imported[module]}")
    answers = [release_holds(name, version, f"{row.package}.{m}") for m in names]
    there = sum(1 for a in answers if a is not None and a[0])
    absent = sum(1 for a in answers if a is not None and not a[0])
    print(f"{name} {version}: the table answers {there} there and {absent} absent; {wrong} of them wrongly")
    return 1 if wrong else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("package")
    parser.add_argument("versions", nargs="+")
    parser.add_argument("--wheels", type=Path, default=None, help="where the wheels are kept (default: a temporary folder)")
    parser.add_argument(
        "--verify",
        action="store_true",
        help="install each VERSION into a new virtual environment and import every subpackage the table names",
    )
    args = parser.parse_args(argv)
    if args.verify:
        return max(verify(args.name, v) for v in args.versions)
    if args.wheels is not None:
        args.wheels.mkdir(parents=True, exist_ok=True)
        sys.stdout.write(table(args.name, args.package, args.versions, args.wheels))
        return 0
    with tempfile.TemporaryDirectory(prefix="specmatrix-wheels-") as scratch:
        sys.stdout.write(table(args.name, args.package, args.versions, Path(scratch)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
