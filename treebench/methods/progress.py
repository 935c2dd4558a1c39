"""The progress protocol of long fits: a method reports steps, the caller decides what to show.

A method calls :func:`report` between units of work (epochs, iterations, grow rounds, teacher
fits): ``report("epochs", 3, 50)``. Outside :func:`reporting` the call does nothing, so estimators
stay plain scikit-learn estimators (no parameter, no output, no global state beyond a context
variable). The runner wraps a single run's fit in ``reporting(callback)`` and draws a bar.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: ``callback(phase, done, total)``; ``total`` None when unknown
Callback = Callable[[str, int, "int | None"], None]

_CALLBACK: ContextVar[Callback | None] = ContextVar("treebench_progress", default=None)


def report(phase: str, done: int, total: int | None = None) -> None:
    """Tell the caller that ``done`` of ``total`` units of ``phase`` are finished."""
    cb = _CALLBACK.get()
    if cb is not None:
        cb(phase, int(done), None if total is None else int(total))


def current() -> Callback | None:
    """Return the callback :func:`report` calls here (None outside :func:`reporting`)."""
    return _CALLBACK.get()


@contextmanager
def reporting(callback: Callback | None) -> Iterator[None]:
    """Send the :func:`report` calls made inside the block (in this thread) to ``callback``."""
    token = _CALLBACK.set(callback)
    try:
        yield
    finally:
        _CALLBACK.reset(token)
