"""Time the draft-decode attention of every RUN cell on this GPU host (see docs/performance.md)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.gpu.bench import main

if __name__ == "__main__":
    sys.exit(main())
