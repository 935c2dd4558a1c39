"""Compiled (numba) kernels for E2EDT / E2EDF training with linear splits.

Same mathematics as the torch path of :mod:`treebench.methods._e2edt_core` (which stays the
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
* :func:`stump_logits` / :func:`stump_grad` — greedy stumps: z_r = gamma_s (w_s . x_n[feat_s] + b_s)
  for rows (n_r, s_r), and the scatter of dL/dz_r into dL/dw, dL/db, without [R, k] gathered
  copies.

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

    @numba.njit(cache=True)
    def stump_grad(X, feat, gamma, n_idx, s_idx, g_z, gW, gb):
        """gW[s] += g_z[r] gamma[s] X[n, feat[s]], gb[s] += g_z[r] gamma[s] (rows in any order)."""
        R = n_idx.shape[0]
        k = gW.shape[1]
        dense = feat.shape[0] == 0
        for r in range(R):  # pragma: no cover - compiled
            n = n_idx[r]
            s = s_idx[r]
            g = g_z[r] * gamma[s]
            gb[s] += g
            if dense:
                for j in range(k):
                    gW[s, j] += g * X[n, j]
            else:
                for j in range(k):
                    gW[s, j] += g * X[n, feat[s, j]]
