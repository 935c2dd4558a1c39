"""Helpers shared by the methods' graph exports: metadata, input transforms, scikit-learn trees.

Every method's ``to_graph()`` builds a :class:`treebench.graph.model.GraphEnsemble` from its own
fitted attributes in its package's ``export.py``; the scikit-learn tree and ensemble converters here
serve the baselines and the methods that wrap scikit-learn ensembles (TnT bagging / AdaBoost).
"""

from __future__ import annotations

import numpy as np

from treebench.graph.model import DecisionGraph, GraphEnsemble, NotExportableError

__all__ = [
    "CAST32",
    "DecisionGraph",
    "GraphEnsemble",
    "NotExportableError",
    "feature_names_of",
    "graph_meta",
    "image_shape_of",
    "normalize_rows",
    "sklearn_ensemble",
    "sklearn_tree",
    "standardize64",
    "task_of",
    "to_numpy",
    "tree_gain",
]

CAST32 = {"op": "cast", "dtype": "float32"}


def graph_meta(est, **extra) -> dict:
    params = {}
    for k, v in est.get_params(deep=False).items():
        params[k] = v if isinstance(v, int | float | str | bool | type(None)) else repr(v)
    return {
        "method": getattr(type(est), "_tb_name", None),
        "estimator": type(est).__name__,
        "params": params,
        **extra,
    }


def normalize_rows(v):
    """Row-normalised copy, with the same arithmetic scikit-learn's predict_proba uses."""
    v = np.array(v, dtype=np.float64)
    tot = v.sum(axis=1)[:, None]
    tot[tot == 0.0] = 1.0
    return v / tot


def task_of(est) -> str:
    from sklearn.base import is_classifier

    return "classification" if is_classifier(est) else "regression"


def image_shape_of(est):
    s = getattr(est, "image_shape", None)
    return None if s is None else [int(v) for v in s]


def feature_names_of(est):
    names = getattr(est, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def to_numpy(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def standardize64(est) -> list[dict]:
    """Input transform of models that standardise in float64 then compute in float32."""
    mean, scale = np.asarray(est.x_mean_).tolist(), np.asarray(est.x_scale_).tolist()
    return [
        {"op": "cast", "dtype": "float64"},
        {"op": "standardize", "mean": mean, "scale": scale, "dtype": "float64"},
        CAST32,
    ]


# ----------------------------------------------------------------------------- scikit-learn trees


def sklearn_tree(
    tree_est, K=None, class_map=None, feature_map=None, normalize=True, column=None
) -> DecisionGraph:
    """DecisionGraph of a fitted scikit-learn tree (``tree_`` arrays, left iff x <= threshold).

    Classification: leaf rows are the (normalised) class distributions, mapped to the ``K`` global
    classes by ``class_map`` (global index of each of the tree's classes). Regression: the value;
    ``column`` places it in column ``column`` of a ``K``-wide row (one tree per class in boosting).
    ``feature_map`` maps the tree's feature indices to input columns (bagging's feature subsets).
    """
    t = tree_est.tree_
    left = t.children_left.astype(np.int64)
    right = t.children_right.astype(np.int64)
    leaf = left < 0
    feat = t.feature.astype(np.int64)
    if feature_map is not None:
        feat = np.where(leaf, -1, np.asarray(feature_map, dtype=np.int64)[np.maximum(feat, 0)])
    feat[leaf] = -1
    thr = np.where(leaf, 0.0, t.threshold)
    raw = t.value[:, 0, :]
    if column is not None:  # regression tree of one output column
        v = np.zeros((t.node_count, K))
        v[:, column] = raw[:, 0]
    elif raw.shape[1] > 1 or K is not None and class_map is not None:
        vals = normalize_rows(raw) if normalize else raw
        K = raw.shape[1] if K is None else K
        cm = np.arange(raw.shape[1]) if class_map is None else np.asarray(class_map, dtype=np.int64)
        v = np.zeros((t.node_count, K))
        v[:, cm] = vals
    else:
        v = raw.copy()
    ns = t.n_node_samples.astype(np.float64)
    wn = t.weighted_n_node_samples.astype(np.float64)
    return DecisionGraph(
        left=left,
        right=right,
        value=v,
        feature=feat,
        threshold=thr,
        n_samples=ns,
        weighted_n=wn,
        n_right=np.where(leaf, 0.0, ns[np.maximum(right, 0)]),
        impurity=t.impurity.copy(),
        gain=tree_gain(left, right, wn, t.impurity),
        info={"source": "sklearn"} if column is None else {"source": "sklearn", "column": column},
    )


def tree_gain(left, right, wn, imp):
    """Weighted impurity decrease of every split of a tree (children with their own statistics)."""
    leaf = left < 0
    lc, rc = np.maximum(left, 0), np.maximum(right, 0)
    g = wn * imp - wn[lc] * imp[lc] - wn[rc] * imp[rc]
    return np.where(leaf, 0.0, g)


def _member_graph(m, K, class_map, feature_map, task):
    """Graph of one ensemble member: a scikit-learn tree or a treebench estimator with to_graph."""
    if hasattr(m, "tree_") and hasattr(m.tree_, "children_left"):
        if task == "classification":
            return sklearn_tree(m, K=K, class_map=class_map, feature_map=feature_map)
        return sklearn_tree(m, feature_map=feature_map)
    if not hasattr(m, "to_graph"):
        raise TypeError(f"ensemble member {type(m).__name__} cannot be exported")
    sub = m.to_graph()
    if (
        len(sub.graphs) != 1
        or sub.combine != "mean"
        or any(s["op"] != "cast" for s in sub.transform)
    ):
        raise TypeError(f"ensemble member {type(m).__name__} is not a single hard graph")
    g = sub.graphs[0]
    if feature_map is not None and g.feature is not None:
        fm = np.asarray(feature_map, dtype=np.int64)
        g.feature = np.where(g.left < 0, -1, fm[np.maximum(g.feature, 0)])
    if task == "classification" and class_map is not None:
        v = np.zeros((g.n_nodes, K))
        v[:, np.asarray(class_map, dtype=np.int64)] = g.value
        g.value = v
    return g


def _class_map(member_classes, classes, encoded):
    """Global class index of each of a member's classes (members of bagging see encoded labels)."""
    mc = np.asarray(member_classes)
    if encoded:
        return mc.astype(np.int64)
    return np.searchsorted(np.asarray(classes), mc)


def sklearn_ensemble(est, inner=None, meta=None) -> GraphEnsemble:
    """Return the GraphEnsemble of a scikit-learn tree or tree ensemble.

    CART, random forest, bagging, gradient boosting, AdaBoost; ``inner`` is the fitted ensemble
    (default ``est`` itself).
    """
    from sklearn.ensemble import (
        AdaBoostClassifier,
        AdaBoostRegressor,
        BaggingClassifier,
        BaggingRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
    )

    inner = est if inner is None else inner
    task = task_of(est)
    classes = list(est.classes_) if task == "classification" else None
    K = len(classes) if classes is not None else None
    n_features = int(est.n_features_in_)
    kw = {
        "task": task,
        "classes": classes,
        "n_features": n_features,
        "transform": [CAST32],
        "meta": meta or graph_meta(est),
        "feature_names": feature_names_of(est),
    }
    if hasattr(inner, "tree_"):  # a single CART
        g = sklearn_tree(inner, K=K) if task == "classification" else sklearn_tree(inner)
        return GraphEnsemble(
            [g], combine="mean", output="proba" if task == "classification" else "identity", **kw
        )
    if isinstance(inner, GradientBoostingClassifier | GradientBoostingRegressor):
        stages = inner.estimators_
        n_col = stages.shape[1]
        graphs = [
            sklearn_tree(stages[s, k], K=n_col, column=k)
            for s in range(stages.shape[0])
            for k in range(n_col)
        ]
        init = np.asarray(
            inner._raw_predict_init(np.zeros((1, n_features), np.float32))[0], dtype=np.float64
        )
        lr = float(inner.learning_rate)
        if task == "classification":
            out = "logistic" if n_col == 1 else "softmax"
        else:
            out = "identity"
        kw["meta"] = {**kw["meta"], "learning_rate": lr}
        return GraphEnsemble(
            graphs, combine="sum", weights=[lr] * len(graphs), init=init.tolist(), output=out, **kw
        )
    members = list(inner.estimators_)
    feats = getattr(inner, "estimators_features_", None)
    encoded = isinstance(inner, BaggingClassifier | BaggingRegressor) or not isinstance(
        inner, AdaBoostClassifier
    )
    graphs = []
    for i, m in enumerate(members):
        cm = (
            _class_map(m.classes_, classes, encoded)
            if task == "classification" and hasattr(m, "classes_")
            else None
        )
        fm = None if feats is None else feats[i]
        graphs.append(_member_graph(m, K, cm, fm, task))
    if isinstance(inner, AdaBoostClassifier):
        w = np.asarray(inner.estimator_weights_, dtype=np.float64)
        if w[len(members) :].any():  # pragma: no cover - sklearn zero-fills unused weights
            raise ValueError("AdaBoost weights beyond the fitted members are not zero")
        return GraphEnsemble(
            graphs, combine="samme", weights=w[: len(members)].tolist(), output="samme", **kw
        )
    if isinstance(inner, AdaBoostRegressor):
        w = np.asarray(inner.estimator_weights_, dtype=np.float64)[: len(members)]
        return GraphEnsemble(graphs, combine="median", weights=w.tolist(), output="identity", **kw)
    return GraphEnsemble(
        graphs, combine="mean", output="proba" if task == "classification" else "identity", **kw
    )
