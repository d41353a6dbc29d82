"""Developer tooling of the specmatrix repository (not part of the wheel): GPU benchmarks, the mutation table, the
smoke run. Run from the repository root (`python -m tools.gpu.mutate`, `python ci/bench_kernels.py`)."""
