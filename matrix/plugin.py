"""pytest plugin entry point (skip audit)."""

from __future__ import annotations
