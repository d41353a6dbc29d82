"""`$GITHUB_ENV` / `$GITHUB_OUTPUT` writes of a step: read in every form GitHub documents (`NAME=value`, the
`NAME<<DELIMITER` block), written by `echo`, `printf`, a here-document, a group or `tee -a`; a computed or
conditional value is unknown (never the job's older value); a write this reader cannot read is listed. The
shell's part is checked against bash itself: bash runs each generated script with the files pointed at a folder,
and what GitHub would read from them must be what the reader predicts."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matrix.schedule.github.step_writes import _parse_file, step_writes


@pytest.mark.parametrize(
    ("script", "env", "outputs"),
    [
        ('echo "K=fast" >> "$GITHUB_ENV"', {"K": "fast"}, {}),
        ("echo K=fast | tee -a $GITHUB_ENV", {"K": "fast"}, {}),
        ("printf 'K=%s\\n' fast >> ${GITHUB_ENV}", {"K": "fast"}, {}),
        ('{\n  echo "K<<EOF"\n  echo "two words"\n  echo "EOF"\n} >> "$GITHUB_ENV"', {"K": "two words"}, {}),
        ("cat >> $GITHUB_OUTPUT <<EOT\ndir=tests/gpu\nEOT", {}, {"dir": "tests/gpu"}),
        ("cat <<'EOT' >> $GITHUB_ENV\nK=$kept\nEOT", {"K": "$kept"}, {}),
        ('echo "K=$(date)" >> $GITHUB_ENV', {"K": None}, {}),
        ('if [ -n "$X" ]; then echo "K=1" >> $GITHUB_ENV; fi', {"K": None}, {}),
        ('test -n "$X" && echo "K=1" >> $GITHUB_ENV', {"K": None}, {}),
        ('echo "K=__UNRESOLVED_0__" >> $GITHUB_ENV', {"K": None}, {}),
    ],
)
def test_each_form_of_write_is_read(script, env, outputs):
    found = step_writes(script)
    assert dict(found.env) == env and dict(found.outputs) == outputs and not found.unread


@pytest.mark.parametrize(
    "script",
    [
        "python tools/env.py >> $GITHUB_ENV",
        "cat settings.env >> $GITHUB_ENV",
        'for n in a b; do echo "K_$n=1" >> $GITHUB_ENV; done',
    ],
)
def test_a_write_whose_names_are_not_known_is_listed(script):
    found = step_writes(script)
    assert found.unread and not found.env


def test_naming_the_file_without_writing_it_writes_nothing():
    assert step_writes('echo "the env file is $GITHUB_ENV"\ntest -f "$GITHUB_ENV"') == step_writes("true")


# --- against bash -----------------------------------------------------------------------------------------------------

_VALUE = st.text(alphabet="abcXYZ019_./ -", min_size=0, max_size=8).map(lambda v: v.strip() or "v")
_NAME = st.sampled_from(["A", "B", "path_1", "KEY"])


def _echo(pair: tuple[str, str]) -> str:
    return f'echo "{pair[0]}={pair[1]}"'


def _printf(pair: tuple[str, str]) -> str:
    return f"printf '%s=%s\\n' {pair[0]} '{pair[1]}'"


def _block(pair: tuple[str, str]) -> str:
    return f'{{\n  echo "{pair[0]}<<DELIM"\n  echo "{pair[1]}"\n  echo "line two"\n  echo DELIM\n}}'


_FORMS = [_echo, _printf, _block]


@st.composite
def _scripts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        pair = (draw(_NAME), draw(_VALUE))
        how = draw(st.integers(0, 4))
        target = draw(st.sampled_from(['"$GITHUB_ENV"', "$GITHUB_ENV", "${GITHUB_ENV}", '"$GITHUB_OUTPUT"']))
        if how == 3:
            lines.append(f"cat >> {target} <<'EOT'\n{pair[0]}={pair[1]}\nEOT")
        elif how == 4:
            lines.append(f"{_echo(pair)} | tee -a {target} > /dev/null")
        else:
            lines.append(f"{_FORMS[how](pair)} >> {target}")
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed (CI installs it)")
@settings(
    max_examples=int(os.environ.get("SPECMATRIX_ORACLE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(script=_scripts())
def test_the_reader_agrees_with_bash_on_what_github_reads(tmp_path, script):
    env_file, output_file = tmp_path / "env", tmp_path / "out"
    env_file.write_text("", encoding="utf-8")
    output_file.write_text("", encoding="utf-8")
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GITHUB_ENV": str(env_file), "GITHUB_OUTPUT": str(output_file)},
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    found = step_writes(script)
    assert not found.unread
    assert list(found.env) == list(_parse_file(env_file.read_text(encoding="utf-8")))
    assert list(found.outputs) == list(_parse_file(output_file.read_text(encoding="utf-8")))
