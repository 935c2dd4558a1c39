"""``python -m treebench.cli``: the ``treebench`` command (what sweeps' background processes run)."""

from treebench.cli import main

main()
