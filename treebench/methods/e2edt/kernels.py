"""Compiled (numba) kernels for E2EDT / E2EDF training with linear splits.

Same mathematics as the torch path of :mod:`treebench.methods.e2edt.core` (which stays the
reference and the fallback without numba), fused per sample so that no [leaves, batch] temporaries
are built and no autograd graph is recorded:

* :func:`tree_estep` — E-step of the Finetune: path probabilities of all leaves of every tree
  (products of clamped gates, as the reference computes them, in float64) times pi[leaf, y],
  normalised per tree -> responsibilities h [N, L].
* :func:`tree_mstep_grad` — the gradient of the Finetune M-step loss
  ``-(1/|B|) sum_n sw_n sum_l h_nl log clamp(mu_nl)`` w.r.t. the gamma-scaled split logits
  z [B, S] (top-down pass for mu, bottom-up pass for the subtree sums of the leaf gradients),
  with torch's clamp gradient rule (passes where lo <= x <= hi).  The gates sigmoid(z) come in
  precomputed (torch's vectorised sigmoid), so the kernels do no transcendental math.
* :func:`stump_estep` / :func:`stump_mstep` — greedy stumps: responsibilities of all rows
  (n_r, s_r), and per minibatch the gradient of the stump loss scattered into dL/dw, dL/db
  (z_r = gamma_s (w_s . x_n[feat_s] + b_s) computed on the fly: no [R, k] gathered copies);
  :func:`stable_group` groups the shuffled rows by minibatch; :func:`stump_logits` for routing.
* :func:`adam_rows` — the Adam update of :class:`treebench.methods.e2edt.core.StackedAdam` on some
  rows of a stacked parameter, bit for bit: torch's ``add_(alpha=)`` and ``addcmul_`` round as one
  fused multiply-add (:func:`fma32`), the bias corrections are float64 ``1 - beta**t`` rounded to
  float32 (torch's vectorised pow and libm's agree after that rounding for every t <= 2**21,
  ``tests/methods/test_e2edt.py``); :func:`stump_msteps` runs all minibatches of a greedy epoch
  (gradient and Adam step of the batch's stumps) in one call.

Nodes are given in breadth-first order (``bfs_split``, ``bfs_left``, ``bfs_right``, ``bfs_leaf``,
``bfs_tree`` indexed by BFS position; children after parents; the roots are positions 0..T-1).
"""

from __future__ import annotations

import math

import numpy as np

try:
    import numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - depends on the environment
    numba = None
    HAVE_NUMBA = False
else:
    from llvmlite import ir as _ir
    from numba.core import types as _types
    from numba.extending import intrinsic as _intrinsic

CLAMP_LO = 1e-5
CLAMP_HI = 1.0 - 1e-5
LOG_LO = math.log(CLAMP_LO)
LOG_HI = math.log(1.0 - 1e-5)


def bfs_arrays(struct):
    """(split, left, right, leaf, tree) int64 arrays of ``struct``'s nodes in BFS position order."""
    order = struct.bfs_nodes
    pos = np.empty(len(struct.tree), dtype=np.int64)
    pos[order] = np.arange(len(order))
    split = struct.split[order]
    left = np.where(split >= 0, pos[np.maximum(struct.left[order], 0)], -1)
    right = np.where(split >= 0, pos[np.maximum(struct.right[order], 0)], -1)
    leaf = struct.leaf[order]
    tree = struct.tree[order]
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in (split, left, right, leaf, tree))


if HAVE_NUMBA:
    _GLO = np.float32(CLAMP_LO)
    _GHI = np.float32(CLAMP_HI)

    @numba.njit(cache=True, parallel=True)
    def tree_estep(SG, y, piT, b_split, b_left, b_right, b_leaf, b_tree, leaf_tree, h_out):
        """h_out[n, l] = pi[l, y_n] mu_l(x_n) / sum over l's tree (0 where the sum is 0).

        SG [B, S]: sigmoid(gamma z) of every split; piT [K, L] = pi transposed; mu is a product
        of clamped gates, in float64 (a depth-10 path can reach 1e-50, below float32's range).
        """
        B = SG.shape[0]
        V = b_split.shape[0]
        L = leaf_tree.shape[0]
        n_trees = 0
        for v in range(V):
            n_trees = max(n_trees, b_tree[v] + 1)
        for n in numba.prange(B):  # pragma: no cover - compiled
            mu = np.empty(V, np.float64)
            tot = np.zeros(n_trees, np.float64)
            pyn = piT[y[n]]
            hn = h_out[n]
            for v in range(n_trees):
                mu[v] = 1.0
            for v in range(V):
                s = b_split[v]
                if s >= 0:
                    g = min(max(SG[n, s], _GLO), _GHI)
                    mu[b_left[v]] = mu[v] * (1.0 - g)
                    mu[b_right[v]] = mu[v] * g
                else:
                    lf = b_leaf[v]
                    m = mu[v] * pyn[lf]
                    tot[b_tree[v]] += m
                    hn[lf] = m
            for t in range(n_trees):
                tot[t] = 1.0 / tot[t] if tot[t] > 0 else 0.0
            for lf in range(L):
                hn[lf] = hn[lf] * tot[leaf_tree[lf]]

    @numba.njit(cache=True, parallel=True)
    def tree_mstep_grad(SG, h, rows, sw, scale, b_split, b_left, b_right, b_leaf, n_trees, dZ):
        """dZ[i, s] = d/dz_s of -scale * sw[i] * sum_l h[rows[i], l] * log clamp(mu_l, lo, hi).

        mu_l = product of the clamped gates on l's path (float64); torch's clamp gradient rule
        (passes where lo <= x <= hi) for the gate clamps and the path clamp.  Below a node whose
        path probability is under the clamp's lo every leaf's mu is too (gates are < 1), so its
        whole subtree has gradient exactly 0: it is skipped (``live`` marks the nodes visited).
        """
        B = SG.shape[0]
        V = b_split.shape[0]
        for i in numba.prange(B):  # pragma: no cover - compiled
            mu = np.empty(V, np.float64)
            G = np.empty(V, np.float64)
            live = np.zeros(V, np.bool_)
            n = rows[i]
            c = -scale * sw[i]
            for s in range(dZ.shape[1]):
                dZ[i, s] = 0.0
            for v in range(n_trees):
                mu[v] = 1.0
                live[v] = True
            for v in range(V):
                if not live[v]:
                    continue
                s = b_split[v]
                m = mu[v]
                if s >= 0:
                    g = min(max(SG[i, s], _GLO), _GHI)
                    lv, rv = b_left[v], b_right[v]
                    ml, mr = m * (1.0 - g), m * g
                    mu[lv], mu[rv] = ml, mr
                    live[lv], live[rv] = ml >= CLAMP_LO, mr >= CLAMP_LO
                    G[lv], G[rv] = 0.0, 0.0  # stays 0 below a node under the clamp
                else:
                    G[v] = c * h[n, b_leaf[v]] if (m >= CLAMP_LO and m <= CLAMP_HI) else 0.0
            for v in range(V - 1, -1, -1):  # children before their parent
                s = b_split[v]
                if s >= 0 and live[v]:
                    gl = G[b_left[v]]
                    gr = G[b_right[v]]
                    G[v] = gl + gr
                    sg = SG[i, s]
                    if sg >= _GLO and sg <= _GHI:
                        dZ[i, s] = gr * (1.0 - sg) - gl * sg

    _RB = 16  # rows per block of tree_em_rows

    @numba.njit(cache=True)
    def _em_block(
        n0, SG, y, piT, b_split, b_left, b_right, b_leaf, b_tree, leaf_tree, h_out, pos, sw,
        scale, dZ, n_trees,
    ):  # fmt: skip
        """Run :func:`tree_em_rows` on the rows n0 .. n0 + _RB.

        A plain function: it compiles better than the body of a parallel loop.
        """
        RB = _RB
        N, S = SG.shape
        V = b_split.shape[0]
        L = leaf_tree.shape[0]
        nb = min(RB, N - n0)
        yb = np.zeros(RB, np.int64)
        for j in range(nb):
            yb[j] = y[n0 + j]
        T = SG[n0 : n0 + nb]
        mu = np.empty((V, RB), np.float64)
        tot = np.zeros((n_trees, RB), np.float64)
        H = np.empty((L, RB), np.float32)
        for v in range(n_trees):
            for j in range(nb):
                mu[v, j] = 1.0
        for v in range(V):
            s = b_split[v]
            if s >= 0:
                lv, rv = b_left[v], b_right[v]
                for j in range(nb):
                    g = min(max(T[j, s], _GLO), _GHI)
                    m = mu[v, j]
                    mu[lv, j] = m * (1.0 - g)
                    mu[rv, j] = m * g
            else:
                lf, t = b_leaf[v], b_tree[v]
                for j in range(nb):
                    m = mu[v, j] * piT[yb[j], lf]
                    tot[t, j] += m
                    H[lf, j] = m
        for t in range(n_trees):
            for j in range(nb):
                tot[t, j] = 1.0 / tot[t, j] if tot[t, j] > 0 else 0.0
        for lf in range(L):
            t = leaf_tree[lf]
            for j in range(nb):
                H[lf, j] = H[lf, j] * tot[t, j]
        for j in range(nb):
            for lf in range(L):
                h_out[n0 + j, lf] = H[lf, j]
        c = np.zeros(RB, np.float64)
        any_m = False
        for j in range(nb):
            i = pos[n0 + j]
            if i >= 0:
                c[j] = -scale * sw[i]
                any_m = True
        if not any_m:
            return
        G = np.empty((V, RB), np.float64)
        D = np.empty((S, RB), np.float32)
        for v in range(V - 1, -1, -1):  # children before their parent
            s = b_split[v]
            if s < 0:
                lf = b_leaf[v]
                for j in range(nb):  # values first, then selects: the loops vectorise
                    m = mu[v, j]
                    gv = c[j] * H[lf, j]
                    G[v, j] = gv if (m >= CLAMP_LO and m <= CLAMP_HI) else 0.0
            else:
                lv, rv = b_left[v], b_right[v]
                for j in range(nb):
                    live = mu[v, j] >= CLAMP_LO
                    gl = G[lv, j]
                    gr = G[rv, j]
                    sg = T[j, s]
                    gs = gl + gr
                    d = gr * (1.0 - sg) - gl * sg
                    G[v, j] = gs if live else 0.0
                    ok = live & (sg >= _GLO) & (sg <= _GHI)
                    D[s, j] = d if ok else 0.0
        for j in range(nb):
            i = pos[n0 + j]
            if i >= 0:
                for s in range(S):
                    dZ[i, s] = D[s, j]

    @numba.njit(cache=True, parallel=True)
    def tree_em_rows(
        SG, y, piT, b_split, b_left, b_right, b_leaf, b_tree, leaf_tree, h_out, pos, sw, scale, dZ
    ):
        """Run :func:`tree_estep` of every row and, where ``pos[n] >= 0``, a gradient row.

        The gradient row ``pos[n]`` is :func:`tree_mstep_grad`'s (``sw``, ``scale``, ``dZ``
        indexed by that position) from the same gates SG[n] and this E-step's h[n]: the same
        values, node by node over blocks of rows (the inner loops run over the block's rows,
        branch-free).

        A node is live (visited by tree_mstep_grad) exactly when its path probability is >= the
        clamp's lo (gates are < 1), so the dense top-down pass serves both; below a node that is
        not live the gradient is 0, as there.
        """
        N = SG.shape[0]
        n_trees = 0
        for v in range(b_split.shape[0]):
            n_trees = max(n_trees, b_tree[v] + 1)
        for kb in numba.prange((N + _RB - 1) // _RB):  # pragma: no cover - compiled
            _em_block(
                kb * _RB, SG, y, piT, b_split, b_left, b_right, b_leaf, b_tree, leaf_tree,
                h_out, pos, sw, scale, dZ, n_trees,
            )  # fmt: skip

    @numba.njit(cache=True, parallel=True)
    def stump_logits(X, W, b, feat, gamma, n_idx, s_idx, out):
        """out[r] = gamma[s] * (W[s] . X[n, feat[s]] + b[s]) with n = n_idx[r], s = s_idx[r]."""
        R = n_idx.shape[0]
        k = W.shape[1]
        dense = feat.shape[0] == 0
        for r in numba.prange(R):  # pragma: no cover - compiled
            n = n_idx[r]
            s = s_idx[r]
            f = b[s]
            if dense:
                for j in range(k):
                    f += W[s, j] * X[n, j]
            else:
                for j in range(k):
                    f += W[s, j] * X[n, feat[s, j]]
            out[r] = gamma[s] * f

    @numba.njit(cache=True, inline="always")
    def _gate(W, b, feat, dense, X, n, s, gamma):  # pragma: no cover - compiled
        f = np.float64(b[s])
        if dense:
            for j in range(W.shape[1]):
                f += W[s, j] * X[n, j]
        else:
            for j in range(W.shape[1]):
                f += W[s, j] * X[n, feat[s, j]]
        z = np.float32(gamma[s] * np.float32(f))
        return z, 1.0 / (1.0 + math.exp(-np.float64(z)))

    @numba.njit(cache=True, parallel=True)
    def stump_estep(X, W, b, feat, gamma, n_idx, s_idx, y_r, pi_l, pi_r, hr, hl):
        """Stump responsibilities.

        H_r ~ pi_r[s, y] clamp(sig(z)), h_l ~ pi_l[s, y] clamp(1 - sig(z)), normalised to h_r + h_l
        = 1 (both 0 where the sum is 0).
        """
        dense = feat.shape[0] == 0
        for r in numba.prange(n_idx.shape[0]):  # pragma: no cover - compiled
            s = s_idx[r]
            _z, sg = _gate(W, b, feat, dense, X, n_idx[r], s, gamma)
            gr = min(max(sg, CLAMP_LO), CLAMP_HI)
            gl = min(max(1.0 - sg, CLAMP_LO), CLAMP_HI)
            a = pi_r[s, y_r[r]] * gr
            c = pi_l[s, y_r[r]] * gl
            t = a + c
            if t <= 0:
                t = 1.0
            hr[r] = a / t
            hl[r] = c / t

    @numba.njit(cache=True)
    def stump_mstep(X, W, b, feat, gamma, n_idx, s_idx, rows, hr, hl, w_r, n_stumps, gW, gb):
        """Add the stumps' M-step gradient of one minibatch ``rows``.

        Return the batch size per stump.

        The gradient of -(1/|B_s|) sum_{r in B_s} w_r (h_r log clamp(s) + h_l log clamp(1 - s)),
        with torch's clamp-gradient rule.
        """
        dense = feat.shape[0] == 0
        bsz = np.zeros(n_stumps, np.int64)
        for q in range(rows.shape[0]):
            bsz[s_idx[rows[q]]] += 1
        for q in range(rows.shape[0]):  # pragma: no cover - compiled
            r = rows[q]
            n = n_idx[r]
            s = s_idx[r]
            _z, sg = _gate(W, b, feat, dense, X, n, s, gamma)
            d = 0.0
            if sg >= CLAMP_LO and sg <= CLAMP_HI:
                d = hr[r] * (1.0 - sg) - hl[r] * sg
            g = -d * w_r[r] / bsz[s] * gamma[s]
            gb[s] += g
            if dense:
                for j in range(gW.shape[1]):
                    gW[s, j] += g * X[n, j]
            else:
                for j in range(gW.shape[1]):
                    gW[s, j] += g * X[n, feat[s, j]]
        return bsz

    @numba.njit(cache=True)
    def stable_group(bid, nb):
        """Stable counting sort of ``bid`` (values in [0, nb)): the permutation and group bounds."""
        counts = np.zeros(nb + 1, np.int64)
        for i in range(bid.shape[0]):
            counts[bid[i] + 1] += 1
        for t in range(nb):
            counts[t + 1] += counts[t]
        pos = counts[:-1].copy()
        perm = np.empty(bid.shape[0], np.int64)
        for i in range(bid.shape[0]):
            perm[pos[bid[i]]] = i
            pos[bid[i]] += 1
        return perm, counts

    @_intrinsic
    def fma32(typingctx, a, b, c):
        """Return a * b + c in float32 with one rounding (LLVM's ``llvm.fma.f32``).

        As torch's CPU kernels compute ``add_(other, alpha=)`` and ``addcmul_``.
        """
        sig = _types.float32(_types.float32, _types.float32, _types.float32)

        def codegen(context, builder, signature, args):  # pragma: no cover - compiled
            f32 = _ir.FloatType()
            fn = builder.module.declare_intrinsic(
                "llvm.fma", [f32], _ir.FunctionType(f32, [f32] * 3)
            )
            return builder.call(fn, args)

        return sig, codegen

    @numba.njit(cache=True)
    def adam_tick(t, rows, b1, b2, bc1, bc2):
        """One more step for each of ``rows``.

        T[s] += 1 and the float32 bias corrections bc1[q] = 1 - b1**t, bc2[q] = 1 - b2**t (computed
        in float64, as StackedAdam).
        """
        for q in range(rows.shape[0]):  # pragma: no cover - compiled
            s = rows[q]
            t[s] += 1.0
            bc1[q] = np.float32(1.0 - b1 ** t[s])
            bc2[q] = np.float32(1.0 - b2 ** t[s])

    @numba.njit(cache=True)
    def adam_rows(P, G, M, V, rows, bc1, bc2, lr, b1, b2, eps, wd, sqrt, buf):
        """StackedAdam's update of rows ``rows`` of P [S, k] (float32) from the gradient G.

        With the moments M, V and the rows' bias corrections bc1, bc2 (:func:`adam_tick`), in
        torch's rounding: m = fma(g, 1 - b1, m b1), v = fma(g (1 - b2), g, v b2), p -= ((m / bc1) /
        (sqrt(v / bc2) + eps)) lr; with wd, g = g + wd p first. ``sqrt(n, x, out)`` is the square
        root torch computes (:func:`torch_sqrt`), applied to all rows at once in ``buf`` (>=
        len(rows) * k floats).
        """
        f1, a1 = np.float32(b1), np.float32(1.0 - b1)
        f2, a2 = np.float32(b2), np.float32(1.0 - b2)
        fe, fl, fw = np.float32(eps), np.float32(lr), np.float32(wd)
        k = P.shape[1]
        for q in range(rows.shape[0]):  # pragma: no cover - compiled
            s = rows[q]
            c2 = bc2[q]
            for j in range(k):
                g = G[s, j]
                if wd != 0.0:
                    g = np.float32(g + np.float32(fw * P[s, j]))
                M[s, j] = fma32(g, a1, np.float32(M[s, j] * f1))
                v = fma32(np.float32(g * a2), g, np.float32(V[s, j] * f2))
                V[s, j] = v
                buf[q * k + j] = np.float32(v / c2)
        sqrt(rows.shape[0] * k, buf.ctypes, buf.ctypes)
        for q in range(rows.shape[0]):  # pragma: no cover - compiled
            s = rows[q]
            c1 = bc1[q]
            for j in range(k):
                den = np.float32(buf[q * k + j] + fe)
                P[s, j] = np.float32(
                    P[s, j] - np.float32(np.float32(np.float32(M[s, j] / c1) / den) * fl)
                )

    @numba.njit(cache=True)
    def adam_step2(P1, G1, M1, V1, P2, G2, M2, V2, t, rows, bc, lr, b1, b2, eps, wd, sqrt, buf):
        """Take one Adam step of the rows ``rows`` of two stacked parameters.

        The parameters are a linear bank's weights and biases: :func:`adam_tick`, then
        :func:`adam_rows` of each, in one call (``bc`` [2, S] scratch for the bias corrections).
        """
        bc1, bc2 = bc[0, : rows.shape[0]], bc[1, : rows.shape[0]]
        adam_tick(t, rows, b1, b2, bc1, bc2)
        adam_rows(P1, G1, M1, V1, rows, bc1, bc2, lr, b1, b2, eps, wd, sqrt, buf)
        adam_rows(P2, G2, M2, V2, rows, bc1, bc2, lr, b1, b2, eps, wd, sqrt, buf)

    @numba.njit(cache=True)
    def stump_msteps(
        X, W, b, feat, gamma, n_idx, s_idx, order, bounds, hr, hl, w_r, gW, gb,
        mW, vW, mb, vb, t, lr, beta1, beta2, eps, wd, sqrt,
    ):  # fmt: skip
        """All minibatches of one greedy epoch.

        Per batch ``order[bounds[q]:bounds[q + 1]]`` the gradient of :func:`stump_mstep`, then the
        Adam step (:func:`adam_rows`) of the stumps the batch holds rows of, each with its own step
        count t[s]; W, b, the moments and t are updated in place. The gradient buffers gW [S, k], gb
        [S] are zero on entry and on return.
        """
        S = W.shape[0]
        act = np.empty(S, np.int64)
        bc1 = np.empty(S, np.float32)
        bc2 = np.empty(S, np.float32)
        buf = np.empty(S * W.shape[1], np.float32)
        b2, g2, m2, v2 = b.reshape(S, 1), gb.reshape(S, 1), mb.reshape(S, 1), vb.reshape(S, 1)
        for q in range(bounds.shape[0] - 1):  # pragma: no cover - compiled
            rows = order[bounds[q] : bounds[q + 1]]
            bsz = stump_mstep(X, W, b, feat, gamma, n_idx, s_idx, rows, hr, hl, w_r, S, gW, gb)
            na = 0
            for s in range(S):
                if bsz[s] > 0:
                    act[na] = s
                    na += 1
            a = act[:na]
            adam_tick(t, a, beta1, beta2, bc1, bc2)
            adam_rows(W, gW, mW, vW, a, bc1, bc2, lr, beta1, beta2, eps, wd, sqrt, buf)
            adam_rows(b2, g2, m2, v2, a, bc1, bc2, lr, beta1, beta2, eps, wd, sqrt, buf)
            for s in a:
                gb[s] = 0.0
                for j in range(gW.shape[1]):
                    gW[s, j] = 0.0

    @numba.cfunc(_types.void(_types.int64, _types.voidptr, _types.voidptr), cache=True)
    def _ieee_sqrt(n, x, out):  # pragma: no cover - compiled
        a = numba.carray(x, n, np.float32)
        r = numba.carray(out, n, np.float32)
        for i in range(n):
            r[i] = np.sqrt(a[i])


_SQRT = []


def torch_sqrt():
    """Return the float32 square root of torch's CPU kernels as a C function ``(n, x, out)``.

    For the kernels above; None when it is neither of the two known ones.

    torch computes ``sqrt`` through MKL's ``vsSqrt`` where it is built with MKL (on x86 it is not
    correctly rounded: 1 ulp off for ~20 % of inputs, elementwise and independent of the array's
    length), else with the IEEE square root; the one that equals torch's on a probe of 2**16
    values over the whole float32 range is used (computed once per process).
    """
    if _SQRT:
        return _SQRT[0]
    import ctypes
    import os

    import torch

    rng = np.random.default_rng(0)
    x = np.abs(rng.standard_normal(1 << 16)).astype(np.float32)
    x *= np.float32(2.0) ** rng.integers(-120, 120, len(x)).astype(np.float32)
    want = torch.from_numpy(x).sqrt().numpy()
    proto = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
    cands = []
    libdir = os.path.join(os.path.dirname(torch.__file__), "lib")
    for name in ("libtorch_cpu.so", "libtorch_cpu.dylib", "torch_cpu.dll"):
        path = os.path.join(libdir, name)
        if os.path.exists(path):
            try:
                cands.append(proto(("vsSqrt", ctypes.CDLL(path))))
            except (OSError, AttributeError):
                pass
    cands.append(_ieee_sqrt.ctypes)
    found = None
    for fn in cands:
        out = np.empty_like(x)
        fn(len(x), x.ctypes.data, out.ctypes.data)
        if np.array_equal(out, want):
            found = fn
            break
    _SQRT.append(found)
    return found
