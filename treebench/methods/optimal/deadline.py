"""Run a native solver in a forked child that is killed at a wall-clock deadline.

GOSDT checks its ``time_limit`` only every 10,000 search iterations, so on a large instance it runs
far past it (measured: a 1 s limit stopped after 22 s; see ``docs/methods/gosdt.md``); native code
cannot be interrupted in-process. The child is forked (it inherits the arrays, nothing is pickled
on the way in), its stdout/stderr go to ``/dev/null`` (the solver prints its warnings from C++),
and its pickled result comes back through a pipe. The CPU seconds of the child are counted by the
runner's clock (:mod:`treebench.cputime` counts reaped children).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
import traceback


class DeadlineExceeded(Exception):
    """The child did not answer before the deadline and was killed."""


def call_with_deadline(fn, deadline_s: float | None, *args):
    """``fn(*args)`` in a forked child, killed after ``deadline_s`` wall seconds (None: no limit).

    Returns
    -------
    object
        What ``fn`` returned (pickled through a pipe).

    Raises
    ------
    DeadlineExceeded
        The child was killed at the deadline.
    RuntimeError
        ``fn`` raised in the child (its traceback in the message).
    """
    if not hasattr(os, "fork"):  # pragma: no cover - Windows: no hard stop, the solver's own check
        return fn(*args)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 0
        try:
            os.close(r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            try:
                payload = pickle.dumps(("ok", fn(*args)))
            except BaseException:  # noqa: BLE001 - reported to the parent
                payload = pickle.dumps(("error", traceback.format_exc()))
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view) :]
        except BaseException:  # noqa: BLE001
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    end = None if deadline_s is None else time.monotonic() + float(deadline_s)
    killed = done = False
    try:
        while True:
            wait = None if end is None else max(0.0, end - time.monotonic())
            ready, _, _ = select.select([r], [], [], wait)
            if not ready:
                killed = True
                break
            chunk = os.read(r, 1 << 20)
            if not chunk:
                done = True
                break
            chunks.append(chunk)
    finally:  # killed at the deadline, or the parent interrupted: no child is left behind
        os.close(r)
        if not done:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:  # pragma: no cover - ended meanwhile
                pass
        os.waitpid(pid, 0)
    if killed:
        raise DeadlineExceeded(f"killed after {deadline_s:.1f} s")
    if not chunks:
        raise RuntimeError("the solver's child process ended without a result")
    status, value = pickle.loads(b"".join(chunks))
    if status == "error":
        raise RuntimeError(f"the solver failed in its child process:\n{value}")
    return value
