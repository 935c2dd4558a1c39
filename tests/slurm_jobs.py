"""Helpers that SLURM test jobs import (the jobs get the repository on PYTHONPATH)."""

from __future__ import annotations

import os
import time

from treebench.data.sources import bundled


def sleepy_load(name: str, task: str, ctx=None, **kw):
    """Return a bundled dataset, after sleeping ``$TREEBENCH_TEST_SLEEP_S`` seconds (0 when unset).

    Keeps a job queued or running for a while without using CPU; the sleep is not part of the run
    key, so a rerun without it finds the same keys. With ``$TREEBENCH_TEST_SLEEP_MARK`` (a
    directory), the process first leaves a file named by its pid there: tests wait on it instead
    of guessing how long a job takes to start.
    """
    mark = os.environ.get("TREEBENCH_TEST_SLEEP_MARK")
    if mark:
        os.makedirs(mark, exist_ok=True)
        open(os.path.join(mark, str(os.getpid())), "w").close()
    time.sleep(float(os.environ.get("TREEBENCH_TEST_SLEEP_S") or 0))
    return bundled.load(name, task, ctx=ctx, **kw)
