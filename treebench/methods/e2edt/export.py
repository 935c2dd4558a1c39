"""E2EDT / E2EDF oblique trees as decision graphs."""

from __future__ import annotations

import numpy as np

from treebench.methods._export import (
    CAST32,
    DecisionGraph,
    GraphEnsemble,
    NotExportableError,
    feature_names_of,
    graph_meta,
    image_shape_of,
    to_numpy,
)


def e2edt_graph(est) -> GraphEnsemble:
    """E2EDT / E2EDF oblique trees: standardised inputs, right iff w . x[feat] + b > 0.

    ``inference="probabilistic"`` exports soft graphs whose weights are scaled by the steepness
    gamma (right with probability sigmoid(gamma (w.x + b))); ``"root_hard"`` is not representable
    and exports the deterministic model (noted in ``meta``).
    """
    s, bank = est.struct_, est.bank_
    p = int(est.n_features_in_)
    if bank is not None and getattr(bank, "kind", "linear") != "linear":
        raise NotExportableError(
            "E2EDT with split_features='cnn' has CNN splits, not oblique hyperplanes, so it cannot "
            "be exported as a decision graph; use split_features='linear' to inspect the tree"
        )
    pi = to_numpy(est.pi_).astype(np.float64)
    soft = est.inference == "probabilistic" and bank is not None
    W = to_numpy(bank.w) if bank is not None else np.zeros((0, p), np.float32)
    B = to_numpy(bank.b) if bank is not None else np.zeros(0, np.float32)
    F = None if bank is None or bank.feat is None else to_numpy(bank.feat).astype(np.int64)
    gamma = to_numpy(est.gamma_) if soft else None
    k = W.shape[1]
    graphs = []
    for t in range(int(s.n_trees)):
        nodes = np.flatnonzero(s.tree == t)
        new = np.full(len(s.tree), -1, dtype=np.int64)
        new[nodes] = np.arange(len(nodes))
        sp = s.split[nodes]
        inner = sp >= 0
        left = np.where(inner, new[np.maximum(s.left[nodes], 0)], -1)
        right = np.where(inner, new[np.maximum(s.right[nodes], 0)], -1)
        w = np.zeros((len(nodes), k), dtype=np.float32)
        b = np.zeros(len(nodes), dtype=np.float32)
        w[inner], b[inner] = W[sp[inner]], B[sp[inner]]
        if soft:
            gm = np.ones(len(nodes), dtype=np.float32)
            gm[inner] = gamma[sp[inner]]
            w, b = w * gm[:, None], b * gm
        wf = None
        if F is not None:
            wf = np.zeros((len(nodes), k), dtype=np.int64)
            wf[inner] = F[sp[inner]]
        v = np.zeros((len(nodes), pi.shape[1]))
        lf = s.leaf[nodes]
        v[~inner] = pi[lf[~inner]]
        root = int(new[s.roots[t]])
        graphs.append(
            DecisionGraph(
                left=left,
                right=right,
                value=v,
                weight=w,
                bias=b,
                weight_feature=wf,
                root=root,
                soft=soft,
                dtype="float32",
            )
        )
    mean = np.broadcast_to(np.asarray(est.scale_mean_, dtype=np.float32), (p,))
    sd = np.broadcast_to(np.asarray(est.scale_sd_, dtype=np.float32), (p,))
    notes = {}
    if est.inference == "root_hard":
        notes["note"] = "inference='root_hard' is not representable; exported deterministic routing"
    return GraphEnsemble(
        graphs,
        task="classification",
        classes=list(est.classes_),
        n_features=p,
        transform=[
            CAST32,
            {"op": "standardize", "mean": mean.tolist(), "scale": sd.tolist(), "dtype": "float32"},
        ],
        combine="mean",
        output="proba",
        meta=graph_meta(est, **notes),
        feature_names=feature_names_of(est),
        image_shape=image_shape_of(est),
    )
