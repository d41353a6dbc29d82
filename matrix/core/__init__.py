"""The planning core: the matrix model, its loader, the one expected-outcome function, selectors,
runner profiles and options, report schema and errors.

Pure and torch-free: only `detect` touches torch, lazily, and everything else decides from frozen data.
"""

from __future__ import annotations
