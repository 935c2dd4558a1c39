"""FIGS: fitting with ``imodels`` under the estimator's seed; its trees as arrays and a graph."""

from __future__ import annotations

import numpy as np

from treebench.methods._flattree import FlatTree


def fit_figs(est, X, y, sample_weight, seed: int, n_outputs: int) -> list[FlatTree]:
    """Fit ``imodels``' FIGS on ``y`` and return its trees as flat arrays.

    ``y`` holds class indices for a classifier (whose ``n_outputs`` is the number of classes) or
    real values for a regressor (``n_outputs`` 1).

    ``imodels`` grows its stumps with scikit-learn trees built without a ``random_state``, which
    draw from numpy's global generator (the feature order of each split search): the global
    generator is seeded from ``seed`` for the fit and put back as it was afterwards, so the model
    depends on the seed alone and the caller's generator does not move.
    """
    from imodels import FIGSClassifier, FIGSRegressor
    from sklearn.base import is_classifier

    model = (FIGSClassifier if is_classifier(est) else FIGSRegressor)(
        max_rules=est.max_rules,
        max_trees=est.max_trees,
        max_depth=est.max_depth,
        min_impurity_decrease=est.min_impurity_decrease,
        max_features=est.max_features,
    )
    state = np.random.get_state()  # noqa: NPY002 - restored below; imodels reads the global one
    try:
        np.random.seed(seed)  # noqa: NPY002
        model.fit(X, y, sample_weight=sample_weight)
    finally:
        np.random.set_state(state)  # noqa: NPY002
    if model.n_outputs != n_outputs:  # pragma: no cover - imodels one-hot encodes every class
        raise RuntimeError(f"FIGS fitted {model.n_outputs} outputs, expected {n_outputs}")
    return [_flatten(root, n_outputs) for root in model.trees_]


def _flatten(root, K: int) -> FlatTree:
    left, right, feat, thr, value = [], [], [], [], []
    stack = [(root, None)]
    while stack:
        node, slot = stack.pop()
        v = len(left)
        if slot is not None:
            slot[0][slot[1]] = v
        left.append(-1)
        right.append(-1)
        # an internal node's value is display-only (imodels leaves it unset on later trees' roots)
        v_ = np.zeros(K) if node.value is None else np.asarray(node.value, dtype=np.float64)
        value.append(v_.reshape(-1)[:K])
        if node.left is None or node.right is None:
            feat.append(-1)
            thr.append(0.0)
            continue
        feat.append(int(node.feature))
        thr.append(float(node.threshold))
        stack.append((node.right, (right, v)))
        stack.append((node.left, (left, v)))
    return FlatTree(
        np.asarray(left, dtype=np.int64),
        np.asarray(right, dtype=np.int64),
        np.asarray(feat, dtype=np.int64),
        np.asarray(thr, dtype=np.float64),
        np.asarray(value),
    )


def figs_graph(est):
    """Return the fitted FIGS model as a :class:`~treebench.inspect.GraphEnsemble`.

    Its trees summed (leaf values per class, or the regression value), the class probabilities their
    softmax.
    """
    from treebench.methods._export import (
        DecisionGraph,
        GraphEnsemble,
        feature_names_of,
        graph_meta,
        task_of,
    )

    task = task_of(est)

    graphs = [
        DecisionGraph(
            left=t.left.copy(),
            right=t.right.copy(),
            value=t.value.copy(),
            feature=t.feature.copy(),
            threshold=t.threshold.copy(),
            info={"source": "figs", "tree": i},
        )
        for i, t in enumerate(est.trees_)
    ]
    return GraphEnsemble(
        graphs,
        task=task,
        classes=list(est.classes_) if task == "classification" else None,
        n_features=int(est.n_features_in_),
        transform=[{"op": "cast", "dtype": "float64"}],
        combine="sum",
        output="softmax" if task == "classification" else "identity",
        meta=graph_meta(est),
        feature_names=feature_names_of(est),
    )
