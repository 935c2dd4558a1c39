"""Converters from fitted treebench estimators to :class:`GraphEnsemble` (called by their ``to_graph``)."""

from __future__ import annotations

import numpy as np

from treebench.inspect.graph import DecisionGraph, GraphEnsemble


class NotExportableError(TypeError):
    """A fitted model whose splits a decision graph cannot represent (e.g. CNN-feature splits)."""


CAST32 = {"op": "cast", "dtype": "float32"}


def export_graph(estimator, X=None, y=None, sample_weight=None) -> GraphEnsemble:
    """The decision graph(s) of a fitted estimator (its ``to_graph()``), annotated with ``(X, y)``.

    Training statistics (samples per node, class counts, impurity) that the model does not store
    are computed by routing ``X`` (normally the training data) when it is given.
    """
    to_graph = getattr(estimator, "to_graph", None)
    if to_graph is None:
        raise TypeError(f"{type(estimator).__name__} has no to_graph(): it cannot be exported")
    model = to_graph()
    if X is not None:
        model.annotate(X, y, sample_weight)
    return model


def _meta(est, **extra) -> dict:
    params = {}
    for k, v in est.get_params(deep=False).items():
        params[k] = v if isinstance(v, int | float | str | bool | type(None)) else repr(v)
    return {
        "method": getattr(type(est), "_tb_name", None),
        "estimator": type(est).__name__,
        "params": params,
        **extra,
    }


def _normalize_rows(v):
    """Row-normalised copy, with the same arithmetic scikit-learn's predict_proba uses."""
    v = np.array(v, dtype=np.float64)
    tot = v.sum(axis=1)[:, None]
    tot[tot == 0.0] = 1.0
    return v / tot


def _task(est) -> str:
    from sklearn.base import is_classifier

    return "classification" if is_classifier(est) else "regression"


def _image_shape(est):
    s = getattr(est, "image_shape", None)
    return None if s is None else [int(v) for v in s]


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
        vals = _normalize_rows(raw) if normalize else raw
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
    """GraphEnsemble of a scikit-learn tree or tree ensemble (``inner`` = the fitted ensemble,
    default ``est`` itself): CART, random forest, bagging, gradient boosting, AdaBoost."""
    from sklearn.ensemble import (
        AdaBoostClassifier,
        AdaBoostRegressor,
        BaggingClassifier,
        BaggingRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
    )

    inner = est if inner is None else inner
    task = _task(est)
    classes = list(est.classes_) if task == "classification" else None
    K = len(classes) if classes is not None else None
    n_features = int(est.n_features_in_)
    kw = {
        "task": task,
        "classes": classes,
        "n_features": n_features,
        "transform": [CAST32],
        "meta": meta or _meta(est),
        "feature_names": _feature_names(est),
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


def _feature_names(est):
    names = getattr(est, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


# ----------------------------------------------------------------------------- TnT / NDG


def tnt_graph(est) -> GraphEnsemble:
    """A TnT / NDG decision graph (shared children kept): right iff x[feature] > threshold."""
    if hasattr(est, "ensemble_"):
        return sklearn_ensemble(est, inner=est.ensemble_, meta=_meta(est))
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
        meta=_meta(est),
        feature_names=_feature_names(est),
    )


# ----------------------------------------------------------------------------- ReDT


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
        meta=_meta(est, alpha=float(est.alpha_)),
        feature_names=_feature_names(est),
        image_shape=_image_shape(est),
    )


# ----------------------------------------------------------------------------- E2EDT / E2EDF


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


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
    pi = _np(est.pi_).astype(np.float64)
    soft = est.inference == "probabilistic" and bank is not None
    W = _np(bank.w) if bank is not None else np.zeros((0, p), np.float32)
    B = _np(bank.b) if bank is not None else np.zeros(0, np.float32)
    F = None if bank is None or bank.feat is None else _np(bank.feat).astype(np.int64)
    gamma = _np(est.gamma_) if soft else None
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
        meta=_meta(est, **notes),
        feature_names=_feature_names(est),
        image_shape=_image_shape(est),
    )


# ----------------------------------------------------------------------------- One-Stage Tree


def onestage_graph(est) -> GraphEnsemble:
    """One-Stage Tree: the pruned complete oblique tree (a row stops at the first pruned node).

    The model goes to the level-order left child iff ``(w_0 - w_1) . [x; 1] > 0``; the exported
    graph stores that child as ``right`` so that every oblique test reads ``w . x + b > 0``.
    """
    D = int(est.depth_)
    n_int = 2**D - 1
    n_all = 2 * n_int + 1
    keep = np.asarray(est.keep_, dtype=bool)
    reach = est._reachable(keep, D)  # splits whose ancestors are all splits
    include = np.zeros(n_all, dtype=bool)
    include[0] = True
    inner = np.flatnonzero(reach)
    include[2 * inner + 1] = True
    include[2 * inner + 2] = True
    ids = np.flatnonzero(include)
    new = np.full(n_all, -1, dtype=np.int64)
    new[ids] = np.arange(len(ids))
    is_split = np.zeros(len(ids), dtype=bool)
    is_split[ids < n_int] = reach[ids[ids < n_int]]
    Wd = np.asarray(est.Wdiff_, dtype=np.float32)
    p = Wd.shape[0] - 1
    left = np.where(is_split, new[np.minimum(2 * ids + 2, n_all - 1)], -1)
    right = np.where(is_split, new[np.minimum(2 * ids + 1, n_all - 1)], -1)
    w = np.zeros((len(ids), p), dtype=np.float32)
    b = np.zeros(len(ids), dtype=np.float32)
    sp = ids[is_split]
    w[is_split] = Wd[:p, sp].T
    b[is_split] = Wd[p, sp]
    task = est._task
    vals = np.asarray(est.values_, dtype=np.float64)[ids]
    kw = {}
    if task == "classification":
        kw = {"classes": list(est.classes_), "output": "proba"}
    else:
        vals = vals[:, :1]
        kw = {
            "output": "identity",
            "output_scale": float(est.y_scale_),
            "output_shift": float(est.y_mean_),
        }
    g = DecisionGraph(
        left=left,
        right=right,
        value=vals,
        weight=w,
        bias=b,
        dtype="float32",
        info={"level_order_id": ids.tolist()},
    )
    return GraphEnsemble(
        [g],
        task=task,
        n_features=p,
        transform=_standardize64(est),
        combine="mean",
        meta=_meta(est, importance="|w| weighted (One-Stage paper Sect. 4.5.2)"),
        feature_names=_feature_names(est),
        **kw,
    )


def _standardize64(est) -> list[dict]:
    """Input transform of models that standardise in float64 then compute in float32."""
    mean, scale = np.asarray(est.x_mean_).tolist(), np.asarray(est.x_scale_).tolist()
    return [
        {"op": "cast", "dtype": "float64"},
        {"op": "standardize", "mean": mean, "scale": scale, "dtype": "float64"},
        CAST32,
    ]


# ----------------------------------------------------------------------------- Soft Decision Tree


def sdt_graph(est) -> GraphEnsemble:
    """Soft Decision Tree as a soft oblique tree: right (the model's left child) with probability
    sigmoid(w . x + b); the output is softmax of the path-probability mixture of leaf logits."""
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
        transform=_standardize64(est),
        combine="mean",
        output="softmax",
        meta=_meta(est),
        feature_names=_feature_names(est),
    )


# ----------------------------------------------------------------------------- Hinge forest / ferns


def hinge_graph(est) -> GraphEnsemble:
    """Random Hinge Forest / Ferns: learned features -> running-statistics BN -> hinge trees on the
    normalised features (right iff z[f] > t; output = leaf weight x smallest |z[f] - t| on the path)
    -> linear layer or sum. Ferns are exported as complete trees whose levels share one test."""
    import torch

    net = est.net_
    p = int(est.n_features_in_)
    steps: list[dict] = [CAST32]
    with torch.no_grad():
        bn = net.bn
        mean = _np(bn.running_mean).astype(np.float32)
        std = _np((bn.running_var.abs() + bn.eps).sqrt()).astype(np.float32)
        if net.pool_kind == "linear":
            steps.append(
                {"op": "linear", "weight": _np(net.pool.weight).tolist(), "dtype": "float32"}
            )
        elif net.pool_kind == "conv":
            Wc = _np(net.pool.weight)
            c, h, w_ = net.image_chw
            st = int(net.pool.stride[0])
            kh, kw_ = Wc.shape[2:]
            rep = ((h - kh) // st + 1) * ((w_ - kw_) // st + 1)
            mean, std = np.repeat(mean, rep), np.repeat(std, rep)
            steps.append(
                {
                    "op": "conv2d",
                    "weight": Wc.tolist(),
                    "stride": st,
                    "chw": [c, h, w_],
                    "dtype": "float32",
                }
            )
        steps.append(
            {"op": "batchnorm", "mean": mean.tolist(), "std": std.tolist(), "dtype": "float32"}
        )
        f = net.forest
        feats = _np(f.features).astype(np.int64)
        thr = _np(f.thresholds).astype(np.float32)
        lw = _np(f.weights).astype(np.float32)
        D = int(f.depth)
        n_int = 2**D - 1
        ids = np.arange(2 * n_int + 1)
        is_split = ids < n_int
        level = np.floor(np.log2(ids + 1)).astype(np.int64)
        graphs = []
        for m in range(int(f.n_trees)):
            if f.kind == "fern":
                fe = np.where(is_split, feats[m][np.minimum(level, D - 1)], -1)
                th = np.where(is_split, thr[m][np.minimum(level, D - 1)], 0.0)
            else:
                fe = np.where(is_split, feats[m][np.minimum(ids, n_int - 1)], -1)
                th = np.where(is_split, thr[m][np.minimum(ids, n_int - 1)], 0.0)
            v = np.zeros((len(ids), lw.shape[2]))
            v[n_int:] = lw[m]
            graphs.append(
                DecisionGraph(
                    left=np.where(is_split, 2 * ids + 1, -1),
                    right=np.where(is_split, 2 * ids + 2, -1),
                    value=v,
                    feature=fe,
                    threshold=th.astype(np.float32).astype(np.float64),
                    leaf_mode="hinge",
                    dtype="float32",
                    info={"kind": f.kind},
                )
            )
        kw = {}
        if net.aggregation == "linear":
            kw = {
                "combine": "linear",
                "head_weight": _np(net.head.weight).tolist(),
                "head_bias": _np(net.head.bias).tolist(),
                "head_dtype": "float32",
            }
        else:
            kw = {"combine": "sum"}
    task = _task(est)
    if task == "classification":
        kw.update(classes=list(est.classes_), output="softmax")
    else:
        kw.update(output="identity", output_scale=float(est._y_sd), output_shift=float(est._y_mu))
    names = None if net.pool_kind != "none" else _feature_names(est)
    return GraphEnsemble(
        graphs,
        task=task,
        n_features=p,
        transform=steps,
        meta=_meta(est, features=net.pool_kind, aggregation=net.aggregation, kind=f.kind),
        feature_names=names if names else None,
        image_shape=_image_shape(est),
        **kw,
    )
