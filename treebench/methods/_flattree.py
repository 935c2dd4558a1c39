"""Trees as flat arrays over the raw features (solvers' and FIGS' trees).

Build, route, measure, export.

Both solvers return a nested tree whose tests are binary columns of :class:`Thresholds`; it becomes
flat arrays (node 0 the root, ``left[v] < 0`` at leaves) whose test at node ``v`` is
``x[feature[v]] <= threshold[v]`` (left when true), with each node's training class counts. The
leaf values are the training class frequencies; the prediction is their argmax (a tie between
classes of equal count goes to the lower class index, which has the same training error as the
solver's own pick).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treebench.graph.flat import node_depths
from treebench.methods._routing import route_axis


@dataclass
class FlatTree:
    """A tree in flat arrays.

    Node 0 the root, ``left[v] < 0`` at leaves, left iff ``x[feature[v]] <= threshold[v]``;
    ``value`` (n_nodes, n_outputs) is the node output and ``counts`` (optional) the training samples
    per class reaching each node.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    value: np.ndarray
    counts: np.ndarray | None = None

    def apply(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Leaf reached by every row of ``X`` (float64) and the number of tests evaluated."""
        return route_axis(
            np.asarray(X, dtype=np.float64), self.feature, self.threshold, self.left, self.right
        )

    def predict_proba(self, X) -> np.ndarray:
        return self.value[self.apply(X)[0]]

    def size_report(self, X) -> dict[str, float]:
        leaf = self.left < 0
        depth = node_depths(self.left, self.right)
        steps = self.apply(X)[1] if len(X) else np.zeros(0)
        mean_depth = float(steps.mean()) if len(steps) else 0.0
        return {
            "n_trees": 1,
            "n_splits": int((~leaf).sum()),
            "n_leaves": int(leaf.sum()),
            "depth": int(depth.max()),
            "mean_depth": mean_depth,
            "split_evals": mean_depth,
        }


def frequencies(counts, left, right) -> np.ndarray:
    """Class frequencies per node from its class counts (an empty node keeps its parent's)."""
    tot = counts.sum(axis=1, keepdims=True)
    val = counts / np.where(tot == 0, 1.0, tot)
    for v in range(len(val)):  # parents come before their children
        for c in (left[v], right[v]):
            if c >= 0 and tot[c, 0] == 0:
                val[c] = val[v]
    return val


def build_tree(root, children, test_of, bins, Z, y_codes, n_classes: int) -> FlatTree:
    """Flatten a solver's nested tree.

    Parameters
    ----------
    root : object
        The solver's root node.
    children : callable
        ``children(node)`` -> ``(true_child, false_child)`` or None at a leaf (``true``: the
        sample's binary column is 1, i.e. ``x <= threshold``, which goes left).
    test_of : callable
        ``test_of(node)`` -> the binary column index the node tests.
    bins : Thresholds
        The binary columns' raw feature and threshold.
    Z : ndarray of bool, shape (n_samples, n_columns)
        The training part's binary columns (for the node counts).
    y_codes : ndarray of int
        Training labels as class indices.
    """
    left, right, feat, thr, counts = [], [], [], [], []
    stack = [(root, np.arange(len(y_codes)), None)]
    while stack:
        node, rows, parent_slot = stack.pop()
        v = len(left)
        if parent_slot is not None:
            parent_slot[0][parent_slot[1]] = v
        counts.append(np.bincount(y_codes[rows], minlength=n_classes).astype(np.float64))
        kids = children(node)
        left.append(-1)
        right.append(-1)
        if kids is None:
            feat.append(-1)
            thr.append(0.0)
            continue
        j = int(test_of(node))
        feat.append(int(bins.feature[j]))
        thr.append(float(bins.threshold[j]))
        go = Z[rows, j]
        stack.append((kids[1], rows[~go], (right, v)))
        stack.append((kids[0], rows[go], (left, v)))
    left, right = np.asarray(left, dtype=np.int64), np.asarray(right, dtype=np.int64)
    counts = np.asarray(counts)
    feat, thr = np.asarray(feat, dtype=np.int64), np.asarray(thr, dtype=np.float64)
    return FlatTree(left, right, feat, thr, frequencies(counts, left, right), counts)


def leaf_tree(codes, n_classes: int) -> FlatTree:
    """Return the one-leaf tree predicting the training class frequencies."""
    counts = np.bincount(codes, minlength=n_classes).astype(np.float64)[None, :]
    z = np.full(1, -1, dtype=np.int64)
    return FlatTree(z, z.copy(), z.copy(), np.zeros(1), frequencies(counts, z, z), counts)


def tree_graph(est, tree: FlatTree, **info):
    """Return the fitted estimator's tree as a :class:`~treebench.inspect.GraphEnsemble`.

    Float64 tests, leaf class frequencies, the node class counts as training statistics.
    """
    from treebench.methods._export import (
        DecisionGraph,
        GraphEnsemble,
        feature_names_of,
        graph_meta,
        tree_gain,
    )

    leaf = tree.left < 0
    n = tree.counts.sum(axis=1)
    p = tree.counts / np.where(n == 0, 1.0, n)[:, None]
    gini = 1.0 - (p**2).sum(axis=1)
    g = DecisionGraph(
        left=tree.left.copy(),
        right=tree.right.copy(),
        value=tree.value,
        feature=tree.feature.copy(),
        threshold=tree.threshold.copy(),
        n_samples=n,
        weighted_n=n.copy(),
        n_right=np.where(leaf, 0.0, n[np.maximum(tree.right, 0)]),
        class_counts=tree.counts.copy(),
        impurity=gini,
        gain=tree_gain(tree.left, tree.right, n, gini),
        info=dict(info),
    )
    return GraphEnsemble(
        [g],
        task="classification",
        classes=list(est.classes_),
        n_features=int(est.n_features_in_),
        transform=[{"op": "cast", "dtype": "float64"}],
        combine="mean",
        output="proba",
        meta=graph_meta(est),
        feature_names=feature_names_of(est),
    )
