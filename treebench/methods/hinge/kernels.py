"""Compiled (numba) kernels of Random Hinge Forest / Ferns training. Imported by ``hinge.net``.

* :func:`forest_forward` -- per tree and sample: walk the D decisions, keep the leaf, the first
  minimum-|margin| decision v* and its signed margin r*, and write ``w[leaf] * |r*|`` (per tree, or
  summed over trees).
* :func:`forest_backward` -- the paper's sparse derivatives (Eqs. 11-12): per (sample, tree) only
  ``w[leaf]``, ``t[v*]`` and ``z[f(v*)]`` receive gradient, accumulated into dense arrays;
  :func:`forest_backward_rows` returns the leaf-weight (and optionally the threshold) gradient as
  coalesced rows (sorted unique (tree, leaf) pairs plus their summed K-vectors) instead, at a cost
  independent of the number of leaves.
* :func:`adam_dense` / :func:`adam_rows` -- one Adam step (torch.optim.Adam's arithmetic) on a dense
  gradient, or on a gradient that is zero outside a set of rows: every entry's moments still decay
  and every entry still moves (dense Adam), but the gradient is never materialised.

All loops are single-threaded (``nogil``); the caller runs them on contiguous arrays.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, error_model="numpy")
def forest_forward(z, feats, thr, w, depth, fern, reduce, leaf_out, vstar_out, rstar_out, out):
    """Run the forward pass of a hinge forest or fern on a batch.

    Z [B, F]; feats/thr [M, N] (feats of any integer type); w [M, L, K]; out [B, 1, K] (reduce:
    summed over trees, zeroed by the caller) or [B, M, K]. Trees: heap nodes (children 2g+1,
    2g+2); ferns: node = level. Right iff r > 0; strict < keeps the shallower decision on |r| ties.
    Tree-major (one tree's arrays stay cached) and level-synchronous over the batch: the samples'
    walks are independent, so their memory loads overlap instead of forming one dependent chain
    per sample. Ferns: :func:`_fern_forward`. Node, feature and sample indices are unsigned
    (:func:`_u`): numba then emits no negative-index wraparound per load (~2x on the tree walk).
    """
    if fern:
        _fern_forward(z, feats, thr, w, depth, reduce, leaf_out, vstar_out, rstar_out, out)
        return
    B = z.shape[0]
    F = z.shape[1]
    M = feats.shape[0]
    g = np.empty(B, np.uint64)
    best = np.empty(B, z.dtype)
    rbest = np.empty(B, z.dtype)
    vbest = np.empty(B, np.uint64)
    zf = z.reshape(-1)
    one = _u(1)
    two = _u(2)
    uF = _u(F)
    for t in range(M):
        f = feats[t]
        th = thr[t]
        _start_walks(z, f[0], th[0], g, best, rbest, vbest)
        for _ in range(depth):
            for b in range(B):
                gb = g[b]
                r = zf[_u(b) * uF + _u(f[gb])] - th[gb]
                a = abs(r)
                if a < best[b]:
                    best[b] = a
                    rbest[b] = r
                    vbest[b] = gb
                g[b] = two * gb + one + _u(r > 0)
        _write_leaves(w[t], t, g, rbest, vbest, depth, reduce, leaf_out, vstar_out, rstar_out, out)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _fern_forward(z, feats, thr, w, depth, reduce, leaf_out, vstar_out, rstar_out, out):
    """Run :func:`forest_forward` for ferns.

    :func:`forest_forward` of ferns: a level reads one feature of every sample, from z
    transposed (one contiguous row), with branch-free selects on 32-bit node codes (depth <= 30:
    codes below 2^31), which the compiler vectorises (~1.8x the 64-bit codes).
    """
    B = z.shape[0]
    M = feats.shape[0]
    g = np.empty(B, np.uint32)
    best = np.empty(B, z.dtype)
    rbest = np.empty(B, z.dtype)
    vbest = np.empty(B, np.uint32)
    zT = np.ascontiguousarray(z.T)
    one = np.uint32(1)
    two = np.uint32(2)
    for t in range(M):
        f = feats[t]
        th = thr[t]
        _start_walks(z, f[0], th[0], g, best, rbest, vbest)
        for d in range(depth):
            zd = zT[_u(f[d])]
            td = th[d]
            ud = np.uint32(d)
            for b in range(B):
                r = zd[b] - td
                a = abs(r)
                c = a < best[b]
                best[b] = a if c else best[b]
                rbest[b] = r if c else rbest[b]
                vbest[b] = ud if c else vbest[b]
                g[b] = two * g[b] + one + np.uint32(r > 0)
        _write_leaves(w[t], t, g, rbest, vbest, depth, reduce, leaf_out, vstar_out, rstar_out, out)


@numba.njit(cache=True, nogil=True, inline="always")
def _start_walks(z, f0, th0, g, best, rbest, vbest):
    """Every sample's walk at the root: node 0, no margin seen yet (inf), the root's r*, v* = 0."""
    for b in range(g.shape[0]):
        g[b] = 0
        best[b] = np.inf
        rbest[b] = z[b, _u(f0)] - th0
        vbest[b] = 0


@numba.njit(cache=True, nogil=True, inline="always")
def _u(i):
    """Return ``i`` as an unsigned index.

    numba checks a signed index for a negative (wraparound) value on every load; an unsigned one it
    uses as is.
    """
    return np.uint64(i)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _write_leaves(wt, t, g, rbest, vbest, depth, reduce, leaf_out, vstar_out, rstar_out, out):
    """Tree t's leaf, v*, r* and output ``w[leaf] * |r*|`` (added to the sum with ``reduce``)."""
    K = wt.shape[1]
    first_leaf = _u(2**depth - 1)
    for b in range(g.shape[0]):
        leaf = _u(g[b]) - first_leaf
        leaf_out[b, t] = leaf
        vstar_out[b, t] = vbest[b]
        rstar_out[b, t] = rbest[b]
        a = abs(rbest[b])
        wl = wt[leaf]
        if reduce:
            ob = out[b, 0]
            for k in range(K):
                ob[k] += wl[k] * a
        else:
            obt = out[b, t]
            for k in range(K):
                obt[k] = wl[k] * a


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _sign(r):
    return 1.0 if r > 0 else (-1.0 if r < 0 else 0.0)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _margin_grad(gb, wl, r, K):
    """Return d loss / d margin of one sample in one tree.

    It is the output gradient dotted with the reached leaf's weights, signed by the side of the
    deciding threshold.
    """
    s = 0.0
    for k in range(K):
        s += gb[k] * wl[k]
    return s * _sign(r)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def forest_backward(G, feats, w, leaf, vstar, rstar, reduce, need_z, gz, gt, gw):
    """Accumulate the paper's sparse derivatives into dense gradient arrays.

    G [B, 1, K] (reduce) or [B, M, K]. Accumulates into gz [B, F] (if need_z), gt [M, N] and
    gw [M, L, K] (dense arrays; only the entries of the samples' paths change).
    """
    B = leaf.shape[0]
    M = leaf.shape[1]
    K = w.shape[2]
    for t in range(M):
        f = feats[t]
        wt = w[t]
        gtt = gt[t]
        gwt = gw[t]
        for b in range(B):
            gb = G[b, 0] if reduce else G[b, t]
            lf = _u(leaf[b, t])
            r = rstar[b, t]
            s = _margin_grad(gb, wt[lf], r, K)
            v = _u(vstar[b, t])
            gtt[v] -= s
            if need_z:
                gz[b, _u(f[v])] += s
            a = abs(r)
            gl = gwt[lf]
            for k in range(K):
                gl[k] += gb[k] * a


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _unique_sorted(keys, t, stamp, base, slot, ti, xi, nnz):
    """Append the distinct values of ``keys``, sorted, to the row lists.

    The distinct values of ``keys`` (one tree's B indices), sorted, appended at ``nnz`` to the row
    lists (ti = t, xi = value); ``slot[value]`` = its row. ``stamp`` marks the values seen under the
    mark ``base`` (a fresh mark per tree and call: the stamps are never reset). Returns the new nnz.
    """
    nu = 0
    for b in range(keys.shape[0]):
        x = keys[b]
        if stamp[x] != base:
            stamp[x] = base
            xi[nnz + nu] = x
            nu += 1
    xs = xi[nnz : nnz + nu]
    xs.sort()
    for j in range(nu):
        ti[nnz + j] = t
        slot[xs[j]] = nnz + j
    return nnz + nu


@numba.njit(cache=True, nogil=True, error_model="numpy")
def forest_backward_rows(
    G, feats, w, leaf, vstar, rstar, reduce, need_z, gz, gt, thr_rows, ws, base
):
    """Run :func:`forest_backward` with gradients returned as coalesced rows.

    :func:`forest_backward` with the leaf-weight gradient (and with ``thr_rows`` the threshold
    gradient) as coalesced rows: sorted unique (tree, leaf) pairs and their summed [nnz, K] values
    (and (tree, decision) pairs with their sums); without ``thr_rows`` the threshold gradient goes
    into the dense ``gt`` [M, N]. Same sums in the same order as :func:`forest_backward`.

    ``ws`` = (leaf stamps [L], leaf slots [L], decision stamps [N], decision slots [N]), int64
    workspaces kept by the caller (stamps start at -1) and ``base`` a mark not used before with
    them (the caller adds M per call): no array of the forest's size is filled or allocated per
    call, so a call costs O(B M (D + K)) whatever the number of leaves 2^D.

    Returns (ti, li, vals, tti, tni, tvals).
    """
    B = leaf.shape[0]
    M = leaf.shape[1]
    K = w.shape[2]
    st_l, sl_l, st_n, sl_n = ws
    n = B * M
    ti = np.empty(n, np.int64)
    li = np.empty(n, np.int64)
    vals = np.zeros((n, K), w.dtype)
    nt = n if thr_rows else 0
    tti = np.empty(nt, np.int64)
    tni = np.empty(nt, np.int64)
    tvals = np.zeros(nt, w.dtype)
    nnz = 0
    tnnz = 0
    for t in range(M):
        f = feats[t]
        wt = w[t]
        nnz = _unique_sorted(leaf[:, t], t, st_l, base + t, sl_l, ti, li, nnz)
        if thr_rows:
            tnnz = _unique_sorted(vstar[:, t], t, st_n, base + t, sl_n, tti, tni, tnnz)
        for b in range(B):
            gb = G[b, 0] if reduce else G[b, t]
            lf = leaf[b, t]
            r = rstar[b, t]
            s = _margin_grad(gb, wt[lf], r, K)
            v = vstar[b, t]
            if thr_rows:
                tvals[sl_n[v]] -= s
            else:
                gt[t, v] -= s
            if need_z:
                gz[b, f[v]] += s
            a = abs(r)
            row = vals[sl_l[lf]]
            for k in range(K):
                row[k] += gb[k] * a
    return (
        ti[:nnz].copy(), li[:nnz].copy(), vals[:nnz].copy(),
        tti[:tnnz].copy(), tni[:tnnz].copy(), tvals[:tnnz].copy(),
    )  # fmt: skip


@numba.njit(cache=True, nogil=True, error_model="numpy")
def adam_dense(p, m, v, g, w1, b2, c2, step_size, bc2_sqrt, eps):
    """Take torch.optim.Adam's single-tensor step on flat arrays.

    m.lerp_(g, w1); v = b2 v + c2 g^2; p -= step_size * m / (sqrt(v) / bc2_sqrt + eps).
    """
    _adam_dense_inline(p, m, v, g, w1, b2, c2, step_size, bc2_sqrt, eps)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _adam_decay(p, m, v, w1, b2, step_size, bc2_sqrt, eps):
    for i in range(p.shape[0]):
        mi = m[i] + w1 * (-m[i])
        vi = v[i] * b2
        m[i] = mi
        v[i] = vi
        p[i] -= step_size * (mi / (np.sqrt(vi) / bc2_sqrt + eps))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def adam_rows(p, m, v, rows, gv, w1, b2, c2, step_size, bc2_sqrt, eps):
    """Take an Adam step whose gradient is nonzero only on some rows.

    Adam step where the gradient of the [R, K] arrays is ``gv`` on the sorted unique ``rows`` and
    0 elsewhere: one pass in memory order, the zero-gradient update (vectorised) on the runs between
    touched rows and the full update (same arithmetic as :func:`adam_dense`) on the touched rows.
    """
    K = p.shape[1]
    pf = p.reshape(-1)
    mf = m.reshape(-1)
    vf = v.reshape(-1)
    prev = 0
    for j in range(rows.shape[0] + 1):
        r = rows[j] if j < rows.shape[0] else p.shape[0]
        if r > prev:
            lo, hi = prev * K, r * K
            _adam_decay(pf[lo:hi], mf[lo:hi], vf[lo:hi], w1, b2, step_size, bc2_sqrt, eps)
        if j < rows.shape[0]:
            _adam_row(pf, mf, vf, r * K, gv[j], w1, b2, c2, step_size, bc2_sqrt, eps)
            prev = r + 1


@numba.njit(cache=True, nogil=True, error_model="numpy")
def adam_rows_lazy(p, m, v, rows, gv, w1, b2, c2, step_size, bc2_sqrt, eps):
    """Take a lazy Adam step (``torch.optim.SparseAdam``'s rule) on the touched rows.

    Lazy Adam (``torch.optim.SparseAdam``'s rule): only the touched ``rows`` of the [R, K] arrays
    update their moments and move, with :func:`adam_dense`'s arithmetic; the others are left as they
    are (no decay), so a step costs the touched rows, not all R.
    """
    K = p.shape[1]
    pf, mf, vf = p.reshape(-1), m.reshape(-1), v.reshape(-1)
    for j in range(rows.shape[0]):
        _adam_row(pf, mf, vf, rows[j] * K, gv[j], w1, b2, c2, step_size, bc2_sqrt, eps)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _adam_row(pf, mf, vf, lo, g, w1, b2, c2, step_size, bc2_sqrt, eps):
    """Take :func:`adam_dense`'s step on the row of flat arrays starting at ``lo``.

    The row has ``len(g)`` entries.
    """
    hi = lo + g.shape[0]
    _adam_dense_inline(pf[lo:hi], mf[lo:hi], vf[lo:hi], g, w1, b2, c2, step_size, bc2_sqrt, eps)


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _adam_dense_inline(p, m, v, g, w1, b2, c2, step_size, bc2_sqrt, eps):
    for i in range(p.shape[0]):
        mi = m[i] + w1 * (g[i] - m[i])
        vi = v[i] * b2 + c2 * (g[i] * g[i])
        m[i] = mi
        v[i] = vi
        p[i] -= step_size * (mi / (np.sqrt(vi) / bc2_sqrt + eps))


@numba.njit(cache=True, nogil=True)
def strictly_increasing(a):
    """Return whether ``a`` is strictly increasing."""
    for i in range(1, a.shape[0]):
        if a[i] <= a[i - 1]:
            return False
    return True


@numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _adagrad(p, acc, g, lr, eps):
    """torch.optim.Adagrad's step (no decay, initial accumulator 0) on one entry."""
    a = acc + g * g
    return p - lr * g / (np.sqrt(a) + eps), a


@numba.njit(cache=True, nogil=True, error_model="numpy")
def uci_train_steps(
    X, Y, sw, batches, classification,
    Wp, rmean, rvar, n_upd, bn_eps, max_momentum,
    feats, thr, w, depth, fern,
    Wh, bh,
    acc_Wp, acc_thr, acc_w, acc_Wh, acc_bh, lr, ada_eps,
):  # fmt: skip
    """Run training steps of the UCI network, each equal to one step of the torch path.

    Training steps of the UCI network, each the same computation as one step of the torch path:
    inner products (Wp [F, P], no bias) -> running-statistics BN -> hinge trees/ferns with scalar
    leaves -> Linear(M, K) head -> softmax cross-entropy (``classification``; Y holds class codes)
    or L2 (K = 1) loss, mean of ``sw``-weighted per-sample losses -> backward (the paper's sparse
    forest derivatives) -> torch.optim.Adagrad on every parameter (entries with zero gradient keep
    their value and accumulator, so the forest's touched entries are the only ones visited) -> the
    BN running statistics fold in the batch's mean / unbiased variance (``n_upd`` counts updates).

    ``batches`` [S, B] holds training-row indices of the S minibatches. All arrays are updated in
    place (numpy views of the torch parameters). A step touches only the forest entries of the
    samples' paths (:func:`_backward_adagrad_scalar`), so nothing of the forest's size 2^D is
    allocated or cleared per call. Returns the mean minibatch loss.
    """
    S, B = batches.shape
    P = X.shape[1]
    F = Wp.shape[0]
    M = feats.shape[0]
    K = Wh.shape[0]
    dt = X.dtype
    xb = np.empty((B, P), dt)
    z = np.empty((B, F), dt)
    bmean = np.empty(F, dt)
    bvar = np.empty(F, dt)
    msum = np.empty(F, np.float64)
    vsum = np.empty(F, np.float64)
    std = np.empty(F, dt)
    leaf = np.empty((B, M), np.int64)
    vstar = np.empty((B, M), np.int64)
    rstar = np.empty((B, M), dt)
    out = np.empty((B, M, 1), dt)
    dlog = np.empty((B, K), dt)
    gz = np.zeros((B, F), dt)
    gt1 = np.zeros(thr.shape[1], dt)  # one tree's gradient scratch, left zero by each tree
    gw1 = np.zeros(w.shape[1], dt)
    total = 0.0
    for s in range(S):
        for i in range(B):
            xb[i] = X[batches[s, i]]
        h = np.dot(xb, Wp.T)  # [B, F]
        if B > 1:  # the batch's statistics, folded in after the step
            # per feature, float64 sums over the rows in row order; rows outer: one pass over h
            # in memory order, the features' independent sums side by side
            msum[:] = 0.0
            for i in range(B):
                for f in range(F):
                    msum[f] += h[i, f]
            for f in range(F):
                msum[f] /= B
            vsum[:] = 0.0
            for i in range(B):
                for f in range(F):
                    d = h[i, f] - msum[f]
                    vsum[f] += d * d
            for f in range(F):
                bmean[f] = msum[f]
                bvar[f] = vsum[f] / (B - 1)
        for f in range(F):
            std[f] = np.sqrt(abs(rvar[f]) + bn_eps)
        for i in range(B):
            for f in range(F):
                z[i, f] = (h[i, f] - rmean[f]) / std[f]
        forest_forward(z, feats, thr, w, depth, fern, False, leaf, vstar, rstar, out)
        o2 = out[:, :, 0].copy()
        logits = np.dot(o2, Wh.T)  # [B, K]
        loss = 0.0
        for i in range(B):
            wi = sw[batches[s, i]]
            for k in range(K):
                logits[i, k] += bh[k]
            if classification:
                c = int(Y[batches[s, i]])
                mx = logits[i, 0]
                for k in range(1, K):
                    mx = max(mx, logits[i, k])
                se = 0.0
                for k in range(K):
                    se += np.exp(logits[i, k] - mx)
                loss += wi * (mx + np.log(se) - logits[i, c])
                for k in range(K):
                    dlog[i, k] = (
                        (np.exp(logits[i, k] - mx) / se - (1.0 if k == c else 0.0)) * wi / B
                    )
            else:
                r = logits[i, 0] - Y[batches[s, i]]
                loss += wi * r * r
                dlog[i, 0] = 2.0 * r * wi / B
        total += loss / B
        gWh = np.dot(dlog.T, o2)  # [K, M]
        dout = np.dot(dlog, Wh)  # [B, M]
        # forest backward (gz, and per tree the threshold and leaf gradients), each tree's
        # Adagrad step right behind it (below)
        gz[:] = 0
        _backward_adagrad_scalar(
            dout, feats, w, thr, acc_w, acc_thr, leaf, vstar, rstar, gz, gt1, gw1, lr, ada_eps
        )
        for i in range(B):
            for f in range(F):
                gz[i, f] /= std[f]
        gWp = np.dot(gz.T, xb)  # [F, P]
        # Adagrad: dense layers
        for f in range(F):
            for p in range(P):
                Wp[f, p], acc_Wp[f, p] = _adagrad(Wp[f, p], acc_Wp[f, p], gWp[f, p], lr, ada_eps)
        for k in range(K):
            g = 0.0
            for i in range(B):
                g += dlog[i, k]
            bh[k], acc_bh[k] = _adagrad(bh[k], acc_bh[k], g, lr, ada_eps)
            for m in range(M):
                Wh[k, m], acc_Wh[k, m] = _adagrad(Wh[k, m], acc_Wh[k, m], gWh[k, m], lr, ada_eps)
        if B > 1:
            n = n_upd[0]
            alpha = min(n / (n + 1.0), max_momentum)
            for f in range(F):
                rmean[f] = alpha * rmean[f] + (1 - alpha) * bmean[f]
                rvar[f] = alpha * rvar[f] + (1 - alpha) * bvar[f]
            n_upd[0] = n + 1
    return total / S


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _backward_adagrad_scalar(
    G, feats, w, thr, acc_w, acc_thr, leaf, vstar, rstar, gz, gt1, gw1, lr, ada_eps
):  # fmt: skip
    """Run the scalar-leaf backward pass and Adagrad on the touched entries.

    :func:`forest_backward` for scalar leaves (G [B, M]: d loss / d tree output) followed by
    torch.optim.Adagrad on the forest's touched entries, tree by tree: a tree's threshold and leaf
    gradients are summed in the zero scratch ``gt1`` [N] / ``gw1`` [L] (sample order, as
    :func:`forest_backward`), then each touched entry takes its step once and its scratch entry is
    zeroed (entries with zero gradient keep value and accumulator, as in Adagrad). A tree's step
    changes only its own parameters after its own backward has read them, so this is the same
    arithmetic as the whole backward before all the steps, with the scratch of one tree (in L1)
    instead of two arrays of the forest's size.
    """
    B, M = leaf.shape
    for t in range(M):
        f = feats[t]
        wt, awt = w[t], acc_w[t]
        tht, atht = thr[t], acc_thr[t]
        for b in range(B):
            gb = G[b, t]
            lf = _u(leaf[b, t])
            r = rstar[b, t]
            s = 0.0  # _margin_grad with K = 1
            s += gb * wt[lf, 0]
            s = s * _sign(r)
            v = _u(vstar[b, t])
            gt1[v] -= s
            gz[b, _u(f[v])] += s
            gw1[lf] += gb * abs(r)
        for b in range(B):
            v = _u(vstar[b, t])
            g = gt1[v]
            if g != 0:
                tht[v], atht[v] = _adagrad(tht[v], atht[v], g, lr, ada_eps)
                gt1[v] = 0
            lf = _u(leaf[b, t])
            g = gw1[lf]
            if g != 0:
                wt[lf, 0], awt[lf, 0] = _adagrad(wt[lf, 0], awt[lf, 0], g, lr, ada_eps)
                gw1[lf] = 0


@numba.njit(cache=True, nogil=True)
def gather_rows(p, s, idx, dims):
    """Gather rows of ``p`` and ``s`` at the sparse indices of a tensor.

    Rows of the [R, C] arrays ``p`` and ``s`` at the sparse indices ``idx`` [nd, nnz] of a tensor
    whose first nd dimensions are ``dims``: (flat row ids, p rows, s rows, ordered), the rows
    copied; ``ordered`` is False when the row ids are not strictly increasing (not coalesced).
    """
    nd, nnz = idx.shape
    C = p.shape[1]
    rows = np.empty(nnz, np.int64)
    pr = np.empty((nnz, C), p.dtype)
    sr = np.empty((nnz, C), s.dtype)
    ordered = True
    for j in range(nnz):
        r = idx[0, j]
        for d in range(1, nd):
            r = r * dims[d] + idx[d, j]
        rows[j] = r
        if j > 0 and r <= rows[j - 1]:
            ordered = False
        for c in range(C):
            pr[j, c] = p[r, c]
            sr[j, c] = s[r, c]
    return rows, pr, sr, ordered


@numba.njit(cache=True, nogil=True)
def scatter_rows(p, s, rows, pr, sr):
    """Write :func:`gather_rows`' rows back: p[rows] = pr, s[rows] = sr."""
    C = p.shape[1]
    for j in range(rows.shape[0]):
        r = rows[j]
        for c in range(C):
            p[r, c] = pr[j, c]
            s[r, c] = sr[j, c]
