"""`run()` (`python -m matrix`, the `specmatrix` script) ends the process without its teardown only when nothing
is registered to run at exit and no other thread runs: its output, exit code, exit handlers and threads are those
of `sys.exit(main())`."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False)


def test_a_command_prints_everything_and_keeps_its_exit_code(tmp_path):
    bad = tmp_path / "nothing-here"
    done = subprocess.run([sys.executable, "-m", "matrix", "runners"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "4-gpu-b200" in done.stdout and done.stderr == ""
    done = subprocess.run(
        [sys.executable, "-m", "matrix", "guards", str(bad), "--no-cache"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and done.stderr.startswith("specmatrix: error:") and done.stderr.endswith("\n")


EXIT_HANDLER = """
    import atexit, sys
    from matrix.cli.main import run
    atexit.register(lambda: print("the exit handler ran", flush=True))
    sys.argv = ["specmatrix", "runners"]
    run()
"""
THREAD = """
    import sys, threading, time
    from matrix.cli.main import run
    def late():
        time.sleep(0.2)
        print("the thread finished", flush=True)
    threading.Thread(target=late).start()
    sys.argv = ["specmatrix", "runners"]
    run()
"""


@pytest.mark.parametrize(("code", "said"), [(EXIT_HANDLER, "the exit handler ran"), (THREAD, "the thread finished")])
def test_exit_handlers_and_threads_still_run(code: str, said: str):
    done = python(code)
    assert done.returncode == 0, done.stderr
    assert said in done.stdout


def test_the_check_sees_a_run_that_skips_the_exit_handlers():
    """The same check against an exit that always leaves at once: the exit handler's line is missing."""
    planted = EXIT_HANDLER.replace("run()", "import os; from matrix.cli.main import main; os._exit(main())")
    done = python(planted)
    assert done.returncode == 0, done.stderr
    assert "the exit handler ran" not in done.stdout
