"""Random Hinge Forest / Ferns as hinge decision graphs."""

from __future__ import annotations

import numpy as np

from treebench.methods._export import (
    CAST32,
    DecisionGraph,
    GraphEnsemble,
    feature_names_of,
    graph_meta,
    image_shape_of,
    task_of,
    to_numpy,
)


def hinge_graph(est) -> GraphEnsemble:
    """Random Hinge Forest / Ferns.

    Learned features -> running-statistics BN -> hinge trees on the normalised features (right iff
    z[f] > t; output = leaf weight x smallest |z[f] - t| on the path) -> linear layer or sum. Ferns
    are exported as complete trees whose levels share one test.
    """
    import torch

    net = est.net_
    p = int(est.n_features_in_)
    steps: list[dict] = [CAST32]
    with torch.no_grad():
        bn = net.bn
        mean = to_numpy(bn.running_mean).astype(np.float32)
        std = to_numpy((bn.running_var.abs() + bn.eps).sqrt()).astype(np.float32)
        if net.pool_kind == "linear":
            steps.append(
                {"op": "linear", "weight": to_numpy(net.pool.weight).tolist(), "dtype": "float32"}
            )
        elif net.pool_kind == "conv":
            Wc = to_numpy(net.pool.weight)
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
        feats = to_numpy(f.features).astype(np.int64)
        thr = to_numpy(f.thresholds).astype(np.float32)
        lw = to_numpy(f.weights).astype(np.float32)
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
                "head_weight": to_numpy(net.head.weight).tolist(),
                "head_bias": to_numpy(net.head.bias).tolist(),
                "head_dtype": "float32",
            }
        else:
            kw = {"combine": "sum"}
    task = task_of(est)
    if task == "classification":
        kw.update(classes=list(est.classes_), output="softmax")
    else:
        kw.update(output="identity", output_scale=float(est._y_sd), output_shift=float(est._y_mu))
    names = None if net.pool_kind != "none" else feature_names_of(est)
    return GraphEnsemble(
        graphs,
        task=task,
        n_features=p,
        transform=steps,
        meta=graph_meta(est, features=net.pool_kind, aggregation=net.aggregation, kind=f.kind),
        feature_names=names if names else None,
        image_shape=image_shape_of(est),
        **kw,
    )
