"""Human-readable views of a GraphEnsemble: split text, rule listings and feature importances."""

from __future__ import annotations

import numpy as np

from treebench.graph.model import DecisionGraph, GraphEnsemble

_AFFINE_OPS = ("cast", "standardize", "batchnorm")


# ----------------------------------------------------------------------------- split space


def split_space(model: GraphEnsemble) -> tuple[list[str], tuple[np.ndarray, np.ndarray] | None]:
    """Names of the columns the graphs split on, and a per-column affine map to the inputs.

    When the input transform is per-column affine (cast, standardise, batch norm), split column j is
    ``a_j * x_j + c_j`` and ``(a, c)`` is returned so tests can be shown in input units. With
    learned features (``linear``/``conv2d`` steps) the split columns are the learned features ``h0,
    h1, ...`` and the map is ``None``.
    """
    p = model.n_features
    if any(s["op"] not in _AFFINE_OPS for s in model.transform):
        width = _learned_width(model)
        return [f"h{k}" for k in range(width)], None
    a, c = np.ones(p), np.zeros(p)
    for s in model.transform:
        if s["op"] == "standardize":
            m, sc = np.asarray(s["mean"], float), np.asarray(s["scale"], float)
            a, c = a / sc, (c - m) / sc
        elif s["op"] == "batchnorm":
            m, sd = np.asarray(s["mean"], float), np.asarray(s["std"], float)
            a, c = a / sd, (c - m) / sd
    return [model.feature_name(j) for j in range(p)], (a, c)


def _learned_width(model):
    from treebench.graph.model import apply_transform

    return int(apply_transform(model.transform, np.zeros((1, model.n_features))).shape[1])


def _transform_is_identity(model):
    return all(s["op"] == "cast" for s in model.transform)


def oblique_terms(model: GraphEnsemble, g: DecisionGraph, i: int, raw: bool = True):
    """(weights over split columns, bias) of oblique node ``i``.

    ``raw`` folds a per-column affine input transform in, so the test reads in input units.
    """
    names, amap = split_space(model)
    n_cols = len(names)
    w = np.zeros(n_cols)
    cols = np.arange(g.weight.shape[1]) if g.weight_feature is None else g.weight_feature[i]
    np.add.at(w, cols, g.weight[i])
    b = float(g.bias[i])
    if raw and amap is not None:
        a, c = amap
        b = b + float((w * c).sum())
        w = w * a
    return w, b


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def oblique_text(names, w, b, max_terms=3) -> str:
    """``0.53*petal_length - 0.2*sepal_width + ... + 0.1`` with the largest |weights| first."""
    order = np.argsort(-np.abs(w), kind="stable")
    order = [j for j in order if w[j] != 0]
    shown = order if max_terms is None or len(order) <= max_terms + 2 else order[:max_terms]
    parts = []
    for k, j in enumerate(shown):
        sign = ("-" if w[j] < 0 else "+") + " " if k else ("-" if w[j] < 0 else "")
        parts.append(f"{sign}{_fmt(abs(w[j]))}*{names[j]}")
    if len(order) > len(shown):
        parts.append(f"+ ...({len(order) - len(shown)} more)")
    parts.append(f"{'-' if b < 0 else '+'} {_fmt(abs(b))}")
    return " ".join(parts) if parts else "0"


def split_text(
    model: GraphEnsemble, g: DecisionGraph, i: int, right: bool, max_terms=3, raw=True
) -> str:
    """Return the test of node ``i`` as text, for the branch ``right`` (true) or left (false)."""
    names, amap = split_space(model)
    if g.oblique:
        w, b = oblique_terms(model, g, i, raw=raw)
        expr = oblique_text(names, w, b, max_terms)
        return f"{expr} {'>' if right else '<='} 0"
    f, t = int(g.feature[i]), float(g.threshold[i])
    if raw and amap is not None:
        a, c = amap
        t = (t - c[f]) / a[f]
    return f"{names[f]} {'>' if right else '<='} {_fmt(t)}"


# ----------------------------------------------------------------------------- leaves


def node_class(model: GraphEnsemble, g: DecisionGraph, i: int) -> int | None:
    """Dominant class of node ``i``: its training class counts, else its value row."""
    if model.task != "classification":
        return None
    if g.class_counts is not None and g.class_counts[i].sum() > 0:
        return int(np.argmax(g.class_counts[i]))
    v = g.value[i]
    if model.combine in ("sum", "linear") or g.leaf_mode != "value" or g.soft:
        return None  # scores, not distributions: no dominant class without training counts
    if v.shape[0] == len(model.classes) and np.any(v != 0):
        return int(np.argmax(v))
    return None


def leaf_parts(model: GraphEnsemble, g: DecisionGraph, i: int) -> tuple[str, str]:
    """Return (what the leaf outputs, its training statistics) as two short strings."""
    stats = []
    v = g.value[i]
    if g.leaf_mode == "hinge":
        vs = ", ".join(_fmt(x) for x in v[:4]) + (", ..." if len(v) > 4 else "")
        head = f"[{vs}] x |min margin|"
    elif (
        model.task == "regression"
        or model.combine in ("sum", "linear")
        or model.output == "softmax"
    ):
        if model.task == "regression" and v.shape[0] == 1:
            val = (
                v[0] * model.output_scale + model.output_shift if model.combine == "mean" else v[0]
            )
            head = f"value {_fmt(val)}"
        elif "column" in g.info:  # boosting: one tree per class column (binary: log-odds)
            k = int(g.info["column"])
            if model.classes is None:
                name = k
            else:
                name = model.class_name(len(model.classes) - 1 if v.shape[0] == 1 else k)
            head = f"score[{name}] {_fmt(v[k])}"
        else:
            kind = "logits" if g.soft else "scores"
            head = f"{kind} [{', '.join(_fmt(x) for x in v)}]"
    else:
        k = int(np.argmax(v))
        tot = v.sum()
        head = f"class {model.class_name(k)}"
        if 0 < v[k] < tot:
            stats.append(f"p={v[k] / tot:.2f}")
    if g.n_samples is not None:
        stats.append(f"n={int(round(g.n_samples[i]))}")
    if g.class_counts is not None and model.task == "classification" and len(model.classes) <= 5:
        stats.append("[" + ", ".join(f"{c:.0f}" for c in g.class_counts[i]) + "]")
    return head, " ".join(stats)


def leaf_text(model: GraphEnsemble, g: DecisionGraph, i: int) -> str:
    """Return leaf ``i``'s output and training statistics as one string."""
    head, stats = leaf_parts(model, g, i)
    return f"{head} ({stats})" if stats else head


# ----------------------------------------------------------------------------- rules


def graph_rules(model: GraphEnsemble, g: DecisionGraph, max_rules=500, max_terms=3) -> list[str]:
    """Return one ``if ... then ...`` line per satisfiable root-to-leaf path.

    DAG leaves appear once per path; a last line counts the paths left out.

    Axis-aligned conditions on one feature are merged into the tightest bounds. In a decision
    graph (TnT, NDG) a node reached from several parents may sit below a test that contradicts
    the one its child tests (``x > 3.5`` then ``x <= 2.5``): no input follows such a path, so it
    is not listed; the count of those paths is. Oblique tests are not checked (every path is
    listed).
    """
    names, amap = split_space(model)
    n_paths = _path_counts(g)
    rules: list[str] = []
    stack = [(g.root, [], {})]
    truncated = False
    dead = 0  # root-to-leaf paths through a contradiction
    while stack:
        i, path, bounds = stack.pop()
        if g.left[i] < 0:
            if len(rules) >= max_rules:
                truncated = True
                break
            rules.append(_rule_line(model, g, i, path, names, amap, max_terms))
            continue
        for right in (True, False):  # left popped first: the listing reads left to right
            child = int(g.right[i] if right else g.left[i])
            b = bounds if g.oblique else _narrowed(bounds, int(g.feature[i]), g.threshold[i], right)
            if b is None:
                dead += int(n_paths[child])
                continue
            stack.append((child, [*path, (i, right)], b))
    if truncated:
        rules.append(f"... (more than {max_rules} paths; raise max_rules to list them all)")
    if dead:
        rules.append(
            f"# {'at least ' if truncated else ''}{dead:,} of {int(n_paths[g.root]):,} "
            "root-to-leaf paths left out: each passes "
            "two tests no input meets together"
        )
    return rules


def _narrowed(bounds: dict, f: int, t: float, right: bool) -> dict | None:
    """Return ``bounds`` (feature -> (lo, hi): lo < x <= hi) narrowed by one test.

    The test is ``x > t`` (``right``) or ``x <= t``; None when no value meets them all.
    """
    lo, hi = bounds.get(f, (-np.inf, np.inf))
    lo, hi = (max(lo, t), hi) if right else (lo, min(hi, t))
    if lo >= hi:
        return None
    return {**bounds, f: (lo, hi)}


def _path_counts(g: DecisionGraph) -> np.ndarray:
    """Root-to-leaf path counts from each node (a DAG's shared nodes count once per path)."""
    n = np.zeros(g.n_nodes, dtype=object)  # Python ints: a deep DAG has more than 2**63 paths
    for i in reversed(g.topo_order()):
        n[i] = 1 if g.left[i] < 0 else n[int(g.left[i])] + n[int(g.right[i])]
    return n


def _rule_line(model, g, leaf, path, names, amap, max_terms):
    conds: list[str] = []
    bounds: dict[int, list] = {}
    for i, right in path:
        if g.oblique:
            w, b = oblique_terms(model, g, i)
            conds.append(f"({oblique_text(names, w, b, max_terms)} {'>' if right else '<='} 0)")
            continue
        f, t = int(g.feature[i]), float(g.threshold[i])
        if amap is not None:
            t = (t - amap[1][f]) / amap[0][f]
        lo, hi = bounds.setdefault(f, [None, None])
        if right:
            bounds[f][0] = t if lo is None else max(lo, t)
        else:
            bounds[f][1] = t if hi is None else min(hi, t)
    for f, (lo, hi) in bounds.items():
        if lo is not None:
            conds.append(f"{names[f]} > {_fmt(lo)}")
        if hi is not None:
            conds.append(f"{names[f]} <= {_fmt(hi)}")
    cond = " and ".join(conds) if conds else "true"
    prefix = "soft: " if g.soft else ""
    return f"{prefix}if {cond} then {leaf_text(model, g, leaf)}"


def rules_text(model: GraphEnsemble, max_graphs=3, max_rules=500, max_terms=3) -> str:
    """Rule listing of the first ``max_graphs`` graphs, with a header on how they combine."""
    lines = [
        f"# {model.meta.get('method') or 'model'}: {len(model.graphs)} graph(s), "
        f"combine={model.combine}, output={model.output}"
    ]
    if _learned_features(model):
        lines.append("# tests use learned features h_k = batchnorm(pool(x))_k (see the JSON)")
    if any(g.soft for g in model.graphs):
        lines.append(
            "# soft routing: a sample follows every path with the product of "
            "sigmoid(test) probabilities; rules show the tests"
        )
    for m, g in enumerate(model.graphs[:max_graphs]):
        w = "" if model.weights is None else f" (weight {_fmt(float(model.weights[m]))})"
        lines.append(f"\n## graph {m}{w}")
        lines += graph_rules(model, g, max_rules=max_rules, max_terms=max_terms)
    if len(model.graphs) > max_graphs:
        lines.append(f"\n# ... {len(model.graphs) - max_graphs} more graph(s) not listed")
    return "\n".join(lines) + "\n"


def _learned_features(model):
    return any(s["op"] in ("linear", "conv2d") for s in model.transform)


# ----------------------------------------------------------------------------- importances


def graph_importances(model: GraphEnsemble, g: DecisionGraph, oblique_weighting="normalized"):
    """Unnormalised importances over the split columns of one graph, or ``None`` without stats.

    Every split contributes its weighted impurity decrease (``gain``). Axis splits give it to their
    feature; oblique splits spread it over the features by ``|w_j|`` (the One-Stage paper's
    weighting; ``"normalized"`` divides by ``sum_j |w_j|`` so a node's total is its decrease,
    ``"raw"`` multiplies by ``|w_j|`` as printed in the paper). Columns that were constant in the
    training data (``meta["split_column_constant"]``, set by ``annotate``) get no share.
    """
    if g.gain is None:
        return None
    names, _ = split_space(model)
    imp = np.zeros(len(names))
    inner = np.flatnonzero((g.left >= 0) & g.reachable())
    if not g.oblique:
        np.add.at(imp, g.feature[inner], g.gain[inner])
        return imp
    const = model.meta.get("split_column_constant") or []
    for i in inner:
        w, _b = oblique_terms(model, g, i, raw=False)
        a = np.abs(w)
        a[np.asarray(const, dtype=np.int64)] = 0.0  # a constant column has no effect
        if oblique_weighting == "normalized":
            a = a / a.sum() if a.sum() > 0 else a
        imp += g.gain[i] * a
    return imp


def feature_importances(model: GraphEnsemble, oblique_weighting="normalized", project=True):
    """Feature importances (sum 1) and the names they refer to.

    Per graph: impurity decrease per feature divided by the root weight and normalised to sum 1
    (scikit-learn's ``feature_importances_``); the ensemble value is the mean over graphs with a
    split (AdaBoost: weighted by the member weights; boosting sums: graphs not normalised first, as
    scikit-learn's gradient boosting), normalised. Learned linear features are
    projected back to the inputs by ``|W_k| / sum |W_k|`` when ``project``. Returns
    ``(importances, names)``; raises ``ValueError`` when the model has no training statistics
    (export it with training data: ``export_graph(est, X, y)``).
    """
    names, _ = split_space(model)
    per, wts = [], []
    for m, g in enumerate(model.graphs):
        imp = graph_importances(model, g, oblique_weighting)
        if imp is None:
            raise ValueError(
                "the model has no training statistics: export it with training "
                "data (export_graph(est, X, y)) or call model.annotate(X, y)"
            )
        if (g.left[g.reachable()] >= 0).any():
            if model.combine == "sum":  # boosting: per-tree decreases are comparable (sklearn)
                root_w = g.weighted_n if g.weighted_n is not None else g.n_samples
                per.append(imp / root_w[g.root] if root_w is not None else imp)
            else:
                tot = imp.sum()
                per.append(imp / tot if tot > 0 else imp)
            wts.append(1.0 if model.combine not in ("samme", "median") else float(model.weights[m]))
    if not per:
        imp = np.zeros(len(names))
    else:
        imp = np.average(np.array(per), axis=0, weights=np.array(wts))
    lin = [s for s in model.transform if s["op"] == "linear"]
    if project and lin and len(lin) == 1:
        W = np.abs(np.asarray(lin[0]["weight"], float))  # (n_learned, n_inputs)
        W = W / np.maximum(W.sum(1, keepdims=True), 1e-300)
        imp = imp @ W
        names = [model.feature_name(j) for j in range(model.n_features)]
    tot = imp.sum()
    return (imp / tot if tot > 0 else imp), names


def importances_text(model: GraphEnsemble, top=None, **kw) -> str:
    """Return the feature importances as text lines, largest first (the ``top`` ones)."""
    imp, names = feature_importances(model, **kw)
    order = np.argsort(-imp, kind="stable")
    if top is not None:
        order = order[:top]
    lines = ["feature,importance"] + [f"{names[j]},{imp[j]:.6f}" for j in order]
    return "\n".join(lines) + "\n"
