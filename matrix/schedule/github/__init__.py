"""GitHub Actions: workflows walked in stages (workflow, job, step), their expressions, matrices, step outputs
and local actions."""
