"""The fixtures and report helpers this package's tests share with tests/ci (a clean environment, the default
matrix and runners, saved run reports)."""

from __future__ import annotations

from tests.ci.conftest import b200_workload, clean_env, default_matrix, make_report, report_file, run_cells, runners

__all__ = ["b200_workload", "clean_env", "default_matrix", "make_report", "report_file", "run_cells", "runners"]
