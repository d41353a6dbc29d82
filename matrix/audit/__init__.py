"""The skip audit: the pytest plugin's planning, accounting, findings and report writers.

Everything here except `parametrize`, `timing`, `unittest_cases` and `writers` (file IO) is
pure: it decides from frozen data and never imports pytest, torch or xdist.
"""

from __future__ import annotations
