"""``python -m treebench.cli``.

The ``treebench`` command (what sweeps' background processes run).
"""

from treebench.cli import main

main()
