"""Runtime skip ledger: what really ran, skipped or ran nothing in suites that run their tests as scripts.

`hook` is loaded at interpreter start-up by a one-line `.pth` file (only when `SPECMATRIX_LEDGER` is set) and
appends one JSON line per test outcome; `specmatrix ledger` joins those lines with the suite's registrations.
This package's `__init__` imports nothing so that loading the hook stays cheap.
"""
