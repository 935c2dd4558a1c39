"""numba's thread count for a compiled kernel, without changing PyTorch's intra-op thread count."""

from __future__ import annotations

import sys


def set_numba_threads(n: int) -> int:
    """Let numba's parallel kernels use ``n`` threads (at most ``NUMBA_NUM_THREADS``, at least 1).

    numba's first ``set_num_threads`` launches its threading layer; with the OpenMP layer that sets
    OpenMP's thread count to ``NUMBA_NUM_THREADS`` (every core unless the variable is set), and
    PyTorch (built with OpenMP) then reads its intra-op thread count from there: a job limited to
    one thread ran torch on every core from its first kernel on (E2EDF's greedy stumps: measured
    2.7x slower on a shared 2-core machine). The torch count the job set is put back here.

    Parameters
    ----------
    n : int
        The threads wanted (the job's ``threads`` / the estimator's ``n_jobs``).

    Returns
    -------
    int
        The threads numba's kernels use.
    """
    import numba  # imported here: numba costs ~0.3 s at startup, and only some methods use it

    torch = sys.modules.get("torch")  # only a method that imported torch has a count to keep
    before = torch.get_num_threads() if torch is not None else None
    k = max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(k)
    if torch is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)
    return k
