"""CPU time a block of work used in this process, its threads and its child processes."""

from __future__ import annotations

import os


def _children() -> dict[tuple[int, float], float]:
    """Return ``{(pid, start time): user + system seconds}`` of this process's live descendants.

    Each descendant's seconds include those of the descendants it has already reaped.
    """
    import psutil  # lazy: only a run measures itself

    out = {}
    for p in psutil.Process().children(recursive=True):
        try:
            with p.oneshot():
                t = p.cpu_times()
                out[(p.pid, p.create_time())] = (
                    t.user + t.system + t.children_user + t.children_system
                )
        except psutil.Error:  # ended between the listing and the read: counted once reaped
            continue
    return out


class CpuClock:
    """CPU seconds (user + system) used since the clock started.

    By this process, all its threads and its child processes.

    A run's wall time times its threads also counts the time it waited for a core; this is what it
    used. Children are counted whether they end within the block (through the reaped-children
    totals of this process) or outlive it (a worker pool reused across fits, by their own totals
    read at both ends), so a pool started earlier counts only its work inside the block.

    Examples
    --------
    >>> clock = CpuClock()
    >>> _ = sum(i * i for i in range(10_000))
    >>> clock.seconds() >= 0
    True
    """

    def __init__(self):
        self._own, self._live = self._read()

    @staticmethod
    def _read() -> tuple[float, dict[tuple[int, float], float]]:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system, _children()

    def seconds(self) -> float:
        """CPU seconds since the clock started."""
        own, live = self._read()
        total = own - self._own
        for proc, used in live.items():
            total += used - self._live.get(proc, 0.0)
        for proc, used in self._live.items():
            if proc not in live:  # ended and reaped here: its whole life is in ``own`` now
                total -= used
        return max(total, 0.0)
