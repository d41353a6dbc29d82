"""What a CI job's environment holds, read from its own files: the distributions it installs (and the extras and
requirement files those name), the pytest plugins they load with the options each registers, and the options a
repository's conftest files declare. Pure: every reader takes text, never a path."""
