"""Numba kernels of the TnT fit (private to ``treebench.methods.tnt``).

* :func:`encode_features` rank-codes every feature once per fit (``codes[f, i]`` = rank of ``X[i,
  f]`` among the distinct values of feature ``f``; column-major, uint8/uint16/int32).
* :func:`build_micro` grows one micro CART on a subset given as an index array into the whole
  training set (no copy of ``X``): exact best split over all features (gini, thresholds at the
  midpoint between the two adjacent distinct values of the node, as scikit-learn's
  ``BestSplitter``), found with a per-node class histogram over the feature's codes (or a sort for
  tiny nodes), constant features are passed down and skipped. The tree is then cost-complexity
  pruned exactly (minimal subtree of the weakest-link sequence, by dynamic programming). Growth
  stops early (branch and bound) at nodes that are provably leaves of the pruned tree or provably
  below a pruned ancestor, so the pruned tree is the same as scikit-learn's
  ``DecisionTreeClassifier(ccp_alpha=...)`` up to tie-breaking between equally good splits
  (scikit-learn visits features in a random order, this code in a seeded one). With integral weights
  the larger child's histograms are its parent's minus the smaller child's (exact sums).
* :func:`live_infer` / :func:`tree_route`: label predicted by the live graph (graph nodes with their
  substitute micro trees) from a start node, and the branch a micro tree sends samples to, for index
  arrays of training samples.

All kernels are single-threaded; ``build_micro`` releases the GIL (the fit runs independent micro
trees in a thread pool).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_EPS = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------- feature coding


@njit(cache=True)
def _transpose_block(X, f0, f1, XT):
    """``XT[f - f0, i] = X[i, f]`` for the columns ``f0 <= f < f1``."""
    for i in range(X.shape[0]):
        for f in range(f0, f1):
            XT[f - f0, i] = X[i, f]


@njit(cache=True)
def _column_codes(col, codes_row, vals_buf):
    """Codes of one column and its sorted distinct values (written to ``vals_buf``).

    Returns #values.
    """
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


def encode_features(X):
    """Rank-code the columns of float32 ``X`` (n, d).

    Returns ``codes`` (d, n) of the smallest unsigned dtype that fits, ``nbins`` (d,), ``vals``
    (flat float32 distinct values of all features, ascending per feature) and ``voff`` (d + 1
    offsets). Columns are transposed and coded a block at a time, into a code array widened only
    when a column needs it, so no full transposed or int32 copy of ``X`` is made.
    """
    X = np.ascontiguousarray(X, dtype=np.float32)
    n, d = X.shape
    blk = 16
    XT = np.empty((min(blk, d), n), dtype=np.float32)
    row = np.empty(n, dtype=np.int32)
    vbuf = np.empty(n, dtype=np.float32)
    codes = np.empty((d, n), dtype=np.uint8)
    nbins = np.zeros(d, dtype=np.int64)
    vals = []
    for f0 in range(0, d, blk):
        f1 = min(d, f0 + blk)
        _transpose_block(X, f0, f1, XT)
        for f in range(f0, f1):
            k = _column_codes(XT[f - f0], row, vbuf)
            if k > np.iinfo(codes.dtype).max + 1:
                codes = codes.astype(np.uint16 if k <= 65536 else np.int32)
            codes[f] = row
            nbins[f] = k
            vals.append(vbuf[:k].copy())
    voff = np.zeros(d + 1, dtype=np.int64)
    voff[1:] = np.cumsum(nbins)
    vals = np.concatenate(vals) if d else np.zeros(0, dtype=np.float32)
    return codes, nbins, vals, voff


# ----------------------------------------------------------------------------- micro CART


@njit(cache=True)
def _gather_row(crow, rows, out):
    for t in range(rows.shape[0]):
        out[t] = crow[rows[t]]


@njit(cache=True)
def _splittable(m, W, g, tau, min_leaf):
    """Whether a node is split.

    Impure, big enough, and weighted impurity not below the penalty (a node with R(t) < alpha is a
    leaf of the pruned tree whatever grows below it).
    """
    return not (m < 2 * min_leaf or g <= _EPS or W * g < tau * (1.0 - 1e-9))


@njit(cache=True)
def _block_stats(Y, Wt, s, e, K, cnt):
    """Return block ``[s, e)``'s total weight and gini impurity, exactly as a node computes them."""
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
    """Lower bound of the pruned cost ``R(T_t) + tau |T_t|`` of any subtree at a node.

    A leaf costs ``R(t) + tau``, two or more leaves cost at least ``2 tau``.
    """
    return tau + min(W * g, tau)


@njit(cache=True)
def _geq(a, b):
    """Return ``a >= b`` with a relative safety margin.

    A bound is only used when it holds beyond rounding.
    """
    return a - b > 1e-9 * (abs(a) + abs(b))


@njit(cache=True)
def _finish(t, c, par, left, right, wsum, imp, cost, done, tau):
    """Record the pruned cost ``c`` of the complete subtree at ``t``.

    Complete its ancestors in turn.
    """
    cost[t] = c
    done[t] = True
    p = par[t]
    while p >= 0:
        a, b = left[p], right[p]
        if not (done[a] and done[b]):
            return
        cost[p] = min(wsum[p] * imp[p] + tau, cost[a] + cost[b])
        done[p] = True
        p = par[p]


@njit(cache=True)
def _threshold(t, par, left, right, wsum, imp, lbv, cost, done, tau, path):
    """Cost of the subtree at ``t`` at or above which some ancestor is provably pruned to a leaf.

    Along the path from the root, ``T_child = min(T_parent, R_parent + tau) - sibling``, the sibling
    counted at its pruned cost once its subtree is complete and at its lower bound before.
    """
    k = 0
    u = t
    while par[u] >= 0:
        path[k] = u
        k += 1
        u = par[u]
    T = np.inf
    for j in range(k - 1, -1, -1):
        c = path[j]
        p = par[c]
        sib = right[p] if left[p] == c else left[p]
        est = cost[sib] if done[sib] else lbv[sib]
        T = min(T, wsum[p] * imp[p] + tau) - est
    return T


@njit(cache=True)
def _both_weighted(wl, W):
    """Both sides of a split carry weight beyond the rounding of the node's total ``W``."""
    eps = 1e-12 * W
    return wl > eps and W - wl > eps


@njit(cache=True)
def _scan(hn, hw, off, B, K, m, W, sq, cnt, cl, min_leaf, best, clear):
    """Return the best split of one feature from its histogram, if better than ``best``.

    The histogram holds ``hn[off + b]`` samples and ``hw[(off + b) * K + k]`` weight of class
    ``k`` in bin ``b``. Returns ``(best, left bin, right bin, #non-empty bins)``, the bins -1 if
    not better. ``clear`` zeroes the histogram on the way.

    The non-empty bins are scanned in code order; the sums of squared class weights left and right
    are updated incrementally, so a candidate split costs O(1) and a bin O(#classes in it).
    """
    for k in range(K):
        cl[k] = 0.0
    wl = 0.0
    sql = 0.0
    sqr = sq
    nl = 0
    prev = -1
    nonempty = 0
    b1 = -1
    b2 = -1
    for b in range(B):
        c = hn[off + b]
        if c == 0:
            continue
        # a side of (numerically) zero weight: TnT's indifferent samples weigh 0, so a side can
        # hold samples and no weight; its Gini term is undefined and the split gains nothing
        if prev >= 0 and nl >= min_leaf and m - nl >= min_leaf and _both_weighted(wl, W):
            p = sql / wl + sqr / (W - wl)
            if p > best:
                best = p
                b1 = prev
                b2 = b
        base = (off + b) * K
        for k in range(K):
            h = hw[base + k]
            if h != 0.0:
                a = cl[k]
                sql += h * (2.0 * a + h)
                sqr += h * (h - 2.0 * (cnt[k] - a))
                cl[k] = a + h
                wl += h
                if clear:
                    hw[base + k] = 0.0
        nl += c
        if clear:
            hn[off + b] = 0
        prev = b
        nonempty += 1
    return best, b1, b2, nonempty


@njit(cache=True, nogil=True)
def build_micro(codes, nbins, vals, voff, feats0, rows, y, w, K, tau, min_leaf):
    """Grow and cost-complexity prune a gini CART on the training samples ``rows``.

    ``y`` (targets 0..K-1) and ``w`` (weights > 0) are aligned with ``rows``. ``tau`` is the pruning
    penalty per leaf in absolute weight units (``ccp_alpha * sum(w)``); ``tau = 0`` grows to purity
    without pruning. Returns ``(feature, threshold, left, right, label, node_weight)`` of the pruned
    tree in preorder (``left = right = -1`` at leaves, ``feature = -2`` there, as scikit-learn).

    The codes of the subset are copied once into a local (feature, position) buffer that is
    partitioned together with the targets at every split (as scikit-learn partitions its sample
    array), so every histogram pass reads contiguous memory. Integral weights make every sum exact
    and the order inside a block irrelevant: a split then only swaps the misplaced samples, and the
    larger child, grown next, takes its parent's histograms minus the smaller child's.
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
    # the codes of the subset are copied when the root is evaluated (not at all if it is a leaf)
    gathered = False
    Y = y.astype(np.int64)
    Wt = w.astype(np.float64)
    tmpc = np.empty(n, codes.dtype)
    tmpy = np.empty(n, np.int64)
    tmpw = np.empty(n, np.float64)
    dest = np.empty(n, np.int64)
    tc = np.empty(n, np.int64)
    # per node: block [nd_s, nd_e), depth, parent, lower bound of its pruned cost, whether it may be
    # split (known when it is created), and once its subtree is complete, that subtree's pruned cost
    nd_s = np.empty(cap, np.int64)
    nd_e = np.empty(cap, np.int64)
    nd_d = np.empty(cap, np.int64)
    par = np.empty(cap, np.int64)
    lbv = np.empty(cap, np.float64)
    nd_x = np.empty(cap, np.bool_)
    cost = np.empty(cap, np.float64)
    done = np.zeros(cap, np.bool_)
    stack = np.empty(n + 1, np.int64)
    path = np.empty(n + 1, np.int64)
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
    # With integral weights (counts) every sum below is exact, so the order of the samples in a
    # block does not matter: a block is split by swapping only the misplaced samples, and the
    # histograms of a node's larger child are its own minus those of the smaller one. Each feature
    # has a slot for the histogram of the current node; ``hnode`` is the node whose derived
    # histograms are in the slots (for the features flagged in ``hv``).
    exact = True
    for i in range(n):
        if Wt[i] != np.floor(Wt[i]):
            exact = False
            break
    if exact and Wt.sum() >= 2.0**52:
        exact = False
    hoff = np.zeros(nf0 + 1, np.int64)
    for q in range(nf0):  # a slot only for features whose histograms are ever kept (B (K + 1) <= n)
        B = nbins[feats0[q]]
        hoff[q + 1] = hoff[q] + (B if B * (K + 1) <= n else 0)
    ns = hoff[nf0] if exact else 0
    hn_s = np.empty(ns, np.int64)
    hw_s = np.empty(ns * K, np.float64)
    hv = np.zeros(nf0, np.bool_)
    stored = np.zeros(nf0, np.bool_)
    hnode = -1
    swp = np.empty(n, np.int64)
    cnt = np.zeros(K, np.float64)
    cl = np.zeros(K, np.float64)
    nd_s[0], nd_e[0], nd_d[0], par[0], nd_x[0] = 0, n, 0, -1, True
    lbv[0] = 0.0
    node_count = 1
    stack[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack[sp]
        s, e, depth = nd_s[node], nd_e[node], nd_d[node]
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
        R = W * g
        # a node whose weighted impurity is below the penalty (R(t) < alpha) is a pruned leaf
        if not nd_x[node] or not _splittable(m, W, g, tau, min_leaf):
            _finish(node, R + tau, par, left, right, wsum, imp, cost, done, tau)
            continue
        T = _threshold(node, par, left, right, wsum, imp, lbv, cost, done, tau, path)
        if tau > 0.0 and _geq(lbv[node], T):
            _finish(node, R + tau, par, left, right, wsum, imp, cost, done, tau)
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
            if not gathered:
                _gather_row(codes[feats0[q]], rows, crow)
            if B <= 16 * m:
                if node == hnode and hv[q]:
                    off = hoff[q]
                    best, b1, b2, nonempty = _scan(
                        hn_s, hw_s, off, B, K, m, W, sq, cnt, cl, min_leaf, best, False
                    )
                    stored[q] = True
                elif exact and B * (K + 1) <= m:
                    off = hoff[q]
                    hn_s[off : off + B] = 0
                    hw_s[off * K : (off + B) * K] = 0.0
                    for i in range(s, e):
                        b = crow[i]
                        hn_s[off + b] += 1
                        hw_s[(off + b) * K + Y[i]] += Wt[i]
                    best, b1, b2, nonempty = _scan(
                        hn_s, hw_s, off, B, K, m, W, sq, cnt, cl, min_leaf, best, False
                    )
                    stored[q] = True
                else:
                    for i in range(s, e):
                        b = crow[i]
                        hn[b] += 1
                        hw[b * K + Y[i]] += Wt[i]
                    best, b1, b2, nonempty = _scan(
                        hn, hw, 0, B, K, m, W, sq, cnt, cl, min_leaf, best, True
                    )
                    stored[q] = False
                if b1 >= 0:
                    bq = q
                    bcl = b1
                    bcr = b2
                if nonempty > 1:
                    fbuf[depth, nconst] = q
                    nconst += 1
            else:
                stored[q] = False
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
                    if c != prevc and t >= min_leaf and m - t >= min_leaf and _both_weighted(wl, W):
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
        gathered = True
        if bq < 0:
            _finish(node, R + tau, par, left, right, wsum, imp, cost, done, tau)
            continue
        crow = Lc[bq]
        nleft = 0
        for i in range(s, e):
            if crow[i] <= bcl:
                nleft += 1
        mid = s + nleft
        nsw = 0
        if exact:
            # swap the samples of [s, mid) going right with those of [mid, e) going left
            for i in range(s, mid):
                if crow[i] > bcl:
                    dest[nsw] = i
                    nsw += 1
            j = 0
            for i in range(mid, e):
                if crow[i] <= bcl:
                    swp[j] = i
                    j += 1
            for j in range(nsw):
                a, b = dest[j], swp[j]
                Y[a], Y[b] = Y[b], Y[a]
                Wt[a], Wt[b] = Wt[b], Wt[a]
        else:
            # stable partition (codes <= bcl to the left) of the targets and weights
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
        # Branch and bound (exact): the subtree below this node matters only if this node and all
        # its ancestors survive pruning. ``T`` is the cost above which some ancestor is provably
        # pruned to a leaf (ancestors' R + tau minus the siblings along the path: their pruned cost
        # once their subtree is complete, a lower bound before); the node itself is provably a leaf
        # if R + tau <= the children's lower bounds. Either way it becomes a leaf now.
        WL, gL = _block_stats(Y, Wt, s, mid, K, cl)
        WR, gR = _block_stats(Y, Wt, mid, e, K, cl)
        lbL = _cost_lb(WL, gL, tau)
        lbR = _cost_lb(WR, gR, tau)
        if tau > 0.0 and (_geq(lbL + lbR, R + tau) or _geq(min(R + tau, lbL + lbR), T)):
            _finish(node, R + tau, par, left, right, wsum, imp, cost, done, tau)
            continue
        bf = feats0[bq]
        feat[node] = bf
        thr[node] = vals[voff[bf] + bcl] / 2.0 + vals[voff[bf] + bcr] / 2.0
        TL = min(T, R + tau) - lbR
        TR = min(T, R + tau) - lbL
        x_left = _splittable(mid - s, WL, gL, tau, min_leaf) and not (tau > 0.0 and _geq(lbL, TL))
        x_right = _splittable(e - mid, WR, gR, tau, min_leaf) and not (tau > 0.0 and _geq(lbR, TR))
        # the codes of every feature still in use below this node are partitioned only if a child
        # will be split
        if x_left or x_right:
            for qq in range(nconst):
                row = Lc[fbuf[depth, qq]]
                if exact:
                    for j in range(nsw):
                        a, b = dest[j], swp[j]
                        row[a], row[b] = row[b], row[a]
                else:
                    for i in range(s, e):
                        tmpc[dest[i - s]] = row[i]
                    row[s:e] = tmpc[:m]
        cL = node_count
        cR = node_count + 1
        node_count += 2
        left[node] = cL
        right[node] = cR
        nd_s[cL], nd_e[cL], nd_d[cL], par[cL], lbv[cL], nd_x[cL] = (
            s,
            mid,
            depth + 1,
            node,
            lbL,
            x_left,
        )
        nd_s[cR], nd_e[cR], nd_d[cR], par[cR], lbv[cR], nd_x[cR] = (
            mid,
            e,
            depth + 1,
            node,
            lbR,
            x_right,
        )
        # the larger child next, with the histograms of its parent minus those of the smaller child
        if mid - s <= e - mid:
            small, big, ss, se, mbig, x_big = cL, cR, s, mid, e - mid, x_right
        else:
            small, big, ss, se, mbig, x_big = cR, cL, mid, e, mid - s, x_left
        stack[sp] = small
        stack[sp + 1] = big
        sp += 2
        if exact and x_big:
            for qq in range(nconst):
                q = fbuf[depth, qq]
                B = nbins[feats0[q]]
                hv[q] = stored[q] and B <= 16 * mbig
                if hv[q]:
                    off = hoff[q]
                    crow = Lc[q]
                    for i in range(ss, se):
                        b = crow[i]
                        hn_s[off + b] -= 1
                        hw_s[(off + b) * K + Y[i]] -= Wt[i]
            hnode = big
    return _prune_compact(feat, thr, left, right, lab, wsum, imp, node_count, tau)


@njit(cache=True)
def _prune_compact(feat, thr, left, right, lab, wsum, imp, nc, tau):
    """Return the minimal cost-complexity subtree, renumbered.

    Nodes are in preorder: children after parents.
    """
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
