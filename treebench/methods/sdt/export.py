"""Soft Decision Tree as a soft oblique decision graph."""

from __future__ import annotations

import numpy as np

from treebench.methods._export import (
    DecisionGraph,
    GraphEnsemble,
    feature_names_of,
    graph_meta,
    standardize64,
)


def sdt_graph(est) -> GraphEnsemble:
    """Soft Decision Tree as a soft oblique tree.

    Right (the model's left child) with probability sigmoid(w . x + b); the output is softmax of the
    path-probability mixture of leaf logits.
    """
    D = int(est.max_depth)
    n_int = 2**D - 1
    n_all = 2 * n_int + 1
    inner_w = np.asarray(est.inner_, dtype=np.float32)
    p = inner_w.shape[0] - 1
    ids = np.arange(n_all)
    is_split = ids < n_int
    left = np.where(is_split, 2 * ids + 2, -1)
    right = np.where(is_split, 2 * ids + 1, -1)
    w = np.zeros((n_all, p), dtype=np.float32)
    b = np.zeros(n_all, dtype=np.float32)
    w[:n_int] = inner_w[:p].T
    b[:n_int] = inner_w[p]
    L = np.asarray(est.leaf_logits_, dtype=np.float64)
    v = np.zeros((n_all, L.shape[1]))
    v[n_int:] = L
    g = DecisionGraph(
        left=left,
        right=right,
        value=v,
        weight=w,
        bias=b,
        soft=True,
        dtype="float32",
        info={"values": "leaf logits"},
    )
    return GraphEnsemble(
        [g],
        task="classification",
        classes=list(est.classes_),
        n_features=p,
        transform=standardize64(est),
        combine="mean",
        output="softmax",
        meta=graph_meta(est),
        feature_names=feature_names_of(est),
    )
