"""Which file line each line of a `run:` value is written on, checked against PyYAML itself: literal and folded
blocks, plain and quoted scalars, blank and more-indented lines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from matrix.schedule.github.run_lines import script_lines
from matrix.schedule.yamldoc import Marks, load_yaml

_WORDS = st.sampled_from(["pytest", "echo", "make", "cd", "python3", "bash"])
_LINE = st.one_of(st.just(""), st.tuples(_WORDS, st.integers(0, 99)).map(lambda t: f"{t[0]} a{t[1]}"))


@settings(max_examples=200, deadline=None)
@given(
    style=st.sampled_from(["|", "|-", "|+", ">", ">-", "plain", '"', "'"]),
    body=st.lists(_LINE, min_size=1, max_size=7),
    indented=st.sets(st.integers(0, 6), max_size=2),
)
def test_each_script_line_maps_to_the_file_line_holding_its_text(style, body, indented):
    """Every non-blank line of the value PyYAML gives starts with the text of the file line it is mapped to."""
    body = [f"  {line}" if i in indented and line and style[0] in "|>" else line for i, line in enumerate(body)]
    while body and not body[0].strip():
        body = body[1:]
    if not body:
        return
    head = ["on: push", "jobs:", "  a:", "    steps:", "      - run: true"]
    rest = ["          " + line if line else "" for line in body[1:]]
    if style[0] in "|>":
        text = "\n".join([*head, f"      - run: {style}", *("          " + line if line else "" for line in body)])
    else:
        quote = "" if style == "plain" else style
        text = "\n".join([*head, f"      - run: {quote}{body[0]}", *rest]) + quote
    marks: Marks = {}
    try:
        doc = load_yaml(text, "ci.yml", marks)
    except Exception:
        return  # not YAML (a plain scalar line that reads as a key): nothing to map
    step = doc["jobs"]["a"]["steps"][1]
    at, kind = marks[(id(step), "run")]
    value = step["run"]
    lines = text.splitlines()
    mapped = script_lines(lines, at, kind, value)
    assert len(mapped) == value.count("\n") + 1
    for part, number in zip(value.split("\n"), mapped, strict=True):
        if part.strip():
            written = lines[number - 1].strip().removeprefix("- run:").strip().strip("'\"")
            assert part.strip().split()[0] == written.split()[0], (text, value, mapped)
