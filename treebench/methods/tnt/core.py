"""Numba kernels of the TnT fit (private to ``treebench.methods.tnt``).

* :func:`encode_features` rank-codes every feature once per fit (``codes[f, i]`` = rank of ``X[i, f]`` among
  the distinct values of feature ``f``; column-major, uint8/uint16/int32).
* :func:`build_micro` grows one micro CART on a subset given as an index array into the whole training
  set (no copy of ``X``): exact best split over all features (gini, thresholds at the midpoint between the
  two adjacent distinct values of the node, as scikit-learn's ``BestSplitter``), found with a per-node class
  histogram over the feature's codes (or a sort for tiny nodes), constant features are passed down and
  skipped. The tree is then cost-complexity pruned exactly (minimal subtree of the weakest-link sequence,
  by dynamic programming). Growth stops early at nodes whose weighted impurity is below the pruning
  penalty: such a node is a leaf of the pruned tree whatever grows below it, so the pruned tree is the same
  as scikit-learn's ``DecisionTreeClassifier(ccp_alpha=...)`` up to tie-breaking between equally good
  splits (scikit-learn visits features in a random order, this code in index order).
* :func:`live_infer` / :func:`tree_route`: label predicted by the live graph (graph nodes with their
  substitute micro trees) from a start node, and the branch a micro tree sends samples to, for index
  arrays of training samples.

All kernels are single-threaded; ``build_micro`` releases the GIL (the fit runs independent micro trees
in a thread pool).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_EPS = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------- feature coding


@njit(cache=True)
def _transpose(X, XT):
    n, d = X.shape
    for i0 in range(0, n, 64):
        i1 = min(n, i0 + 64)
        for i in range(i0, i1):
            for f in range(d):
                XT[f, i] = X[i, f]


@njit(cache=True)
def _column_codes(col, codes_row, vals_buf):
    """Codes of one column and its sorted distinct values (written to ``vals_buf``); returns #values."""
    n = col.shape[0]
    lo, hi = col[0], col[0]
    integral = True
    for i in range(n):
        v = col[i]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
        if integral and v != np.floor(v):
            integral = False
    if integral and hi - lo < 65536.0:
        span = int(hi - lo) + 1
        rank = np.zeros(span, np.int64)
        base = int(lo)
        for i in range(n):
            rank[int(col[i]) - base] = 1
        k = 0
        for v in range(span):
            if rank[v]:
                vals_buf[k] = v + base
                rank[v] = k
                k += 1
        for i in range(n):
            codes_row[i] = rank[int(col[i]) - base]
        return k
    u = np.unique(col)
    k = u.shape[0]
    vals_buf[:k] = u
    pos = np.searchsorted(u, col)
    for i in range(n):
        codes_row[i] = pos[i]
    return k


@njit(cache=True)
def _encode_all(XT, codes, vals_all, nbins):
    d, n = XT.shape
    for f in range(d):
        nbins[f] = _column_codes(XT[f], codes[f], vals_all[f])


def encode_features(X):
    """Rank-code the columns of float32 ``X`` (n, d).

    Returns ``codes`` (d, n) of the smallest unsigned dtype that fits, ``nbins`` (d,), ``vals`` (flat
    float32 distinct values of all features, ascending per feature) and ``voff`` (d + 1 offsets).
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    n, d = X.shape
    XT = np.empty((d, n), dtype=np.float32)
    _transpose(X, XT)
    codes = np.empty((d, n), dtype=np.int32)
    nbins = np.zeros(d, dtype=np.int64)
    vals_all = np.empty((d, n), dtype=np.float32)
    _encode_all(XT, codes, vals_all, nbins)
    del XT
    voff = np.zeros(d + 1, dtype=np.int64)
    voff[1:] = np.cumsum(nbins)
    vals = np.concatenate([vals_all[f, : nbins[f]] for f in range(d)]) if d else np.zeros(0)
    del vals_all
    mb = int(nbins.max()) if d else 1
    dtype = np.uint8 if mb <= 256 else np.uint16 if mb <= 65536 else np.int32
    return np.ascontiguousarray(codes.astype(dtype)), nbins, vals.astype(np.float32), voff


# ----------------------------------------------------------------------------- micro CART


@njit(cache=True)
def _gather_codes(codes, feats0, rows, Lc):
    for q in range(feats0.shape[0]):
        crow = codes[feats0[q]]
        out = Lc[q]
        for t in range(rows.shape[0]):
            out[t] = crow[rows[t]]


@njit(cache=True)
def _splittable(m, W, g, tau, min_leaf):
    """Whether a node is split: impure, big enough, and weighted impurity not below the penalty (a
    node with R(t) < alpha is a leaf of the pruned tree whatever grows below it)."""
    return not (m < 2 * min_leaf or g <= _EPS or W * g < tau * (1.0 - 1e-9))


@njit(cache=True)
def _block_stats(Y, Wt, s, e, K, cnt):
    """Total weight and gini impurity of the block ``[s, e)``, computed exactly as the node computes it."""
    for k in range(K):
        cnt[k] = 0.0
    for i in range(s, e):
        cnt[Y[i]] += Wt[i]
    W = 0.0
    sq = 0.0
    for k in range(K):
        W += cnt[k]
        sq += cnt[k] * cnt[k]
    g = 1.0 - sq / (W * W) if W > 0 else 0.0
    return W, g


@njit(cache=True)
def _cost_lb(W, g, tau):
    """Lower bound of the pruned cost ``R(T_t) + tau |T_t|`` of any subtree at a node: a leaf costs
    ``R(t) + tau``, two or more leaves cost at least ``2 tau``."""
    return tau + min(W * g, tau)


@njit(cache=True)
def _geq(a, b):
    """``a >= b`` with a relative safety margin (a bound is only used when it holds beyond rounding)."""
    return a - b > 1e-9 * (abs(a) + abs(b))


@njit(cache=True, nogil=True)
def build_micro(codes, nbins, vals, voff, feats0, rows, y, w, K, tau, min_leaf):
    """Grow and cost-complexity prune a gini CART on the training samples ``rows``.

    ``y`` (targets 0..K-1) and ``w`` (weights > 0) are aligned with ``rows``. ``tau`` is the pruning penalty
    per leaf in absolute weight units (``ccp_alpha * sum(w)``); ``tau = 0`` grows to purity without
    pruning. Returns ``(feature, threshold, left, right, label, node_weight)`` of the pruned tree in
    preorder (``left = right = -1`` at leaves, ``feature = -2`` there, as scikit-learn).

    The codes of the subset are copied once into a local (feature, position) buffer that is partitioned
    together with the targets at every split (as scikit-learn partitions its sample array), so every
    histogram pass reads contiguous memory and needs no extra buffer per node.
    """
    n = rows.shape[0]
    nf0 = feats0.shape[0]
    cap = 2 * n + 1
    feat = np.full(cap, -2, np.int64)
    thr = np.zeros(cap, np.float64)
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    wsum = np.zeros(cap, np.float64)
    imp = np.zeros(cap, np.float64)
    lab = np.zeros(cap, np.int64)
    Lc = np.empty((nf0, n), codes.dtype)
    _gather_codes(codes, feats0, rows, Lc)
    Y = y.astype(np.int64)
    Wt = w.astype(np.float64)
    tmpc = np.empty(n, codes.dtype)
    tmpy = np.empty(n, np.int64)
    tmpw = np.empty(n, np.float64)
    dest = np.empty(n, np.int64)
    tc = np.empty(n, np.int64)
    st_s = np.empty(n + 1, np.int64)
    st_e = np.empty(n + 1, np.int64)
    st_p = np.empty(n + 1, np.int64)
    st_l = np.empty(n + 1, np.bool_)
    st_d = np.empty(n + 1, np.int64)
    st_x = np.empty(n + 1, np.bool_)
    st_t = np.empty(n + 1, np.float64)
    # fbuf[k, :nfb[k]]: rows of Lc (features) not constant at the last node of depth k (DFS path)
    fbuf = np.empty((32, max(nf0, 1)), np.int64)
    nfb = np.zeros(32, np.int64)
    all_q = np.arange(nf0)
    maxb = 1
    for q in range(nf0):
        if nbins[feats0[q]] > maxb:
            maxb = nbins[feats0[q]]
    hw = np.zeros(maxb * K, np.float64)
    hn = np.zeros(maxb, np.int64)
    cnt = np.zeros(K, np.float64)
    cl = np.zeros(K, np.float64)
    node_count = 0
    st_s[0], st_e[0], st_p[0], st_l[0], st_d[0], st_x[0] = 0, n, -1, False, 0, True
    st_t[0] = np.inf
    sp = 1
    while sp > 0:
        sp -= 1
        s, e, par, isl, depth, expandable, T = (
            st_s[sp],
            st_e[sp],
            st_p[sp],
            st_l[sp],
            st_d[sp],
            st_x[sp],
            st_t[sp],
        )
        node = node_count
        node_count += 1
        if par >= 0:
            if isl:
                left[par] = node
            else:
                right[par] = node
        for k in range(K):
            cnt[k] = 0.0
        for i in range(s, e):
            cnt[Y[i]] += Wt[i]
        W = 0.0
        sq = 0.0
        best_k = 0
        for k in range(K):
            W += cnt[k]
            sq += cnt[k] * cnt[k]
            if cnt[k] > cnt[best_k]:
                best_k = k
        g = 1.0 - sq / (W * W) if W > 0 else 0.0
        wsum[node] = W
        imp[node] = g
        lab[node] = best_k
        m = e - s
        # a node with weighted impurity below the penalty is a leaf of the pruned tree (R(t) < alpha)
        if not expandable or not _splittable(m, W, g, tau, min_leaf):
            continue
        if depth >= fbuf.shape[0]:
            nb2 = np.empty((2 * fbuf.shape[0], fbuf.shape[1]), np.int64)
            nb2[: fbuf.shape[0]] = fbuf
            fbuf = nb2
            nfb2 = np.zeros(2 * nfb.shape[0], np.int64)
            nfb2[: nfb.shape[0]] = nfb
            nfb = nfb2
        if depth == 0:
            plist = all_q
            pn = nf0
        else:
            plist = fbuf[depth - 1]
            pn = nfb[depth - 1]
        best = -np.inf
        bq = -1
        bcl = 0
        bcr = 0
        nconst = 0
        for qq in range(pn):
            q = plist[qq]
            B = nbins[feats0[q]]
            crow = Lc[q]
            if B <= 16 * m:
                for i in range(s, e):
                    b = crow[i]
                    hn[b] += 1
                    hw[b * K + Y[i]] += Wt[i]
                # scan the non-empty bins in code order; sum of squared class weights left/right are
                # updated incrementally, so a candidate split costs O(1) and a bin O(#classes in it)
                for k in range(K):
                    cl[k] = 0.0
                wl = 0.0
                sql = 0.0
                sqr = sq
                nl = 0
                prev = -1
                nonempty = 0
                for b in range(B):
                    c = hn[b]
                    if c == 0:
                        continue
                    if prev >= 0 and nl >= min_leaf and m - nl >= min_leaf:
                        p = sql / wl + sqr / (W - wl)
                        if p > best:
                            best = p
                            bq = q
                            bcl = prev
                            bcr = b
                    for k in range(K):
                        h = hw[b * K + k]
                        if h != 0.0:
                            a = cl[k]
                            sql += h * (2.0 * a + h)
                            sqr += h * (h - 2.0 * (cnt[k] - a))
                            cl[k] = a + h
                            wl += h
                            hw[b * K + k] = 0.0
                    nl += c
                    hn[b] = 0
                    prev = b
                    nonempty += 1
                if nonempty > 1:
                    fbuf[depth, nconst] = q
                    nconst += 1
            else:
                for t in range(m):
                    tc[t] = crow[s + t]
                order = np.argsort(tc[:m], kind="mergesort")
                if tc[order[0]] == tc[order[m - 1]]:
                    continue
                fbuf[depth, nconst] = q
                nconst += 1
                for k in range(K):
                    cl[k] = 0.0
                wl = 0.0
                sql = 0.0
                sqr = sq
                prevc = tc[order[0]]
                for t in range(m):
                    o = order[t]
                    c = tc[o]
                    if c != prevc and t >= min_leaf and m - t >= min_leaf:
                        p = sql / wl + sqr / (W - wl)
                        if p > best:
                            best = p
                            bq = q
                            bcl = prevc
                            bcr = c
                    k = Y[s + o]
                    h = Wt[s + o]
                    a = cl[k]
                    sql += h * (2.0 * a + h)
                    sqr += h * (h - 2.0 * (cnt[k] - a))
                    cl[k] = a + h
                    wl += h
                    prevc = c
        nfb[depth] = nconst
        if bq < 0:
            continue
        # stable partition of the node's block (codes <= bcl to the left) for the targets and weights
        crow = Lc[bq]
        nleft = 0
        for i in range(s, e):
            if crow[i] <= bcl:
                nleft += 1
        mid = s + nleft
        lo = 0
        nr = nleft
        for i in range(s, e):  # destination of every position of the block
            if crow[i] <= bcl:
                dest[i - s] = lo
                lo += 1
            else:
                dest[i - s] = nr
                nr += 1
        for i in range(s, e):
            tmpy[dest[i - s]] = Y[i]
            tmpw[dest[i - s]] = Wt[i]
        Y[s:e] = tmpy[:m]
        Wt[s:e] = tmpw[:m]
        # Branch and bound (exact): the subtree below this node matters only if this node and all its
        # ancestors survive pruning. ``T`` is the cost above which some ancestor is provably pruned to a
        # leaf (ancestors' R + tau minus lower bounds of the siblings along the path); the node itself is
        # provably a leaf if R + tau <= the children's lower bounds. Either way it becomes a leaf now.
        WL, gL = _block_stats(Y, Wt, s, mid, K, cl)
        WR, gR = _block_stats(Y, Wt, mid, e, K, cl)
        lbL = _cost_lb(WL, gL, tau)
        lbR = _cost_lb(WR, gR, tau)
        R = W * g
        if tau > 0.0 and (_geq(lbL + lbR, R + tau) or _geq(min(R + tau, lbL + lbR), T)):
            continue
        bf = feats0[bq]
        feat[node] = bf
        thr[node] = vals[voff[bf] + bcl] / 2.0 + vals[voff[bf] + bcr] / 2.0
        TL = min(T, R + tau) - lbR
        TR = min(T, R + tau) - lbL
        x_left = _splittable(mid - s, WL, gL, tau, min_leaf) and not (tau > 0.0 and _geq(lbL, TL))
        x_right = _splittable(e - mid, WR, gR, tau, min_leaf) and not (tau > 0.0 and _geq(lbR, TR))
        # the codes of every feature still in use below this node are partitioned only if a child will
        # be split
        if x_left or x_right:
            for qq in range(nconst):
                row = Lc[fbuf[depth, qq]]
                for i in range(s, e):
                    tmpc[dest[i - s]] = row[i]
                row[s:e] = tmpc[:m]
        st_s[sp], st_e[sp], st_p[sp], st_l[sp], st_d[sp] = mid, e, node, False, depth + 1
        st_x[sp] = x_right
        st_t[sp] = TR
        sp += 1
        st_s[sp], st_e[sp], st_p[sp], st_l[sp], st_d[sp] = s, mid, node, True, depth + 1
        st_x[sp] = x_left
        st_t[sp] = TL
        sp += 1
    return _prune_compact(feat, thr, left, right, lab, wsum, imp, node_count, tau)


@njit(cache=True)
def _prune_compact(feat, thr, left, right, lab, wsum, imp, nc, tau):
    """Minimal cost-complexity subtree (nodes are in preorder: children after parents), renumbered."""
    leafy = np.zeros(nc, np.bool_)
    if tau > 0.0:
        cost = np.empty(nc, np.float64)
        for t in range(nc - 1, -1, -1):
            as_leaf = wsum[t] * imp[t] + tau
            if left[t] < 0:
                cost[t] = as_leaf
            else:
                sub = cost[left[t]] + cost[right[t]]
                if as_leaf <= sub:
                    leafy[t] = True
                    cost[t] = as_leaf
                else:
                    cost[t] = sub
    new = np.full(nc, -1, np.int64)
    stack = np.empty(nc + 1, np.int64)
    stack[0] = 0
    sp = 1
    k = 0
    order = np.empty(nc, np.int64)
    while sp > 0:
        sp -= 1
        t = stack[sp]
        new[t] = k
        order[k] = t
        k += 1
        if left[t] >= 0 and not leafy[t]:
            stack[sp] = right[t]
            sp += 1
            stack[sp] = left[t]
            sp += 1
    f2 = np.full(k, -2, np.int64)
    t2 = np.zeros(k, np.float64)
    l2 = np.full(k, -1, np.int64)
    r2 = np.full(k, -1, np.int64)
    v2 = np.empty(k, np.int64)
    w2 = np.empty(k, np.float64)
    for i in range(k):
        t = order[i]
        v2[i] = lab[t]
        w2[i] = wsum[t]
        if left[t] >= 0 and not leafy[t]:
            f2[i] = feat[t]
            t2[i] = thr[t]
            l2[i] = new[left[t]]
            r2[i] = new[right[t]]
    return f2, t2, l2, r2, v2, w2


# ----------------------------------------------------------------------------- graph traversal


@njit(cache=True)
def live_infer(X, lf, lt, ll, lr, lv, rd, start, rows):
    """Label of the live graph from node ``start`` for the training samples ``rows``.

    Graph node ids are redirected through ``rd`` to their live substitute (identity if none).
    """
    out = np.empty(rows.shape[0], np.int64)
    s0 = rd[start]
    for i in range(rows.shape[0]):
        r = rows[i]
        cur = s0
        while ll[cur] >= 0:
            if X[r, lf[cur]] > lt[cur]:
                cur = rd[lr[cur]]
            else:
                cur = rd[ll[cur]]
        out[i] = lv[cur]
    return out


@njit(cache=True)
def tree_route(X, feat, thr, left, right, lab, rows):
    """Label of a flat tree (``left < 0`` at leaves) for the samples ``rows`` of ``X``."""
    out = np.empty(rows.shape[0], np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        cur = 0
        while left[cur] >= 0:
            if X[r, feat[cur]] > thr[cur]:
                cur = right[cur]
            else:
                cur = left[cur]
        out[i] = lab[cur]
    return out


@njit(cache=True)
def graph_apply(X, feat, thr, left, right, root):
    """Leaf reached and number of splits visited, for every row of ``X`` (a flat DAG)."""
    n = X.shape[0]
    leaf = np.empty(n, np.int64)
    steps = np.empty(n, np.int64)
    for i in range(n):
        cur = root
        d = 0
        while left[cur] >= 0:
            if X[i, feat[cur]] > thr[cur]:
                cur = right[cur]
            else:
                cur = left[cur]
            d += 1
        leaf[i] = cur
        steps[i] = d
    return leaf, steps
