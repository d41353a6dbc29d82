"""Turn what pytest put in a report's `longrepr` into one short line; duck-typed so xdist's copies work too."""

from __future__ import annotations

import re

MESSAGE_LIMIT = 500
_SURROGATE = re.compile("[\ud800-\udfff]")


def _clip(text: str) -> str:
    # A lone surrogate (`pytest.skip("bad \udcff")`) cannot be encoded anywhere this text goes (terminal, JSON
    # file, XML): it becomes U+FFFD here, once, so no writer downstream can fail on it.
    text = _SURROGATE.sub("\ufffd", text.strip())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def skip_text(longrepr: object) -> str | None:
    """A skip's reason without pytest's `Skipped: ` prefix."""
    if isinstance(longrepr, tuple | list) and len(longrepr) == 3:
        return _clip(str(longrepr[2]).removeprefix("Skipped: "))
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return _clip(str(crash.message).removeprefix("Skipped: "))
    return _clip(str(longrepr)) if longrepr else None


def failure_text(longrepr: object) -> str | None:
    """The crash line of a failure (`AssertionError: ...`), or the text xdist put there for a dead worker."""
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return _clip(str(crash.message))
    if isinstance(longrepr, tuple | list) and len(longrepr) == 3:
        return _clip(str(longrepr[2]))
    if not longrepr:
        return None
    lines = [ln for ln in str(longrepr).splitlines() if ln.strip()]
    # A collection error is a whole traceback as text; its `E   ` lines say what went wrong.
    errors = [ln[1:].strip() for ln in lines if ln.startswith("E ")]
    return _clip(errors[-1] if errors else lines[0] if lines else "")
