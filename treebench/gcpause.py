"""The cyclic garbage collector paused while ``treebench run`` starts up.

Importing scikit-learn, SciPy, pandas and Hydra creates ~150,000 objects and no garbage worth
collecting, yet the collector traverses them again and again while they are created (about a
tenth of a CART run's CPU on iris) and once more when the interpreter exits (about a fifth). The
console entry point pauses the collector for ``run`` (:func:`pause`); once the job's work begins
(:func:`resume`: before the first job's data are loaded, or before a sweep is planned) everything
imported so far is frozen (:func:`gc.freeze`: never traversed again, exit included) and the
collector runs as usual for the work itself. The pause covers a bounded amount of work (imports and
one config composition), so what it leaves uncollected is bounded too.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Pause the cyclic collector until :func:`resume` (no-op when it is already disabled)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze the objects made so far and re-enable the collector that :func:`pause` paused.

    Idempotent, and a no-op in a process that never paused (tests invoking the CLI in-process,
    sweep workers).
    """
    global _paused
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False


def paused() -> bool:
    """Whether :func:`pause` paused the collector and :func:`resume` has not yet re-enabled it."""
    return _paused
