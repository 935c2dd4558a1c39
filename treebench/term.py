"""The one place that makes rich consoles: full-width plain text off a terminal.

Under ``nohup``, SLURM or ``tee`` rich would wrap everything at 80 columns (table headers vanish,
``± SD`` and method names are cut); off a terminal the consoles made here do not wrap tables and
print no colour codes.
"""

from __future__ import annotations

from rich.console import Console, ConsoleDimensions

PLAIN_WIDTH = 1000  # columns off a terminal: tables take their natural width


class _Console(Console):
    """A rich console whose width, off a terminal, is :data:`PLAIN_WIDTH` (unless given)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = Console.size.fget(self)
        if self._width is None and not self.is_terminal:
            return ConsoleDimensions(PLAIN_WIDTH, size.height)
        return size

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)


def make_console(stderr: bool = False, **kw) -> Console:
    """A rich console on stdout (or stderr), full-width and colourless when not a terminal.

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
