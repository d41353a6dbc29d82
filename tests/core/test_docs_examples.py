"""Every console example of README.md and docs/*.md that runs on a CPU is run, and its output compared.

A ```console block with a `$ specmatrix ...` line is an example. Each `$ ` line is a command; the lines up to
the next one are its expected stdout. A line that is exactly `...` stands for any number of lines (elided
output). A command line ending in `# exit N` states its exit status, which is checked too. A block that cannot run here (it needs a GPU, the sglang tree or an earlier run) carries
`<!-- example: not run (why) -->` on the line before its fence. docs/architecture.md ("Docs that are tested")
describes the convention.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from matrix.cli.main import main
from tests.core.test_docs_commands import doc_files

REPO = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```console\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
NOT_RUN = re.compile(r"<!-- example: not run \((?P<why>[^)]+)\) -->\s*$")
ELIDED = "..."
EXIT = re.compile(r"#\s*exit (?P<code>\d+)\s*$")


@dataclass(frozen=True)
class Example:
    where: str  # file:line of the fence
    commands: tuple[tuple[str, tuple[str, ...]], ...]  # (command line, expected stdout lines)
    not_run: str  # the marker's reason, or ""


def examples_of(text: str, name: str) -> list[Example]:
    found = []
    for match in FENCE.finditer(text):
        body = match.group("body").splitlines()
        if not any(line.startswith("$ specmatrix ") for line in body):
            continue
        commands: list[tuple[str, list[str]]] = []
        for line in body:
            if line.startswith("$ "):
                commands.append((line[2:], []))
            elif commands:
                commands[-1][1].append(line)
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = NOT_RUN.search(before)
        line_no = text.count("\n", 0, match.start()) + 1
        found.append(
            Example(
                where=f"{name}:{line_no}",
                commands=tuple((cmd, tuple(out)) for cmd, out in commands),
                not_run=marker.group("why") if marker else "",
            )
        )
    return found


def matches(expected: list[str] | tuple[str, ...], actual: list[str]) -> bool:
    """Line-by-line equality (trailing spaces ignored), `...` matching any run of lines."""
    exp = [e.rstrip() for e in expected]
    act = [a.rstrip() for a in actual]
    memo: dict[tuple[int, int], bool] = {}

    def go(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(exp):
                memo[(i, j)] = j == len(act)
            elif exp[i] == ELIDED:
                memo[(i, j)] = any(go(i + 1, k) for k in range(j, len(act) + 1))
            else:
                memo[(i, j)] = j < len(act) and exp[i] == act[j] and go(i + 1, j + 1)
        return memo[(i, j)]

    return go(0, 0)


def all_examples() -> list[Example]:
    out = []
    for path in doc_files():
        out += examples_of(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    return out


EXAMPLES = all_examples()


def stated_exit(line: str) -> int | None:
    """The exit status a command line states with a trailing `# exit N`, if it states one."""
    found = EXIT.search(line)
    return int(found.group("code")) if found else None


def run_command(line: str) -> tuple[str, int]:
    """What the command prints on stdout, and its exit status."""
    argv = shlex.split(line, comments=True)
    assert argv[0] == "specmatrix", f"only specmatrix commands run here: {line}"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        code = main(argv[1:])
    return buffer.getvalue(), code


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("SPECMATRIX_CACHE_DIR", str(tmp_path / "cache"))
    for name in [n for n in os.environ if n.startswith("SPECMATRIX_") and n != "SPECMATRIX_CACHE_DIR"]:
        monkeypatch.delenv(name)


def test_the_docs_hold_runnable_examples() -> None:
    runnable = [e for e in EXAMPLES if not e.not_run]
    assert len(runnable) >= 3
    assert any(e.where.startswith("README.md") for e in runnable)


@pytest.mark.parametrize("example", [e for e in EXAMPLES if not e.not_run], ids=lambda e: e.where)
def test_example_output_is_current(example: Example, in_repo: None) -> None:
    for command, expected in example.commands:
        printed, code = run_command(command)
        actual = printed.splitlines()
        assert matches(expected, actual), f"{example.where}: `{command}` printed:\n" + "\n".join(actual)
        stated = stated_exit(command)
        assert stated in (None, code), f"{example.where}: `{command}` exits {code}, the doc says {stated}"


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e.not_run], ids=lambda e: e.where)
def test_an_example_left_out_says_why(example: Example) -> None:
    assert len(example.not_run) > 10


# --- the checker itself, shown red on planted defects ------------------------------------------------------------

DOC = """Text.

```console
$ specmatrix explain draft-fa3-topk1-page16-hd128-gqa4-bf16-graph --runner 4-gpu-b200
draft-fa3-topk1-page16-hd128-gqa4-bf16-graph on 4-gpu-b200 (4 GPU(s), sm100): SKIP
...
       source: sglang 0.5.23 flashattention_backend (fa3 requires sm90)
```

<!-- example: not run (needs the suite of an earlier run) -->
```console
$ specmatrix audit out/report.json
```
"""


def test_parsing_finds_commands_outputs_and_markers() -> None:
    first, second = examples_of(DOC, "doc.md")
    assert first.where == "doc.md:3" and not first.not_run
    assert first.commands[0][1][1] == ELIDED
    assert second.not_run == "needs the suite of an earlier run"


def test_a_current_example_passes_and_a_stale_one_fails(in_repo: None) -> None:
    (example, _) = examples_of(DOC, "doc.md")
    command, expected = example.commands[0]
    actual = run_command(command)[0].splitlines()
    assert matches(expected, actual)
    stale = [line.replace("sm100", "sm90") for line in expected]
    assert not matches(stale, actual)
    assert not matches([*expected, "one line more"], actual)
    assert not matches(expected[:1], actual)  # output cut short without a `...`


def test_a_stated_exit_status_is_checked(in_repo: None) -> None:
    assert stated_exit("specmatrix cells --runner nowhere   # exit 2") == 2
    assert stated_exit("specmatrix cells   # every cell") is None
    assert run_command("specmatrix cells --runner nowhere   # exit 2")[1] == 2
    assert run_command("specmatrix runners   # exit 0")[1] == 0


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        (["a", "...", "d"], ["a", "b", "c", "d"], True),
        (["a", "...", "d"], ["a", "d"], True),
        (["a", "..."], ["a"], True),
        (["a", "...", "d"], ["a", "b", "c"], False),
        (["a  "], ["a"], True),
        (["a"], ["b"], False),
    ],
)
def test_elision(expected: list[str], actual: list[str], ok: bool) -> None:
    assert matches(expected, actual) is ok
