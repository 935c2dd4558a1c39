"""TnT / NDG decision graph export (shared children kept)."""

from __future__ import annotations

import numpy as np

from treebench.methods._export import (
    CAST32,
    DecisionGraph,
    GraphEnsemble,
    feature_names_of,
    graph_meta,
    sklearn_ensemble,
)


def tnt_graph(est) -> GraphEnsemble:
    """Return a TnT / NDG decision graph (shared children kept).

    Right iff x[feature] > threshold.
    """
    if hasattr(est, "ensemble_"):
        return sklearn_ensemble(est, inner=est.ensemble_, meta=graph_meta(est))
    left = est.children_left_
    K = len(est.classes_)
    leaf = left < 0
    v = np.zeros((len(left), K))
    v[np.flatnonzero(leaf), est.value_[leaf]] = 1.0  # leaves carry a label: one-hot
    g = DecisionGraph(
        left=left,
        right=est.children_right_,
        value=v,
        feature=np.where(leaf, -1, est.feature_),
        threshold=est.threshold_,
        info={"graph": "dag"},
    )
    return GraphEnsemble(
        [g],
        task="classification",
        classes=list(est.classes_),
        n_features=int(est.n_features_in_),
        transform=[CAST32],
        combine="mean",
        output="proba",
        meta=graph_meta(est),
        feature_names=feature_names_of(est),
    )
