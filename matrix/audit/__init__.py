"""The skip audit: the pytest plugin's planning, accounting, findings and report writers.

Everything here except `parametrize`, `timing`, `unittest_cases`, `writers` (file IO) and the pytest edges
(`pytest_options`, `settings`, `hooks`, `xdist_controller`) is pure: it decides from frozen data and never imports
pytest, torch or xdist. `pytest_options` is the only module the plugin's entry point loads into every pytest run.
"""

from __future__ import annotations
