"""`python -m matrix`."""

from __future__ import annotations

import sys

from matrix.cli.main import main

sys.exit(main())
