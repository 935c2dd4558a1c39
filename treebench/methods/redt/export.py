"""ReDT's soft-label CART as a decision graph."""

from __future__ import annotations

import numpy as np

from treebench.methods._export import (
    CAST32,
    DecisionGraph,
    GraphEnsemble,
    feature_names_of,
    graph_meta,
    image_shape_of,
    tree_gain,
)


def redt_graph(est) -> GraphEnsemble:
    """ReDT's soft-label CART: axis splits (left iff x <= t), leaves = mean mixed label."""
    t = est.tree_
    leaf = t.left < 0
    v = np.asarray(t.value, dtype=np.float64)
    v = v / v.sum(axis=1, keepdims=True)  # the estimator's predict_proba arithmetic
    ns = np.asarray(t.n_samples, dtype=np.float64)
    g = DecisionGraph(
        left=t.left,
        right=t.right,
        value=v,
        feature=np.where(leaf, -1, t.feature),
        threshold=np.where(leaf, 0.0, t.threshold),
        n_samples=ns,
        weighted_n=ns,
        n_right=np.where(leaf, 0.0, ns[np.maximum(t.right, 0)]),
        impurity=1.0 - (v**2).sum(1),
        gain=tree_gain(t.left, t.right, ns, 1.0 - (v**2).sum(1)),
        info={"alpha": float(est.alpha_)},
    )
    return GraphEnsemble(
        [g],
        task="classification",
        classes=list(est.classes_),
        n_features=int(est.n_features_in_),
        transform=[CAST32],
        combine="mean",
        output="proba",
        meta=graph_meta(est, alpha=float(est.alpha_)),
        feature_names=feature_names_of(est),
        image_shape=image_shape_of(est),
    )
