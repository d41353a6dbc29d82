"""Command readers and launchers: pytest, test files run as scripts, sglang's run_suite.py, tox/nox sessions, Modal functions."""
