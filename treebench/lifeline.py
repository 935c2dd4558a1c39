"""Parent-death watch: processes a sweep starts die with the process that started the sweep.

``treebench run`` records its pid in ``$TREEBENCH_SWEEP_PID``; the environment is inherited by
the joblib (loky) workers of a sweep, and every job a worker runs calls :func:`watch_parent`. The
watch ends the worker (and the processes it started) as soon as its parent is gone, so a
``kill -9`` of the driver leaves no worker fitting and writing records.
"""

from __future__ import annotations

import os
import signal
import threading

ENV = "TREEBENCH_SWEEP_PID"
POLL_S = 0.25
_started = False
_lock = threading.Lock()


def mark_driver() -> None:
    """Record this process as the driver of a sweep (inherited by the workers it starts)."""
    os.environ.setdefault(ENV, str(os.getpid()))


def in_worker() -> bool:
    """Whether this process is a joblib (loky) worker of a sweep driver.

    SLURM jobs inherit the variable too but are not watched: they outlive the driver by design.
    """
    import multiprocessing

    pid = os.environ.get(ENV)
    return (
        bool(pid)
        and pid != str(os.getpid())
        and multiprocessing.current_process().name.startswith("Loky")
    )


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (Linux ``/proc``; empty elsewhere)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _descendants(pid: int) -> list[int]:
    out, todo = [], _children(pid)
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(_children(c))
    return out


def _die() -> None:
    """Kill this process's descendants (nested joblib workers), then exit at once."""
    for c in _descendants(os.getpid()):
        try:
            os.kill(c, signal.SIGKILL)
        except OSError:
            pass
    os._exit(1)


def watch_parent(poll_s: float = POLL_S) -> bool:
    """Start the watch in a sweep worker (no-op in the driver, idempotent); True if started.

    A daemon thread polls ``os.getppid()`` and ends the process when it changes (the parent
    died and the process was reparented), after killing the process's own descendants. Polling
    rather than ``PR_SET_PDEATHSIG``: that signal fires when the parent *thread* that forked the
    process exits, which for pool workers may be a short-lived helper thread.
    """
    global _started
    if not in_worker():
        return False
    with _lock:
        if _started:
            return True
        _started = True
    parent = os.getppid()
    if parent == 1:  # the parent is already gone
        _die()

    def loop() -> None:
        ev = threading.Event()
        while not ev.wait(poll_s):
            if os.getppid() != parent:
                _die()

    threading.Thread(target=loop, name="treebench-lifeline", daemon=True).start()
    return True
