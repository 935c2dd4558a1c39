"""Fast deterministic routing of flat trees and decision graphs, for predict paths.

Two kinds of split, one node layout (node 0.. n-1, ``left[v] < 0`` marks a leaf, children by index,
so DAGs such as TnT's decision graphs work unchanged):

* :func:`route_axis` — axis-aligned ``x[feature[v]] <= threshold[v]`` goes left (scikit-learn's
  rule; the float32 value is compared in float64, like scikit-learn).
* :func:`route_oblique` — oblique ``w[s] . x[feat[s]] + b[s] > 0`` goes right, with ``s = split[v]``
  (``-1`` at leaves) indexing a split bank ``W [S, k]``, ``b [S]`` and optional feature indices
  ``feat [S, k]`` (``None`` = all features, ``k = p``); several trees (``roots``) at once.

With numba (the ``fast`` extra) each sample walks its own path in a compiled loop, 8 samples in
lockstep (independent dependency chains hide memory latency): cost = the number of splits on the
path times the split's width, no temporaries. Without numba a numpy fallback advances
all samples one level per step (same results, a few times slower). Both return node ids; ``steps``
(splits evaluated per sample) comes for free for size reports.

Usage from a method: keep the fitted model as these flat arrays (numpy, contiguous) and call the
router in ``predict``/``apply``; convert leaf node ids to values with a ``value[node]`` gather.
"""

from __future__ import annotations

import numpy as np

try:  # optional: numpy fallback below
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    numba = None
    HAVE_NUMBA = False


def _as(a, dtype):
    return np.ascontiguousarray(np.asarray(a), dtype=dtype)


# ----------------------------------------------------------------------------- numba kernels

if HAVE_NUMBA:
    _BLOCK = 8  # samples walked in lockstep: independent dependency chains hide memory latency

    @numba.njit(cache=True, nogil=True)
    def _axis_nb(X, feature, threshold, left, right, root, node_out, steps_out):  # pragma: no cover
        n = X.shape[0]
        v = np.empty(_BLOCK, np.int64)
        st = np.empty(_BLOCK, np.int64)
        for i0 in range(0, n, _BLOCK):
            m = min(_BLOCK, n - i0)
            for q in range(m):
                v[q] = root
                st[q] = 0
            active = True
            while active:
                active = False
                for q in range(m):
                    u = v[q]
                    if left[u] >= 0:
                        if np.float64(X[i0 + q, feature[u]]) <= threshold[u]:
                            v[q] = left[u]
                        else:
                            v[q] = right[u]
                        st[q] += 1
                        active = True
            for q in range(m):
                node_out[i0 + q] = v[q]
                steps_out[i0 + q] = st[q]

    # fastmath: the dot product may be reassociated (vectorised); inputs are finite (validated)
    @numba.njit(cache=True, nogil=True, fastmath=True)
    def _oblique_nb(
        X, W, b, feat, split, left, right, roots, node_out, steps_out
    ):  # pragma: no cover
        n = X.shape[0]
        T = roots.shape[0]
        k = W.shape[1]
        dense = feat.shape[0] == 0
        v = np.empty(_BLOCK, np.int64)
        st = np.empty(_BLOCK, np.int64)
        for t in range(T):
            for i0 in range(0, n, _BLOCK):
                m = min(_BLOCK, n - i0)
                for q in range(m):
                    v[q] = roots[t]
                    st[q] = 0
                active = True
                while active:
                    active = False
                    for q in range(m):
                        s = split[v[q]]
                        if s >= 0:
                            f = np.float64(b[s])
                            if dense:
                                for j in range(k):
                                    f += np.float64(W[s, j]) * np.float64(X[i0 + q, j])
                            else:
                                for j in range(k):
                                    f += np.float64(W[s, j]) * np.float64(X[i0 + q, feat[s, j]])
                            v[q] = right[v[q]] if f > 0 else left[v[q]]
                            st[q] += 1
                            active = True
                for q in range(m):
                    node_out[i0 + q, t] = v[q]
                    steps_out[i0 + q, t] = st[q]


# ----------------------------------------------------------------------------- numpy fallbacks


def _axis_np(X, feature, threshold, left, right, root):
    n = X.shape[0]
    node = np.full(n, root, dtype=np.int64)
    steps = np.zeros(n, dtype=np.int64)
    active = np.flatnonzero(left[node] >= 0)
    while active.size:  # one vectorised step per level
        v = node[active]
        go_left = X[active, feature[v]].astype(np.float64) <= threshold[v]
        node[active] = np.where(go_left, left[v], right[v])
        steps[active] += 1
        active = active[left[node[active]] >= 0]
    return node, steps


def _oblique_np(X, W, b, feat, split, left, right, roots):
    n, T = X.shape[0], len(roots)
    node = np.tile(roots, n)  # (n, t) row-major
    row = np.repeat(np.arange(n), T)
    steps = np.zeros(n * T, dtype=np.int64)
    active = np.flatnonzero(split[node] >= 0)
    while active.size:
        s = split[node[active]]
        xs = X[row[active]] if feat.shape[0] == 0 else X[row[active][:, None], feat[s]]
        f = np.einsum("ij,ij->i", xs.astype(np.float64), W[s].astype(np.float64)) + b[s]
        v = node[active]
        node[active] = np.where(f > 0, right[v], left[v])
        steps[active] += 1
        active = active[split[node[active]] >= 0]
    return node.reshape(n, T), steps.reshape(n, T)


# ----------------------------------------------------------------------------- public API


def route_axis(X, feature, threshold, left, right, root: int = 0, backend: str = "auto"):
    """Node reached by every row of ``X`` in an axis-aligned tree/graph, and splits evaluated.

    Returns ``(node [n] int64, steps [n] int64)``. ``backend``: "auto" (numba if available), "numba"
    or "numpy".
    """
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float32)
    X = np.ascontiguousarray(X)
    feature, left, right = _as(feature, np.int64), _as(left, np.int64), _as(right, np.int64)
    threshold = _as(threshold, np.float64)
    if _use_numba(backend):
        node = np.empty(X.shape[0], dtype=np.int64)
        steps = np.empty(X.shape[0], dtype=np.int64)
        _axis_nb(X, feature, threshold, left, right, int(root), node, steps)
        return node, steps
    return _axis_np(X, feature, threshold, left, right, int(root))


def route_oblique(X, W, b, split, left, right, roots=(0,), feat=None, backend: str = "auto"):
    """Node reached by every row in every tree of oblique splits; returns ``(node, steps)`` [n, T].

    Goes right iff ``W[s] . x[feat[s]] + b[s] > 0`` (accumulated in float64), ``s = split[v]``.
    ``W``/``b`` stay float64 when given so (e.g. input scaling folded into the splits), else
    float32.
    """
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float32))
    wdt = np.float64 if np.asarray(W).dtype == np.float64 else np.float32
    W, b = _as(W, wdt), _as(b, wdt)
    split, left, right = _as(split, np.int64), _as(left, np.int64), _as(right, np.int64)
    roots = _as(np.atleast_1d(roots), np.int64)
    feat = np.zeros((0, 0), dtype=np.int64) if feat is None else _as(feat, np.int64)
    if feat.shape[0] == 0 and W.shape[0] and W.shape[1] != X.shape[1]:
        raise ValueError(f"W has {W.shape[1]} columns but X has {X.shape[1]} features")
    if _use_numba(backend):
        node = np.empty((X.shape[0], len(roots)), dtype=np.int64)
        steps = np.empty((X.shape[0], len(roots)), dtype=np.int64)
        _oblique_nb(X, W, b, feat, split, left, right, roots, node, steps)
        return node, steps
    return _oblique_np(X, W, b, feat, split, left, right, roots)


def _use_numba(backend: str) -> bool:
    if backend not in ("auto", "numba", "numpy"):
        raise ValueError(f"backend must be 'auto', 'numba' or 'numpy', got {backend!r}")
    if backend == "numba" and not HAVE_NUMBA:
        raise ImportError("backend='numba' needs numba (pip install treebench[fast])")
    return HAVE_NUMBA and backend != "numpy"
