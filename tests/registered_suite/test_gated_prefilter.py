"""The gated-assertion reader's cheap test of a file's text agrees with the line pattern it stands for."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from matrix.registered_suite.gated import _gates

# The definition: a line that starts (after blanks) with `if` or `elif` and names the CI environment later on it.
PATTERN = re.compile(r"^[ \t]*(?:el)?if\b[^\n]*\b(?:is_in_ci|is_in_amd_ci|environ|getenv|get_bool_env_var)\b", re.MULTILINE)

PIECES = st.sampled_from(
    [
        "if ",
        "elif ",
        "if_",
        "    ",
        "\t",
        "\n",
        "x = ",
        "is_in_ci",
        "is_in_ci_x",
        "environ",
        "os.environ",
        "xenviron",
        "_getenv",
        "getenv",
        "get_bool_env_var",
        "is_in_amd_ci",
        "(",
        ")",
        ":",
        "#",
        "assert x",
        "notif ",
        "gif ",
    ]
)


@given(st.lists(PIECES, max_size=30).map("".join))
def test_the_prefilter_is_the_line_pattern(text: str) -> None:
    assert _gates(text) == (PATTERN.search(text) is not None)


def test_examples() -> None:
    assert _gates("def t():\n    if is_in_ci():\n        assert x\n")
    assert _gates("x = 1\nelif os.environ.get('A'):\n")
    assert not _gates("x = is_in_ci()\nif x:\n    assert y\n")
    assert not _gates("if_ready = getenv('A')\n")
    assert not _gates("if xenviron or self._getenv:\n")  # a name inside a longer word is not the name
    assert not _gates("if ready:\n    y = is_in_ci_now\n")
