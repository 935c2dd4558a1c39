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
        of clamped gates, in float64 (a depth-10 path can reach 1e-50, below float32's range)."""
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
        (passes where lo <= x <= hi) for the gate clamps and the path clamp."""
        B = SG.shape[0]
        V = b_split.shape[0]
        for i in numba.prange(B):  # pragma: no cover - compiled
            mu = np.empty(V, np.float64)
            G = np.empty(V, np.float64)
            n = rows[i]
            c = -scale * sw[i]
            for v in range(n_trees):
                mu[v] = 1.0
            for v in range(V):
                s = b_split[v]
                if s >= 0:
                    g = min(max(SG[i, s], _GLO), _GHI)
                    mu[b_left[v]] = mu[v] * (1.0 - g)
                    mu[b_right[v]] = mu[v] * g
                else:
                    m = mu[v]
                    G[v] = c * h[n, b_leaf[v]] if (m >= CLAMP_LO and m <= CLAMP_HI) else 0.0
            for v in range(V - 1, -1, -1):
                s = b_split[v]
                if s >= 0:
                    gl = G[b_left[v]]
                    gr = G[b_right[v]]
                    G[v] = gl + gr
                    sg = SG[i, s]
                    if sg >= _GLO and sg <= _GHI:
                        dZ[i, s] = gr * (1.0 - sg) - gl * sg
                    else:
                        dZ[i, s] = 0.0

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
        """Stump responsibilities: h_r ~ pi_r[s, y] clamp(sig(z)), h_l ~ pi_l[s, y] clamp(1 - sig(z)),
        normalised to h_r + h_l = 1 (both 0 where the sum is 0)."""
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
        """Gradient of -(1/|B_s|) sum_{r in B_s} w_r (h_r log clamp(s) + h_l log clamp(1 - s)) for
        one minibatch ``rows`` (torch's clamp-gradient rule); returns the batch size per stump."""
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
