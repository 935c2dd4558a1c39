"""The one place that makes rich consoles: full-width plain text off a terminal.

Under ``nohup``, SLURM or ``tee`` rich would wrap everything at 80 columns (table headers vanish,
``± SD`` and method names are cut); off a terminal the consoles made here do not wrap tables and
print no colour codes.
"""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions

PLAIN_WIDTH = 1000  # columns off a terminal: tables take their natural width


class _Console(Console):
    """A rich console whose width, off a terminal, is :data:`PLAIN_WIDTH` (unless given).

    ``COLUMNS`` is read at each print, not once when the console is made (rich's default), so a
    module-level console follows the environment it prints in.
    """

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        if kw.get("width") is None:
            self._width = None  # rich froze COLUMNS here; look it up in ``size`` instead

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)
        if self._width is None:
            cols = os.environ.get("COLUMNS", "")
            if cols.isdigit():
                return ConsoleDimensions(int(cols), size.height)
            if not self.is_terminal:
                return ConsoleDimensions(PLAIN_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)


def make_console(stderr: bool = False, **kw) -> Console:
    """Return a rich console on stdout (or stderr), full-width and colourless when not a terminal.

    Parameters
    ----------
    stderr : bool
        Write to stderr instead of stdout.
    **kw
        Further :class:`rich.console.Console` arguments.

    Returns
    -------
    rich.console.Console
        The terminal is looked up at each print, so a redirected ``sys.stdout`` is honoured.
    """
    return _Console(stderr=stderr, **kw)
