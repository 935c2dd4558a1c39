"""One-Stage Tree as a decision graph (the pruned complete oblique tree)."""

from __future__ import annotations

import numpy as np

from treebench.methods._export import (
    DecisionGraph,
    GraphEnsemble,
    feature_names_of,
    graph_meta,
    standardize64,
)
from treebench.methods.onestage.core import reachable


def onestage_graph(est) -> GraphEnsemble:
    """One-Stage Tree: the pruned complete oblique tree (a row stops at the first pruned node).

    The model goes to the level-order left child iff ``(w_0 - w_1) . [x; 1] > 0``; the exported
    graph stores that child as ``right`` so that every oblique test reads ``w . x + b > 0``.
    """
    D = int(est.depth_)
    n_int = 2**D - 1
    n_all = 2 * n_int + 1
    keep = np.asarray(est.keep_, dtype=bool)
    reach = reachable(keep, D)  # splits whose ancestors are all splits
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
        transform=standardize64(est),
        combine="mean",
        meta=graph_meta(est, importance="|w| weighted (One-Stage paper Sect. 4.5.2)"),
        feature_names=feature_names_of(est),
        **kw,
    )
