"""Install and remove the start-up hook: one `.pth` line in the active environment's site-packages."""

from __future__ import annotations

import os
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from matrix.core.atomic import write_text_atomic
from matrix.core.errors import OutputError

PTH_NAME = "specmatrix_ledger.pth"
# site.py executes a .pth line that starts with `import`. `os` is already imported by then, so with the variable
# unset this costs one dictionary lookup; with it set, a failure to load the hook is swallowed (the ledger command
# then reports the files whose processes left no record). The name sorts after `_*.pth` (editable installs put the
# checkout on sys.path from there), so `matrix` is importable when this line runs.
PTH_LINE = (
    'import os; exec("try:\\n import matrix.ledger.hook\\nexcept Exception:\\n pass") '
    'if os.environ.get("SPECMATRIX_LEDGER") else None\n'
)


@dataclass(frozen=True, kw_only=True)
class HookChange:
    path: Path
    changed: bool


def site_packages() -> Path:
    """The active environment's pure-Python site-packages (`sysconfig.get_paths()['purelib']`)."""
    return Path(sysconfig.get_paths()["purelib"])


def install_hook(target: Path | None = None) -> HookChange:
    """Write the hook line into `target` (default: the active site-packages); unchanged when it is already there."""
    path = (target or site_packages()) / PTH_NAME
    try:
        current = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        current = None
    if current == PTH_LINE:
        return HookChange(path=path, changed=False)
    if not path.parent.is_dir():
        raise OutputError(f"{path.parent}: no such site-packages directory")
    write_text_atomic(path, PTH_LINE)
    return HookChange(path=path, changed=True)


def uninstall_hook(target: Path | None = None) -> HookChange:
    """Remove the hook file; unchanged when it is not there."""
    path = (target or site_packages()) / PTH_NAME
    if not path.exists():
        return HookChange(path=path, changed=False)
    try:
        os.unlink(path)
    except OSError as exc:
        raise OutputError(f"{path}: cannot remove: {exc.strerror or exc}") from None
    return HookChange(path=path, changed=True)
