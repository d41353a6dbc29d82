"""The shell reader's fast paths agree with the slow rules they stand in for: the regex split with shlex, and the
whole-script search for keyword lines with a line-by-line filter."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.schedule import shell
from matrix.schedule.shell import _shlex_split, _split, commands

SETTINGS = settings(deadline=None, derandomize=True, database=None, max_examples=300)
# Every character the two splitters treat differently, plus word characters and blanks shlex does not split on.
ALPHABET = [*"ab1_=;&|()'\"#\\ \t\r\n\x0c\xa0-$*.{}", "é", "❌"]


def shlex_words(line: str) -> list[str] | None:
    """The reference: shlex's own split, which the reader used before it had a fast path (and still uses for
    the lines the fast path leaves to it)."""
    return _shlex_split(line)


@pytest.mark.parametrize(
    "line",
    [
        "python3 run_suite.py --hw cuda --suite stage-a",
        "a&&b||c;d|e&f;;g|&h",
        ")&&(",
        "cd test && python3 run_suite.py",
        "echo a#b c",  # shlex reads a comment inside a word
        "echo 'a # b' \"c#d\" e # f",
        "bash -c \"cd x && python3 run_suite.py --suite 's'\"",
        "a '' \"\" b",
        "x 'unclosed",
        'x "unclosed # not a comment',
        "x # 'after a comment'",
        "a\tb\x0cc\xa0d",
        "IS_BLACKWELL=1 python3 run_suite.py --suite s",
        "echo \\\"escaped\\\" 'x'",
        "printf 'a\\nb'",
        "",
        "   ",
    ],
)
def test_the_regex_split_is_shlex(line):
    assert _split(line) == shlex_words(line)


@SETTINGS
@given(st.lists(st.sampled_from(ALPHABET), max_size=24).map("".join))
def test_the_regex_split_is_shlex_on_generated_lines(line):
    assert _split(line) == shlex_words(line)


def test_the_regex_split_is_shlex_on_many_seeded_lines():
    rng = random.Random(20261201)
    for _ in range(4000):
        line = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 16)))
        assert _split(line) == shlex_words(line), line


def reference_commands(script: str, working_dir: str, keywords: tuple[str, ...]) -> tuple[shell.Command, ...]:
    """The line filter as it was: every line of the joined script, kept when it holds a keyword or a `cd`."""
    out: list[shell.Command] = []
    state = [working_dir]
    for raw in re.sub(r"\\\r?\n", " ", script).splitlines():
        if raw.lstrip().startswith("#"):
            continue
        if not any(k in raw for k in keywords) and not re.search(r"(?:^|[\s;&|(])cd\s", raw):
            continue
        out.extend(shell._line_commands(raw, state, 0))
    return tuple(out)


LINES = [
    "python3 run_suite.py --hw cuda --suite a",
    "cd test",
    "cd  ",
    "abcd x",
    "echo run_suite.py # in a comment",
    "# python3 run_suite.py --suite commented",
    "  #cd elsewhere",
    "bash scripts/ci/run.sh",
    "pytest -q tests/x.py",
    "cd sub && python3 run_suite.py --suite b",
    "echo ❌ done",
    "python3 run_suite.py --suite c \\",
    "  --hw amd",
    "x\ry python3 run_suite.py --suite d",
    "form\x0cfeed cd /tmp",
    "",
]


@SETTINGS
@given(
    st.lists(st.sampled_from(LINES), max_size=12),
    st.sampled_from(["\n", "\r\n"]),
    st.sampled_from([("run_suite.py",), ("run_suite.py", ".sh"), ("pytest", "py.test"), ("cd",)]),
)
def test_searching_the_whole_script_finds_the_lines_the_line_filter_keeps(lines, newline, keywords):
    script = newline.join(lines)
    shell._commands.cache_clear()
    assert commands(script, ".", keywords) == reference_commands(script, ".", keywords)


def test_a_keyword_on_the_first_and_the_last_line_is_found():
    script = "python3 run_suite.py --suite first\necho middle\npython3 run_suite.py --suite last"
    words = [c.words for c in commands(script, ".", ("run_suite.py",))]
    assert words == [("python3", "run_suite.py", "--suite", "first"), ("python3", "run_suite.py", "--suite", "last")]
