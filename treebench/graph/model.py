"""The decision-graph model every hard-routed method exports.

Structure, routing, predict, JSON load/save.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from treebench.errors import TreebenchError
from treebench.graph import flat as flatgraph

FORMAT = "treebench.decision_graph/1"
COMBINES = ("mean", "sum", "linear", "samme", "median")
OUTPUTS = ("proba", "normalize", "softmax", "logistic", "samme", "identity")
LEAF_MODES = ("value", "hinge")

_ARRAYS = (
    "left",
    "right",
    "value",
    "feature",
    "threshold",
    "weight",
    "weight_feature",
    "bias",
    "n_samples",
    "weighted_n",
    "n_right",
    "impurity",
    "gain",
    "class_counts",
)
_INT_ARRAYS = ("left", "right", "feature", "weight_feature")


class NotExportableError(TypeError, TreebenchError):
    """A fitted model whose splits a decision graph cannot represent (e.g. CNN-feature splits)."""


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _softmax(z):
    z = np.asarray(z, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@dataclass
class DecisionGraph:
    """One decision tree or decision graph (a DAG: a node may have several parents) in flat arrays.

    Node ``i`` is a leaf when ``left[i] < 0``. An internal node sends a sample to ``right[i]`` when
    its test is true, else to ``left[i]``:

    * axis-aligned (``feature`` / ``threshold``): ``x[feature] > threshold``;
    * oblique (``weight`` / ``bias``, optional ``weight_feature`` naming the input column of each
      weight; ``None`` = all columns): ``weight . x[weight_feature] + bias > 0``.

    Parameters
    ----------
    left, right : ndarray of int, shape (n_nodes,)
        Child ids, -1 at leaves. Children may be shared (TnT graphs).
    value : ndarray of float, shape (n_nodes, n_outputs)
        Node output: a class distribution, a regression value, a raw boosting score or (``leaf_mode
        = "hinge"``) a leaf weight multiplied by the smallest absolute margin on the path. Internal
        rows may hold the node's training distribution (used for display only).
    feature, threshold : ndarray or None
        Axis-aligned split of each node (-1 / 0 at leaves).
    weight, bias, weight_feature : ndarray or None
        Oblique split of each node (rows of zeros at leaves).
    n_samples, weighted_n, n_right, impurity, gain, class_counts : ndarray or None
        Training statistics per node: samples reaching it, their total weight, how many went right,
        the node impurity (Gini or variance), the weighted impurity decrease of its split
        (``W_node imp_node - W_left imp_left - W_right imp_right`` over the samples of this node,
        also correct for shared children) and per-class counts.
    root : int
        Root node id.
    leaf_mode : {"value", "hinge"}
        ``hinge``: the output is ``value[leaf] * |r*|`` with r* the smallest-|margin| test on the
        path (ties: the shallower one), Random Hinge Forest's ReLU tree.
    soft : bool
        Soft routing: a sample goes right with probability ``sigmoid(test)`` and the output is the
        path-probability mixture of the leaf values (Soft Decision Tree).
    dtype : {"float32", "float64"}
        Precision of the split arithmetic (torch-trained models use float32).
    info : dict
        Free-form JSON-able notes (e.g. ``{"kind": "fern"}``).
    """

    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    feature: np.ndarray | None = None
    threshold: np.ndarray | None = None
    weight: np.ndarray | None = None
    weight_feature: np.ndarray | None = None
    bias: np.ndarray | None = None
    n_samples: np.ndarray | None = None
    weighted_n: np.ndarray | None = None
    n_right: np.ndarray | None = None
    impurity: np.ndarray | None = None
    gain: np.ndarray | None = None
    class_counts: np.ndarray | None = None
    root: int = 0
    leaf_mode: str = "value"
    soft: bool = False
    dtype: str = "float64"
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        self.left = np.asarray(self.left, dtype=np.int64)
        self.right = np.asarray(self.right, dtype=np.int64)
        self.value = np.asarray(self.value, dtype=np.float64)
        if self.value.ndim == 1:
            self.value = self.value[:, None]
        for name in _ARRAYS[3:]:
            v = getattr(self, name)
            if v is not None:
                setattr(
                    self, name, np.asarray(v, dtype=np.int64 if name in _INT_ARRAYS else np.float64)
                )
        if (self.feature is None) == (self.weight is None):
            raise ValueError("a DecisionGraph needs either feature/threshold or weight/bias")
        if self.weight is not None and self.bias is None:
            self.bias = np.zeros(len(self.left))
        if self.leaf_mode not in LEAF_MODES:
            raise ValueError(f"leaf_mode must be one of {LEAF_MODES}, got {self.leaf_mode!r}")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")

    # ------------------------------------------------------------------ structure
    @property
    def n_nodes(self) -> int:
        """Return the number of nodes."""
        return len(self.left)

    @property
    def oblique(self) -> bool:
        """Return whether the splits are oblique (a weight vector per node)."""
        return self.weight is not None

    @property
    def is_leaf(self) -> np.ndarray:
        """Return the mask of the leaves."""
        return self.left < 0

    def reachable(self) -> np.ndarray:
        """Boolean mask of the nodes reachable from the root."""
        return flatgraph.reachable(self.left, self.right, self.root)

    def topo_order(self) -> np.ndarray:
        """Reachable nodes, every node after all of its parents."""
        return flatgraph.topo_order(self.left, self.right, self.root)

    def parents(self) -> np.ndarray:
        """Return the number of parents of every node (more than one = a shared child of a DAG)."""
        return flatgraph.in_degree(self.left, self.right, self.root)

    def depth(self) -> int:
        """Longest root-to-leaf path (number of tests)."""
        return flatgraph.dag_depth(self.left, self.right, self.root)

    # ------------------------------------------------------------------ evaluation
    def _split_value(self, X, rows, nodes):
        """Test statistic of ``nodes`` on ``X[rows]``: x - t (axis) or w . x + b (oblique)."""
        dt = np.float32 if self.dtype == "float32" else np.float64
        if not self.oblique:
            return X[rows, self.feature[nodes]].astype(dt) - self.threshold[nodes].astype(dt)
        w = self.weight[nodes].astype(dt)
        if self.weight_feature is None:
            xs = X[rows].astype(dt)
        else:
            xs = X[rows[:, None], self.weight_feature[nodes]].astype(dt)
        return (xs * w).sum(axis=1) + self.bias[nodes].astype(dt)

    def _go_right(self, X, rows, nodes):
        if not self.oblique:  # exact comparison, as scikit-learn (float32 x vs float64 t)
            return X[rows, self.feature[nodes]] > self.threshold[nodes]
        return self._split_value(X, rows, nodes) > 0

    def route(self, X, visits: bool = False):
        """Hard routing of the (transformed) rows of ``X``.

        Returns ``(leaf, margin)``: the leaf of every row and, for ``leaf_mode="hinge"``, the
        smallest absolute margin on its path (else ``None``). With ``visits=True`` a third item is
        the list of ``(rows, nodes, went_right)`` arrays of every step (training statistics).
        """
        X = np.asarray(X)
        n = X.shape[0]
        leaf = np.empty(n, dtype=np.int64)
        hinge = self.leaf_mode == "hinge"
        margin = (
            np.full(n, np.inf, dtype=np.float32 if self.dtype == "float32" else np.float64)
            if hinge
            else None
        )
        rows = np.arange(n)
        cur = np.full(n, self.root, dtype=np.int64)
        steps = []
        for _ in range(self.n_nodes + 1):
            done = self.left[cur] < 0
            if done.any():
                leaf[rows[done]] = cur[done]
                if visits:
                    steps.append((rows[done], cur[done], None))
                rows, cur = rows[~done], cur[~done]
            if not rows.size:
                break
            if hinge:
                r = self._split_value(X, rows, cur)
                a = np.abs(r)
                better = a < margin[rows]  # strict: ties keep the shallower test
                margin[rows[better]] = a[better]
                right = r > 0
            elif self.soft:
                right = self._split_value(X, rows, cur) > 0
            else:
                right = self._go_right(X, rows, cur)
            if visits:
                steps.append((rows, cur, right))
            cur = np.where(right, self.right[cur], self.left[cur])
        else:  # pragma: no cover - a cycle is a corrupt graph
            raise ValueError("the decision graph has a cycle")
        return (leaf, margin, steps) if visits else (leaf, margin)

    def apply(self, X) -> np.ndarray:
        """Leaf reached by every row of the (transformed) ``X``.

        Soft graphs: the likeliest path.
        """
        return self.route(X)[0]

    def soft_reach(self, X) -> np.ndarray:
        """Path probability of every node for every row, shape (n, n_nodes) (soft routing)."""
        X = np.asarray(X)
        n = X.shape[0]
        mu = np.zeros((n, self.n_nodes))
        mu[:, self.root] = 1.0
        rows = np.arange(n)
        for i in self.topo_order():
            if self.left[i] < 0:
                continue
            z = self._split_value(X, rows, np.full(n, i)).astype(np.float64)
            p = _sigmoid(z)
            mu[:, self.right[i]] += mu[:, i] * p
            mu[:, self.left[i]] += mu[:, i] * (1.0 - p)
        return mu

    def output(self, X) -> np.ndarray:
        """Member output (n, n_outputs).

        Leaf value, hinge leaf weight x |margin|, or soft mixture.
        """
        if self.soft:
            mu = self.soft_reach(X)
            leaves = np.flatnonzero(self.is_leaf)
            return mu[:, leaves] @ self.value[leaves]
        leaf, margin = self.route(X)
        if self.leaf_mode == "hinge":
            v = self.value[leaf].astype(margin.dtype)
            return v * margin[:, None]
        return self.value[leaf]

    # ------------------------------------------------------------------ statistics
    def annotate(self, X, y=None, sample_weight=None, classes=None, overwrite=False) -> None:
        """Fill the training statistics by routing.

        The statistics are samples, right-going samples, class counts and impurity.

        ``X`` must already be transformed (see :meth:`GraphEnsemble.transform`). Classification
        needs ``classes`` (labels are mapped to their index); regression uses ``y`` as numbers.
        Existing statistics are kept unless ``overwrite``.
        """
        if self.n_samples is not None and not overwrite:
            return
        _, _, steps = self.route(X, visits=True)
        n_nodes = self.n_nodes
        w = np.ones(len(X)) if sample_weight is None else np.asarray(sample_weight, float)
        rows = np.concatenate([s[0] for s in steps]) if steps else np.zeros(0, np.int64)
        nodes = np.concatenate([s[1] for s in steps]) if steps else np.zeros(0, np.int64)
        self.n_samples = np.bincount(nodes, minlength=n_nodes).astype(np.float64)
        self.weighted_n = np.bincount(nodes, weights=w[rows], minlength=n_nodes)
        nr = np.zeros(n_nodes)
        for _r, nd, right in steps:
            if right is not None:
                nr += np.bincount(nd[right], minlength=n_nodes)
        self.n_right = nr
        if y is None:
            return
        y = np.asarray(y)
        if classes is not None:
            codes = np.searchsorted(np.asarray(classes), y)
            K = len(classes)
            cc = np.bincount(
                nodes * K + codes[rows], weights=w[rows], minlength=n_nodes * K
            ).reshape(n_nodes, K)
            self.class_counts = cc
            self.impurity = _gini(cc)
            cr = np.zeros((n_nodes, K))
            for r, nd, right in steps:
                if right is not None:
                    cr += np.bincount(
                        nd[right] * K + codes[r[right]], weights=w[r[right]], minlength=n_nodes * K
                    ).reshape(n_nodes, K)
            cl = cc - cr
            self.gain = cc.sum(1) * self.impurity - cl.sum(1) * _gini(cl) - cr.sum(1) * _gini(cr)
        else:
            yv = y.astype(np.float64)
            st = np.zeros((2, 3, n_nodes))  # (left/right) x (weight, sum, sum of squares)
            for r, nd, right in steps:
                if right is None:
                    continue
                for side, sel in ((0, ~right), (1, right)):
                    ww, yy = w[r[sel]], yv[r[sel]]
                    for j, val in enumerate((ww, ww * yy, ww * yy * yy)):
                        st[side, j] += np.bincount(nd[sel], weights=val, minlength=n_nodes)
            s1 = np.bincount(nodes, weights=w[rows] * yv[rows], minlength=n_nodes)
            s2 = np.bincount(nodes, weights=w[rows] * yv[rows] ** 2, minlength=n_nodes)
            self.impurity = _var(self.weighted_n, s1, s2)
            self.gain = (
                self.weighted_n * self.impurity
                - st[0, 0] * _var(st[0, 0], st[0, 1], st[0, 2])
                - st[1, 0] * _var(st[1, 0], st[1, 1], st[1, 2])
            )
        self.gain = np.where(self.left < 0, 0.0, np.maximum(self.gain, 0.0))

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Return the graph as JSON-ready lists and values."""
        d: dict[str, Any] = {
            "root": int(self.root),
            "leaf_mode": self.leaf_mode,
            "soft": bool(self.soft),
            "dtype": self.dtype,
            "info": _plain(self.info),
        }
        for name in _ARRAYS:
            v = getattr(self, name)
            if v is not None:
                d[name] = v.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> DecisionGraph:
        """Return the graph that :meth:`to_dict` wrote as ``d``."""
        kw = {k: d.get(k) for k in _ARRAYS}
        if kw.get("weight") is not None and len(kw["weight"]) and not len(kw["weight"][0]):
            kw["weight"] = np.zeros((len(kw["left"]), 0))
        return cls(
            **kw,
            root=int(d.get("root", 0)),
            leaf_mode=d.get("leaf_mode", "value"),
            soft=bool(d.get("soft", False)),
            dtype=d.get("dtype", "float64"),
            info=d.get("info") or {},
        )


def _gini(counts):
    tot = counts.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = counts / np.where(tot > 0, tot, 1)[:, None]
    return 1.0 - (p**2).sum(1)


def _var(W, s1, s2):
    W1 = np.where(W > 0, W, 1)
    return np.maximum(s2 / W1 - (s1 / W1) ** 2, 0.0)


def _plain(obj):
    """JSON-able copy of ``obj`` (numpy scalars and arrays become Python numbers and lists)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


# ----------------------------------------------------------------------------- input transforms


def apply_transform(steps: list[dict], X) -> np.ndarray:
    """Apply the model's input transform (a list of steps) to ``X``.

    Steps: ``cast`` (dtype), ``standardize`` ((x - mean) / scale in dtype), ``linear`` (x @ W.T,
    learned inner-product features), ``conv2d`` (valid convolution with stride, channels-first image
    of shape ``chw``, flattened channel-major), ``batchnorm`` ((x - mean) / std per column).
    """
    X = np.asarray(X)
    for s in steps:
        op = s["op"]
        dt = np.dtype(s.get("dtype", "float64"))
        if op == "cast":
            X = X.astype(dt)
        elif op == "standardize":
            X = ((X.astype(dt) - np.asarray(s["mean"], dt)) / np.asarray(s["scale"], dt)).astype(dt)
        elif op == "linear":
            X = X.astype(dt) @ np.asarray(s["weight"], dt).T
        elif op == "batchnorm":
            X = (X.astype(dt) - np.asarray(s["mean"], dt)) / np.asarray(s["std"], dt)
        elif op == "conv2d":
            c, h, w = s["chw"]
            W = np.asarray(s["weight"], dt)  # (F, C, kh, kw)
            st = int(s["stride"])
            img = X.astype(dt).reshape(len(X), c, h, w)
            win = np.lib.stride_tricks.sliding_window_view(img, W.shape[2:], axis=(2, 3))
            win = win[:, :, ::st, ::st]  # (n, C, oh, ow, kh, kw)
            out = np.einsum("ncijkl,fckl->nfij", win, W, optimize=True)
            X = out.reshape(len(X), -1)
        else:
            raise ValueError(f"unknown transform step {op!r}")
    return X


# ----------------------------------------------------------------------------- the model


@dataclass
class GraphEnsemble:
    """A fitted model as decision graphs plus the rule that combines their outputs.

    Single trees are ensembles of one graph. ``predict``/``predict_proba`` reproduce the
    estimator's.

    Parameters
    ----------
    graphs : list of DecisionGraph
    task : {"classification", "regression"}
    classes : list or None
        Class labels (classification), in the order of the output columns.
    n_features : int
        Number of input columns.
    transform : list of dict
        Input transform applied before the graphs (see :func:`apply_transform`).
    combine : {"mean", "sum", "linear", "samme", "median"}
        ``mean`` of member outputs (forests, bagging); ``sum`` = ``init + sum_m weights[m] * out_m``
        (gradient boosting: weights = learning rate; hinge ``sum`` aggregation); ``linear`` =
        ``[out_m]_m @ head_weight.T + head_bias`` (hinge forests' linear layer); ``samme`` =
        AdaBoost-SAMME weighted vote of the members' argmax classes; ``median`` = AdaBoost.R2
        weighted median of member predictions.
    weights, init, head_weight, head_bias : member weights, initial score, linear head.
    output : {"proba", "normalize", "softmax", "logistic", "samme", "identity"}
        Map from combined scores to ``predict_proba`` (classification) or prediction.
    output_scale, output_shift : float
        Regression: prediction = score * scale + shift (standardised targets).
    feature_names : list of str or None
    class_names : list of str or None
        Display names of ``classes`` (same order), e.g. the dataset's ``setosa`` for class 0.
    image_shape : list of int or None
    meta : dict
        Method name, estimator class, parameters and notes.
    """

    graphs: list[DecisionGraph]
    task: str
    n_features: int
    classes: list | None = None
    transform: list = field(default_factory=list)
    combine: str = "mean"
    weights: list | None = None
    init: list | None = None
    head_weight: Any = None
    head_bias: Any = None
    head_dtype: str = "float64"
    output: str = "proba"
    output_scale: float = 1.0
    output_shift: float = 0.0
    feature_names: list | None = None
    image_shape: list | None = None
    meta: dict = field(default_factory=dict)
    class_names: list | None = None

    def __post_init__(self):
        if self.combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {self.combine!r}")
        if self.output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {self.output!r}")

    # ------------------------------------------------------------------ evaluation
    def transform_X(self, X) -> np.ndarray:
        """Return ``X`` under the model's input transform (``X`` has ``n_features`` columns)."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"X must have shape (n, {self.n_features}), got {X.shape}")
        return apply_transform(self.transform, X)

    def member_outputs(self, X, transformed: bool = False) -> list[np.ndarray]:
        """Output of every graph, a list of (n, n_outputs) arrays."""
        Z = X if transformed else self.transform_X(X)
        if len(self.graphs) > 1 and all(
            not g.oblique and not g.soft and g.leaf_mode == "value" for g in self.graphs
        ):
            leaves = self._batched_leaves(Z)
            return [g.value[leaves[:, m]] for m, g in enumerate(self.graphs)]
        return [g.output(Z) for g in self.graphs]

    def _batched_leaves(self, Z, max_entries: int = 1 << 21) -> np.ndarray:
        """Leaves (n, n_graphs) of axis-aligned hard graphs, all graphs routed in one loop.

        The graphs' node arrays are concatenated; every (row, graph) pair advances one node per
        iteration, so an ensemble costs ``depth`` numpy steps instead of ``n_graphs * depth``.
        """
        gs = self.graphs
        off = np.cumsum([0] + [g.n_nodes for g in gs[:-1]])
        left = np.concatenate(
            [np.where(g.left >= 0, g.left + o, -1) for g, o in zip(gs, off, strict=True)]
        )
        right = np.concatenate(
            [np.where(g.left >= 0, g.right + o, -1) for g, o in zip(gs, off, strict=True)]
        )
        feat = np.concatenate([np.maximum(g.feature, 0) for g in gs])
        thr = np.concatenate([g.threshold for g in gs])
        roots = np.array([g.root + o for g, o in zip(gs, off, strict=True)], dtype=np.int64)
        M, n = len(gs), len(Z)
        out = np.empty((n, M), dtype=np.int64)
        step = max(1, max_entries // M)
        Zf = np.ascontiguousarray(Z).ravel()
        p = Z.shape[1]
        for a in range(0, n, step):
            b = min(n, a + step)
            cur = np.tile(roots, b - a)
            base = np.repeat(np.arange(a, b) * p, M)  # flat offset of each pair's row
            active = np.flatnonzero(left[cur] >= 0)
            while active.size:
                c = cur[active]
                go = Zf[base[active] + feat[c]] > thr[c]
                nxt = np.where(go, right[c], left[c])
                cur[active] = nxt
                active = active[left[nxt] >= 0]
            out[a:b] = cur.reshape(b - a, M) - off[None, :]
        return out

    def decision_scores(self, X) -> np.ndarray:
        """Return combined scores before the output map (n, n_outputs)."""
        outs = self.member_outputs(X)
        n = len(outs[0]) if outs else len(X)
        w = self.weights
        if self.combine == "mean":
            S = np.zeros_like(outs[0], dtype=np.float64)
            for o in outs:
                S += o
            return S / len(outs)
        if self.combine == "sum":
            dt = outs[0].dtype
            S = np.zeros((n, outs[0].shape[1]), dtype=dt)
            if self.init is not None:
                S += np.asarray(self.init, dtype=dt)
            for m, o in enumerate(outs):
                S += o if w is None else dt.type(w[m]) * o
            return S
        if self.combine == "linear":
            dt = np.dtype(self.head_dtype)
            T = np.stack([o[:, 0] for o in outs], axis=1).astype(dt)
            return T @ np.asarray(self.head_weight, dt).T + np.asarray(self.head_bias, dt)
        if self.combine == "samme":
            K = len(self.classes)
            wts = np.asarray(w, dtype=np.float64)
            S = np.zeros((n, K))
            for m, o in enumerate(outs):
                vote = np.argmax(o, axis=1)
                S += np.where(np.arange(K)[None, :] == vote[:, None], wts[m], -1 / (K - 1) * wts[m])
            S /= wts.sum()
            if K == 2:
                S[:, 0] *= -1
                return S.sum(axis=1)[:, None]
            return S
        if self.combine == "median":
            P = np.stack([o[:, 0] for o in outs], axis=1)
            wts = np.asarray(w, dtype=np.float64)
            order = np.argsort(P, axis=1)
            cdf = np.cumsum(wts[order], axis=1)
            mid = (cdf >= 0.5 * cdf[:, -1][:, None]).argmax(axis=1)
            pick = order[np.arange(len(P)), mid]
            return P[np.arange(len(P)), pick][:, None]
        raise ValueError(self.combine)  # pragma: no cover

    def predict_proba(self, X) -> np.ndarray:
        """Return the class probabilities of the rows of ``X`` (classification)."""
        if self.task != "classification":
            raise ValueError("predict_proba is for classification models")
        S = self.decision_scores(X)
        return self._proba(S)

    def _proba(self, S):
        o = self.output
        if o == "proba":
            return np.asarray(S, dtype=np.float64)
        if o == "normalize":
            S = np.asarray(S, dtype=np.float64)
            tot = S.sum(axis=1, keepdims=True)
            return S / np.where(tot == 0, 1.0, tot)
        if o == "softmax":
            return _softmax(S)
        if o == "logistic":
            from scipy.special import expit

            p = expit(np.asarray(S[:, 0], dtype=np.float64))
            return np.stack([1 - p, p], axis=1)
        if o == "samme":
            K = len(self.classes)
            d = np.asarray(S, dtype=np.float64)
            if K == 2:
                d = np.column_stack([-d[:, 0], d[:, 0]]) / 2
            else:
                d = d / (K - 1)
            return _softmax(d)
        raise ValueError(f"output {o!r} is not a classification output")

    def predict(self, X) -> np.ndarray:
        """Return the predicted class or value of every row of ``X``."""
        S = self.decision_scores(X)
        if self.task == "regression":
            return np.asarray(S[:, 0], dtype=np.float64) * self.output_scale + self.output_shift
        classes = np.asarray(self.classes)
        if self.output in ("logistic", "samme") and S.shape[1] == 1:
            thr = S[:, 0] >= 0 if self.output == "logistic" else S[:, 0] > 0
            return classes[thr.astype(np.int64)]
        if self.output in ("softmax", "samme"):
            return classes[np.argmax(S, axis=1)]
        return classes[np.argmax(self._proba(S), axis=1)]

    def apply(self, X) -> np.ndarray:
        """Leaf of every row in every graph, shape (n, n_graphs)."""
        Z = self.transform_X(X)
        if len(self.graphs) > 1 and all(not g.oblique for g in self.graphs):
            return self._batched_leaves(Z)
        return np.stack([g.apply(Z) for g in self.graphs], axis=1)

    def annotate(self, X, y=None, sample_weight=None, overwrite=False) -> GraphEnsemble:
        """Fill every graph's training statistics from ``(X, y)``.

        See :meth:`DecisionGraph.annotate`.
        """
        Z = self.transform_X(X)
        # columns constant in training cannot matter to an oblique split (importances mask them)
        self.meta["split_column_constant"] = np.flatnonzero(
            np.ptp(np.asarray(Z, dtype=np.float64), axis=0) == 0
        ).tolist()
        cls = self.classes if self.task == "classification" else None
        for g in self.graphs:
            g.annotate(Z, y, sample_weight, classes=cls, overwrite=overwrite)
        return self

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        """Return the model as JSON-ready lists and values (with the format name)."""
        return {
            "format": FORMAT,
            "task": self.task,
            "n_features": int(self.n_features),
            "classes": _plain(list(self.classes)) if self.classes is not None else None,
            "transform": _plain(self.transform),
            "combine": self.combine,
            "weights": _plain(self.weights),
            "init": _plain(self.init),
            "head_weight": _plain(self.head_weight),
            "head_bias": _plain(self.head_bias),
            "head_dtype": self.head_dtype,
            "output": self.output,
            "output_scale": float(self.output_scale),
            "output_shift": float(self.output_shift),
            "feature_names": _plain(self.feature_names),
            "class_names": _plain(self.class_names),
            "image_shape": _plain(self.image_shape),
            "meta": _plain(self.meta),
            "graphs": [g.to_dict() for g in self.graphs],
        }

    def to_json(self, indent: int | None = None) -> str:
        """JSON text: plain lists and numbers only (floats round-trip exactly)."""
        return json.dumps(self.to_dict(), indent=indent, separators=None if indent else (",", ":"))

    @classmethod
    def from_dict(cls, d: dict) -> GraphEnsemble:
        """Return the model that :meth:`to_dict` wrote as ``d``; another format is an error."""
        if d.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document (format={d.get('format')!r})")
        kw = {k: v for k, v in d.items() if k not in ("format", "graphs")}
        return cls(graphs=[DecisionGraph.from_dict(g) for g in d["graphs"]], **kw)

    @classmethod
    def from_json(cls, text: str) -> GraphEnsemble:
        """Return the model of a JSON document."""
        return cls.from_dict(json.loads(text))

    def save(self, path) -> Path:
        """Write JSON to ``path`` (gzip-compressed when it ends in ``.gz``)."""
        path = Path(path)
        data = self.to_json().encode()
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
        return path

    @classmethod
    def load(cls, path) -> GraphEnsemble:
        """Read a model that :meth:`save` wrote (gzip-compressed or not)."""
        raw = Path(path).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return cls.from_json(raw.decode())

    # ------------------------------------------------------------------ display helpers
    def feature_name(self, j: int) -> str:
        """Return the name of feature ``j`` (``x<j>`` when the model has no names)."""
        if self.feature_names is not None and 0 <= j < len(self.feature_names):
            return str(self.feature_names[j])
        return f"x{j}"

    def class_name(self, k: int) -> str:
        """Display name of class index ``k``: its ``class_names`` entry, else its label."""
        if self.class_names is not None and 0 <= k < len(self.class_names):
            return str(self.class_names[k])
        return str(self.classes[k])

    @property
    def n_outputs(self) -> int:
        """Return the number of outputs: the classes, or 1 for regression."""
        return len(self.classes) if self.task == "classification" else 1
