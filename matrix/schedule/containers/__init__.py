"""Containers a job runs its tests in: the environment a `docker exec` or `docker run` gives the command."""
