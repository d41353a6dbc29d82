"""Which tests a repository's CI runs, where, with which environment and when: read from its CI files.

`model` holds the frozen records every reader produces (GitHub Actions workflows, sglang's runner configs,
Buildkite steps, a declared schedule file); the static audits judge registrations and collected tests
against a `Schedule` instead of a hand-written suite map.
"""
