"""Run pytest with the given arguments, then leave without interpreter finalization.

`nox -s sglang` runs the requires_torch tests of tests/gpu this way: with sglang 0.5.23 on CPU torch 2.14.1 the interpreter
sometimes segfaulted while shutting down (exit -11) after every test had passed and pytest had written its
summary; the crash is in finalization, not in a test. pytest's own exit status is kept.
Usage: python ci/pytest_then_exit.py [pytest arguments]
"""

from __future__ import annotations

import os
import sys

import pytest

if __name__ == "__main__":
    code = int(pytest.main(sys.argv[1:]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
