"""CI outside GitHub Actions: Buildkite test areas, declared schedule files, other services' files listed as unread."""
