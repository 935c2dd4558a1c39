"""Thread counts: numba's for compiled kernels (keeping PyTorch's), BLAS/OpenMP limits on fits."""

from __future__ import annotations

import functools
import inspect
import sys
import threading
from contextlib import contextmanager
from numbers import Integral


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


# ----------------------------------------------------------------------------- thread limits

_LOCK = threading.Lock()
_ACTIVE = [0, None]  # limit contexts open in this process, and the one that applied its limit
_CONTROLLER: list = [None, -1]  # threadpoolctl's controller, and len(sys.modules) when it was made


def _controller():
    """Threadpoolctl's view of the loaded thread pools, made again only after new imports.

    Making one scans every loaded shared library (~1 ms, as long as a CART fit on iris); a new
    module may have loaded a new pool (torch's OpenMP), so the scan is repeated when
    ``sys.modules`` grew.
    """
    from threadpoolctl import ThreadpoolController

    n = len(sys.modules)
    if _CONTROLLER[1] != n:
        _CONTROLLER[0], _CONTROLLER[1] = ThreadpoolController(), n
    return _CONTROLLER[0]


def blas_limit(n: int):
    """Return a context limiting the BLAS pools to ``n`` threads, from the cached controller.

    :func:`_controller` is cached because ``threadpool_limits(n, "blas")`` scans every loaded
    library each time: ~7 ms, a tenth of a hinge fit on german when called per snapshot.
    """
    return _controller().limit(limits=max(1, int(n)), user_api="blas")


@contextmanager
def thread_limit(n: int | None):
    """Limit BLAS and OpenMP pools to ``n`` threads while the block runs (``None``: no limit).

    The outermost open limit of the process holds: the runner's ``threads`` around a fit, else the
    estimator's own ``n_jobs`` (see :func:`limited`). Nested and concurrent blocks (member fits on
    threads) neither change nor restore it.
    """
    if n is None:
        yield
        return
    with _LOCK:
        first = _ACTIVE[0] == 0
        _ACTIVE[0] += 1
        if first:
            _ACTIVE[1] = _controller().limit(limits=max(1, int(n)))
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] == 0:
                _ACTIVE[1].restore_original_limits()
                _ACTIVE[1] = None


LIMITED = ("fit", "predict", "predict_proba", "decision_function")


def limited(cls: type) -> type:
    """Make ``cls``'s :data:`LIMITED` methods run under the estimator's thread limit.

    The limit is the estimator's ``n_jobs`` (none for a negative one, scikit-learn's "all cores",
    or an invalid one, which ``fit`` rejects),
    one thread for ``None`` or no ``n_jobs`` (as :func:`treebench.api.make_estimator`'s default
    ``n_jobs`` and the runner's ``threads=1``), so an
    estimator fitted from Python (the API, a search CV, a script) uses the threads it was given
    as the runner's jobs do; inside the runner's own limit (:func:`thread_limit`) nothing changes.
    """
    for name in LIMITED:
        fn = inspect.getattr_static(cls, name, None)
        # plain functions only: a descriptor (scikit-learn's ``available_if``) decides whether the
        # method exists at all, and replacing it would make a missing method look present
        if inspect.isfunction(fn) and not getattr(fn, "_tb_limited", False):
            setattr(cls, name, _limit_method(fn))
    return cls


def _limit_method(fn):
    @functools.wraps(fn)
    def run(self, *args, **kwargs):
        n = getattr(self, "n_jobs", None)
        ok = isinstance(n, Integral) and not isinstance(n, bool) and n > 0  # else fit judges it
        with thread_limit(1 if n is None else (int(n) if ok else None)):
            return fn(self, *args, **kwargs)

    run._tb_limited = True
    return run
