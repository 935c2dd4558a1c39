"""Soft-label CART: a classification tree grown on per-sample class-probability vectors.

The class proportions of a node are the mean of its samples' label vectors ``Y`` (rows sum to 1;
one-hot rows give ordinary CART). A node is split only if it holds more than ``k`` samples, is not
pure by the samples' integer pseudo-labels, and has positive impurity; the split maximises the
impurity decrease (Gini or entropy) over all features and all thresholds (midpoints between
consecutive distinct values). Leaves store the mean label vector. The tree is kept in flat arrays.

Two builders compute the same tree:

* ``numba`` (used when numba imports): one compiled depth-first builder; per node and feature it
  sorts the node's values once and scans cumulative label sums (O(K) per candidate threshold).
* ``numpy`` (pure-numpy fallback): a Python loop over nodes; per node and feature one ``argsort``,
  one ``cumsum`` over the K label columns and the gains of all thresholds at once.

The split arithmetic, tie-breaking (first feature, then the smallest threshold with the strictly
best proxy), the ``1e-7`` feature-gap rule and the threshold rounding follow scikit-learn's
``BestSplitter`` so that with one-hot labels and ``k = min_samples_split - 1`` the tree equals a
scikit-learn CART whenever the latter has no equal-gain ties between features (it breaks those by a
random feature order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FEATURE_THRESHOLD = 1e-7  # scikit-learn: values closer than this are treated as equal
EPSILON = np.finfo(np.float64).eps
CRITERIA = {"gini": 0, "entropy": 1}
PRESORT_MAX_ENTRIES = 8_000_000  # presorted index lists of at most 64 MB

try:  # numba is optional: the numpy builder below computes the same tree, only slower
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    numba = None
    HAVE_NUMBA = False


@dataclass
class FlatTree:
    """A binary tree in flat arrays; node 0 is the root, ``left == -1`` marks a leaf."""

    feature: np.ndarray  # int64, -1 at leaves
    threshold: np.ndarray  # float64; go left when x[feature] <= threshold
    left: np.ndarray  # int64
    right: np.ndarray  # int64
    value: np.ndarray  # (n_nodes, K) mean label vector of the node's training samples
    n_samples: np.ndarray  # int64
    depth: np.ndarray  # int64

    @property
    def node_count(self) -> int:
        """Return the number of nodes."""
        return len(self.feature)

    @property
    def n_leaves(self) -> int:
        """Return the number of leaves."""
        return int((self.left < 0).sum())

    def apply(self, X, backend: str = "auto") -> np.ndarray:
        """Return the leaf index of every row of ``X``.

        Float32 values are compared in float64, like scikit-learn; the router is
        :mod:`treebench.methods._routing`'s (compiled with numba, else numpy).
        """
        from treebench.methods._routing import route_axis

        X = np.asarray(X, dtype=np.float32)
        return route_axis(X, self.feature, self.threshold, self.left, self.right, backend=backend)[
            0
        ]

    def apply_numpy(self, X) -> np.ndarray:
        """:meth:`apply` as a numpy loop over levels (the fallback without numba)."""
        return self.apply(X, backend="numpy")

    def predict_value(self, X) -> np.ndarray:
        """Return the value of the leaf each row of ``X`` reaches."""
        return self.value[self.apply(X)]


# ----------------------------------------------------------------------------- impurity helpers


def _node_impurity(tot: np.ndarray, n: float, crit: int) -> float:
    p = tot / n
    if crit == 0:
        return 1.0 - float((tot * tot).sum()) / (n * n)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def _children_proxy(L: np.ndarray, nl: np.ndarray, R: np.ndarray, nr: np.ndarray, crit: int):
    """scikit-learn's proxy impurity improvement ``-nr*imp_r - nl*imp_l`` for rows of sums L, R."""
    if crit == 0:
        imp_l = 1.0 - (L * L).sum(axis=-1) / (nl * nl)
        imp_r = 1.0 - (R * R).sum(axis=-1) / (nr * nr)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            pl = L / nl[:, None]
            pr = R / nr[:, None]
            imp_l = -np.where(pl > 0, pl * np.log2(np.where(pl > 0, pl, 1.0)), 0.0).sum(axis=-1)
            imp_r = -np.where(pr > 0, pr * np.log2(np.where(pr > 0, pr, 1.0)), 0.0).sum(axis=-1)
    return -nr * imp_r - nl * imp_l


def best_split_numpy(X: np.ndarray, Y: np.ndarray, min_leaf: int = 1, crit: int = 0, w=None):
    """Best split of one node, vectorised over thresholds: ``(feature, threshold, proxy)``.

    ``X`` (n, d) float32 values of the node's samples, ``Y`` (n, K) their label vectors already
    multiplied by the sample weights ``w`` (n,) (``None`` = unit weights). Per feature: one sort,
    one cumulative sum over the K columns, the proxy of every valid threshold at once. Returns
    feature ``-1`` when no valid split exists.
    """
    n, d = X.shape
    total = Y.sum(axis=0)
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    wtot = float(np.cumsum(w)[-1])  # sequential sum, like the compiled builder
    best = (-1, 0.0, -np.inf)
    cnt = np.arange(1, n)
    size_ok = (cnt >= min_leaf) & (n - cnt >= min_leaf)
    for f in range(d):
        xf = X[:, f]
        order = np.argsort(xf, kind="stable")
        xs = xf[order].astype(np.float64)
        if xs[-1] <= xs[0] + FEATURE_THRESHOLD:
            continue
        valid = (xs[1:] > xs[:-1] + FEATURE_THRESHOLD) & size_ok
        if not valid.any():
            continue
        L = np.cumsum(Y[order[:-1]], axis=0)
        nl = np.cumsum(w[order[:-1]])
        pos = np.flatnonzero(valid)
        proxy = _children_proxy(L[pos], nl[pos], total - L[pos], wtot - nl[pos], crit)
        i = int(np.argmax(proxy))  # first maximum = smallest threshold among ties
        if proxy[i] > best[2]:
            p = pos[i]
            thr = xs[p] / 2.0 + xs[p + 1] / 2.0
            if thr == xs[p + 1] or not np.isfinite(thr):
                thr = xs[p]
            best = (f, float(thr), float(proxy[i]))
    return best


def _build_numpy(X, Y, W, pseudo, k, min_leaf, crit, max_depth):
    n, K = Y.shape
    feature, threshold, left, right, nsamp, depth, values = [], [], [], [], [], [], []
    stack = [(np.arange(n), -1, False, 0)]
    while stack:
        idx, parent, is_left, dep = stack.pop()
        node = len(feature)
        if parent >= 0:
            (left if is_left else right)[parent] = node
        tot = Y[idx].sum(axis=0)
        wn = float(np.cumsum(W[idx])[-1])
        m = len(idx)
        feature.append(-1)
        threshold.append(-2.0)
        left.append(-1)
        right.append(-1)
        nsamp.append(m)
        depth.append(dep)
        values.append(tot / wn)
        ps = pseudo[idx]
        pure = bool((ps == ps[0]).all(axis=0).any())  # constant in some pseudo-label column
        if m <= k or pure or dep >= max_depth or _node_impurity(tot, wn, crit) <= EPSILON:
            continue
        f, thr, _ = best_split_numpy(X[idx], Y[idx], min_leaf, crit, W[idx])
        if f < 0:
            continue
        feature[node] = f
        threshold[node] = thr
        go_left = X[idx, f].astype(np.float64) <= thr
        stack.append((idx[~go_left], node, False, dep + 1))
        stack.append((idx[go_left], node, True, dep + 1))
    return (
        np.array(feature, np.int64),
        np.array(threshold, np.float64),
        np.array(left, np.int64),
        np.array(right, np.int64),
        np.array(values, np.float64).reshape(-1, K),
        np.array(nsamp, np.int64),
        np.array(depth, np.int64),
    )


if HAVE_NUMBA:

    @numba.njit(cache=True, nogil=True)
    def _build_numba(
        X, Y, W, pseudo, k, min_leaf, crit, max_depth, presort
    ):  # pragma: no cover - compiled
        n, d = X.shape
        K = Y.shape[1]
        cap = 2 * n + 1
        feature = np.full(cap, -1, np.int64)
        threshold = np.full(cap, -2.0, np.float64)
        left = np.full(cap, -1, np.int64)
        right = np.full(cap, -1, np.int64)
        nsamp = np.zeros(cap, np.int64)
        depth = np.zeros(cap, np.int64)
        values = np.zeros((cap, K), np.float64)
        idx = np.arange(n)
        tmp = np.empty(n, np.int64)
        xf = np.empty(n, np.float32)
        order = np.empty(n, np.int64)
        sid = np.empty(n, np.int64)
        goes_left = np.zeros(n, np.bool_)
        if presort:
            P = np.empty((d, n), np.int64)
            for f in range(d):
                P[f] = np.argsort(X[:, f], kind="mergesort")
        else:
            P = np.empty((1, 1), np.int64)
        xs = np.empty(n, np.float64)
        tot = np.empty(K, np.float64)
        L = np.empty(K, np.float64)
        st_start = np.empty(cap, np.int64)
        st_end = np.empty(cap, np.int64)
        st_parent = np.empty(cap, np.int64)
        st_left = np.empty(cap, np.bool_)
        st_depth = np.empty(cap, np.int64)
        sp = 0
        st_start[0] = 0
        st_end[0] = n
        st_parent[0] = -1
        st_left[0] = False
        st_depth[0] = 0
        sp = 1
        count = 0
        while sp > 0:
            sp -= 1
            s = st_start[sp]
            e = st_end[sp]
            parent = st_parent[sp]
            dep = st_depth[sp]
            node = count
            count += 1
            if parent >= 0:
                if st_left[sp]:
                    left[parent] = node
                else:
                    right[parent] = node
            m = e - s
            nsamp[node] = m
            depth[node] = dep
            for c in range(K):
                tot[c] = 0.0
            # pure = the node's pseudo-labels are all equal in at least one pseudo-label column
            pure = False
            j0 = idx[s]
            for q in range(pseudo.shape[1]):
                same = True
                for i in range(s + 1, e):
                    if pseudo[idx[i], q] != pseudo[j0, q]:
                        same = False
                        break
                if same:
                    pure = True
                    break
            wn = 0.0
            for i in range(s, e):
                j = idx[i]
                wn += W[j]
                for c in range(K):
                    tot[c] += Y[j, c]
            for c in range(K):
                values[node, c] = tot[c] / wn
            # node impurity (scikit-learn formula)
            if crit == 0:
                sq = 0.0
                for c in range(K):
                    sq += tot[c] * tot[c]
                imp = 1.0 - sq / (wn * wn)
            else:
                imp = 0.0
                for c in range(K):
                    if tot[c] > 0.0:
                        pc = tot[c] / wn
                        imp -= pc * np.log2(pc)
            if m <= k or pure or dep >= max_depth or imp <= 2.220446049250313e-16:
                continue
            best = -np.inf
            best_f = -1
            best_thr = 0.0
            for f in range(d):
                if presort:  # the node's samples in value order: a slice of the presorted list
                    if np.float64(X[P[f, e - 1], f]) <= np.float64(X[P[f, s], f]) + 1e-7:
                        continue  # constant in this node
                    for i in range(m):
                        jj = P[f, s + i]
                        sid[i] = jj
                        xs[i] = X[jj, f]
                else:
                    lo = np.inf
                    hi = -np.inf
                    for i in range(m):
                        v = X[idx[s + i], f]
                        xf[i] = v
                        if v < lo:
                            lo = v
                        if v > hi:
                            hi = v
                    if np.float64(hi) <= np.float64(lo) + 1e-7:  # constant in this node: no sort
                        continue
                    if m <= 24:  # stable insertion sort: same order as mergesort, no allocation
                        for i in range(m):
                            order[i] = i
                        for i in range(1, m):
                            oi = order[i]
                            v = xf[oi]
                            j2 = i - 1
                            while j2 >= 0 and xf[order[j2]] > v:
                                order[j2 + 1] = order[j2]
                                j2 -= 1
                            order[j2 + 1] = oi
                    else:
                        order[:m] = np.argsort(xf[:m], kind="mergesort")
                    for i in range(m):
                        sid[i] = idx[s + order[i]]
                        xs[i] = xf[order[i]]
                for c in range(K):
                    L[c] = 0.0
                nl = 0.0
                for i in range(m - 1):
                    j = sid[i]
                    nl += W[j]
                    for c in range(K):
                        L[c] += Y[j, c]
                    if xs[i + 1] <= xs[i] + 1e-7:
                        continue
                    if i + 1 < min_leaf or m - i - 1 < min_leaf:
                        continue
                    nr = wn - nl
                    if crit == 0:
                        sql = 0.0
                        sqr = 0.0
                        for c in range(K):
                            sql += L[c] * L[c]
                            r = tot[c] - L[c]
                            sqr += r * r
                        proxy = -nr * (1.0 - sqr / (nr * nr)) - nl * (1.0 - sql / (nl * nl))
                    else:
                        il = 0.0
                        ir = 0.0
                        for c in range(K):
                            if L[c] > 0.0:
                                pc = L[c] / nl
                                il -= pc * np.log2(pc)
                            r = tot[c] - L[c]
                            if r > 0.0:
                                pc = r / nr
                                ir -= pc * np.log2(pc)
                        proxy = -nr * ir - nl * il
                    if proxy > best:
                        best = proxy
                        best_f = f
                        thr = xs[i] / 2.0 + xs[i + 1] / 2.0
                        if thr == xs[i + 1] or np.isinf(thr):
                            thr = xs[i]
                        best_thr = thr
            if best_f < 0:
                continue
            feature[node] = best_f
            threshold[node] = best_thr
            # stable partition of idx[s:e]: left block then right block
            nleft = 0
            nright = 0
            for i in range(s, e):
                j = idx[i]
                if np.float64(X[j, best_f]) <= best_thr:
                    idx[s + nleft] = j
                    nleft += 1
                else:
                    tmp[nright] = j
                    nright += 1
            for i in range(nright):
                idx[s + nleft + i] = tmp[i]
            if presort:  # stable partition of every feature's sorted slice (keeps value order)
                for i in range(s, s + nleft):
                    goes_left[idx[i]] = True
                for i in range(s + nleft, e):
                    goes_left[idx[i]] = False
                for f in range(d):
                    a = s
                    b = 0
                    for i in range(s, e):
                        jj = P[f, i]
                        if goes_left[jj]:
                            P[f, a] = jj
                            a += 1
                        else:
                            tmp[b] = jj
                            b += 1
                    for i in range(b):
                        P[f, a + i] = tmp[i]
            # push right first so the left child is numbered first (pre-order, like scikit-learn)
            st_start[sp] = s + nleft
            st_end[sp] = e
            st_parent[sp] = node
            st_left[sp] = False
            st_depth[sp] = dep + 1
            sp += 1
            st_start[sp] = s
            st_end[sp] = s + nleft
            st_parent[sp] = node
            st_left[sp] = True
            st_depth[sp] = dep + 1
            sp += 1
        return (
            feature[:count],
            threshold[:count],
            left[:count],
            right[:count],
            values[:count],
            nsamp[:count],
            depth[:count],
        )


def build_tree(
    X,
    Y,
    pseudo,
    k: int = 5,
    min_samples_leaf: int = 1,
    criterion: str = "gini",
    max_depth: int | None = None,
    backend: str = "auto",
    sample_weight=None,
    presort="auto",
) -> FlatTree:
    """Grow a soft-label CART.

    Parameters
    ----------
    X : array (n, d)
        Features; cast to float32 like scikit-learn.
    Y : array (n, K)
        Label vectors (mixed labels); a node's class proportions are their mean.
    pseudo : int array (n,) or (n, P)
        Pseudo-labels for the purity stop: a node whose pseudo-labels are all equal is a leaf. With
        P columns, a node is a leaf when it is pure in any one of them.
    k : int
        A node is split only if it holds more than ``k`` samples (Alg. 2 of the ReDT paper).
    min_samples_leaf : int
        Minimum samples per child (1 in the paper).
    criterion : {"gini", "entropy"}
    max_depth : int or None
    backend : {"auto", "numba", "numpy"}
    presort : bool or "auto"
        numba only: sort every feature once at the root and partition the sorted lists at each
        split (O(n d) per level, no per-node sorting; needs ``8 n d`` bytes). "auto" = when
        ``n * d <= PRESORT_MAX_ENTRIES``. The tree is the same either way.
    sample_weight : array (n,) or None
        Weights multiply the label vectors; node sizes in the impurity are weight sums, while
        ``k`` and ``min_samples_leaf`` count samples (as scikit-learn's ``min_samples_split``).
    """
    X = np.asfortranarray(X, dtype=np.float32)  # column reads in the split search are local
    Y = np.asarray(Y, dtype=np.float64)
    W = np.ones(len(Y)) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if sample_weight is not None:
        Y = Y * W[:, None]
    Y = np.ascontiguousarray(Y)
    W = np.ascontiguousarray(W)
    pseudo = np.ascontiguousarray(pseudo, dtype=np.int64)
    if pseudo.ndim == 1:
        pseudo = pseudo[:, None]
    crit = CRITERIA[criterion]
    md = np.iinfo(np.int64).max if max_depth is None else int(max_depth)
    if backend == "auto":
        backend = "numba" if HAVE_NUMBA else "numpy"
    if backend == "numba":
        if not HAVE_NUMBA:
            raise ImportError("backend='numba' needs numba; use backend='numpy'")
        if presort == "auto":
            presort = X.shape[0] * X.shape[1] <= PRESORT_MAX_ENTRIES
        out = _build_numba(X, Y, W, pseudo, int(k), int(min_samples_leaf), crit, md, bool(presort))
    elif backend == "numpy":
        out = _build_numpy(X, Y, W, pseudo, int(k), int(min_samples_leaf), crit, md)
    else:
        raise ValueError(f"backend must be 'auto', 'numba' or 'numpy', got {backend!r}")
    return FlatTree(*[np.array(a) for a in out])
