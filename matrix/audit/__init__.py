"""The skip audit: the pytest plugin's planning, accounting, findings and report writers.

- `pytest_options`: the plugin's options, a process's xdist role, whether a run engages the audit; the only
  module the plugin's entry point loads into every pytest run;
- `items`: which cells a run and each test cover, node ids, the static plan of uncollected modules, the values
  `matrix_cell` is parametrized with, `run_unittest_case`;
- `accounting`: what pytest reported, classified into one status per planned item, and the tally;
- `findings`: what the audit concludes from the statuses, and the allowlist;
- `session`: one run's audit (`AuditSession`), its frozen settings, the `matrix_timing` recorder;
- `hooks`: the pytest hooks of an engaged run, the xdist controller, GPU slots per worker;
- `reports`: the terminal section, Markdown, JUnit XML and the files a finished report is written to;
- `timeline`: where a run's wall time went, per worker.

`accounting`, `findings` and `timeline` are pure: they decide from frozen data and never import pytest, torch or
xdist; `items`, `session`, `hooks` and `reports` (file IO) are the edges.
"""

from __future__ import annotations
