"""Properties of reading the scripts a step runs, on generated scripts that call each other (cycles included),
branch on variables no step sets, build arrays, hold comments and junk: the reader never raises, opens no more
files than its budget, never takes a comment for a command, and drops nothing silently (a pytest line of a
script it read is an entry, or something is listed as unread)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.schedule.commands.pytest_command import MAX_SCRIPTS, PytestCommandReader, read_script
from matrix.schedule.model import Origin, PytestSelection, StepContext

ORIGIN = Origin(file=".github/workflows/ci.yml", line=3, job="t")
READERS = (PytestCommandReader(),)
NAMES = [f"scripts/s{i}.sh" for i in range(6)]

# Each fragment is a format string: {tag} becomes a test folder unique to the fragment, {call} another script.
RUNS = [
    "pytest tests/{tag}",
    'if [ "$UNSET_{tag}" = 1 ]; then\n  pytest tests/{tag}\nfi',
    'case "$ARCH_{tag}" in\n  x*) python -m pytest tests/{tag} ;;\nesac',
    'ARGS_{tag}=(-m pytest tests/{tag})\npython "${{ARGS_{tag}[@]}}"',
    "coverage run -m pytest tests/{tag} || exit 1",
    'run_{tag}() {{ pytest "$@"; }}\nrun_{tag} tests/{tag}',
]
OTHERS = ["bash {call}", "source {call}", "# pytest tests/commented", "echo done", "cd sub && cd ..", "set -euo pipefail"]
JUNK = st.text(alphabet=list("ab$(){}[]'\"`;&|<>#\\ \n=-"), max_size=12)


@st.composite
def scripts(draw: st.DrawFn) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Scripts by path, and the test folders each one runs (none claimed for a script with junk in it: a junk quote
    can make the lines after it one word, which bash does not run either)."""
    texts: dict[str, str] = {}
    tags: dict[str, set[str]] = {}
    counter = 0
    for name in NAMES:
        lines: list[str] = []
        tags[name] = set()
        junk = False
        for _ in range(draw(st.integers(0, 6))):
            kind = draw(st.sampled_from(["run", "other", "junk"]))
            if kind == "run":
                counter += 1
                tag = f"t{counter}"
                tags[name].add(f"tests/{tag}")
                lines.append(draw(st.sampled_from(RUNS)).format(tag=tag))
            elif kind == "other":
                lines.append(draw(st.sampled_from(OTHERS)).format(call=draw(st.sampled_from(NAMES))))
            else:
                lines.append(draw(JUNK))
                junk = True
        if junk:
            tags[name] = set()
        texts[name] = "\n".join(lines) + "\n"
    return texts, tags


@settings(deadline=None)
@given(scripts())
def test_followed_scripts_are_read_bounded_and_nothing_is_dropped_silently(
    drawn: tuple[dict[str, str], dict[str, set[str]]],
) -> None:
    texts, tags = drawn
    opened: list[str] = []

    def load(path: str) -> str | None:
        opened.append(path)
        return texts.get(path)

    context = StepContext(working_dir=".", env={}, origin=ORIGIN)
    result = read_script(NAMES[0], load, READERS, context)
    assert len(opened) <= MAX_SCRIPTS
    selected = {p for s, _ in result.selections if isinstance(s, PytestSelection) for p in s.paths}
    assert "tests/commented" not in selected
    expected = set().union(*(tags[p] for p in set(opened)))
    if not result.unread:
        assert expected <= selected


def test_the_property_sees_a_dropped_line() -> None:
    """The property's own check turns red on a reader that drops a branch: here, one that reads nothing."""
    texts = {NAMES[0]: 'if [ "$UNSET" = 1 ]; then\n  pytest tests/t1\nfi\n'}
    context = StepContext(working_dir=".", env={}, origin=ORIGIN)
    result = read_script(NAMES[0], texts.get, READERS, context)
    assert result.unread == () and {p for s, _ in result.selections for p in s.paths} == {"tests/t1"}  # type: ignore[union-attr]
    dropped = read_script(NAMES[0], texts.get, (), context)
    assert dropped.unread == () and dropped.selections == ()  # what the property would flag: expected, not selected
