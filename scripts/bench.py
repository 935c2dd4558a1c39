"""Thin wrapper: ``python scripts/bench.py [--quick] [--methods a,b] ...`` = ``treebench bench ...``."""

from __future__ import annotations

import sys

from treebench.cli import app

if __name__ == "__main__":
    sys.argv = ["treebench", "bench", *sys.argv[1:]]
    app()
