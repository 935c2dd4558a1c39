"""A fitted TnT / NDG decision graph: routing, predict / predict_proba / size report, input checks.

The graph is flat arrays (node 0 = root, ``left[i] < 0`` at leaves, shared children allowed); its
structure utilities are :mod:`treebench.graph.flat`, its routing :mod:`treebench.methods._routing`.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.graph.flat import compact, dag_depth
from treebench.methods.base import (
    SizeMixin,
    validate_sample_weight,
)

# ----------------------------------------------------------------------------- flat graph utilities


def graph_predict_nodes(X, feature, threshold, left, right, root=0, backend="auto"):
    """Leaf reached by each row of ``X`` in a flat decision graph, and the number of splits visited.

    ``left[i] < 0`` marks a leaf; a row goes right iff ``x[feature] > threshold``. Returns
    ``(leaf_index, n_internal_visited)`` from :func:`treebench.methods._routing.route_axis`
    (compiled with numba, else a numpy loop over levels; ``backend`` chooses).
    """
    from treebench.methods._routing import route_axis  # numba loads with the first prediction

    return route_axis(X, feature, threshold, left, right, root=root, backend=backend)


class _GraphClassifierMixin(SizeMixin):
    """predict / predict_proba / size_report for a fitted flat decision graph.

    Fitted state: ``feature_, threshold_, children_left_, children_right_, value_`` (class index at
    leaves, -1 at internal nodes), ``classes_``; root = node 0.
    """

    def _check_X(self, X):
        check_is_fitted(self, "feature_")
        X = validate_data(self, X, reset=False, dtype=np.float32)
        return X

    def apply(self, X):
        """Index of the leaf reached by every row of ``X``."""
        X = self._check_X(X)
        leaf, _ = graph_predict_nodes(
            X, self.feature_, self.threshold_, self.children_left_, self.children_right_
        )
        return leaf

    def predict(self, X):
        leaf = self.apply(X)  # first: raises NotFittedError before any fitted attribute is read
        return self.classes_[self.value_[leaf]]

    def predict_proba(self, X):
        """One-hot of the predicted class: the graph's leaves carry labels only (as in the paper).

        Hard probabilities keep ``BaggingClassifier`` on majority voting, as for the reference code.
        """
        leaf = self.apply(X)
        idx = self.value_[leaf]
        proba = np.zeros((len(idx), len(self.classes_)))
        proba[np.arange(len(idx)), idx] = 1.0
        return proba

    @property
    def n_splits_(self):
        return int((self.children_left_ >= 0).sum())

    @property
    def n_leaves_(self):
        return int((self.children_left_ < 0).sum())

    def size_report(self, X):
        X = self._check_X(X)
        _, steps = graph_predict_nodes(
            X, self.feature_, self.threshold_, self.children_left_, self.children_right_
        )
        md = float(steps.mean()) if len(steps) else 0.0
        return {
            "n_trees": 1,
            "n_splits": self.n_splits_,
            "n_leaves": self.n_leaves_,
            "depth": dag_depth(self.children_left_, self.children_right_),
            "mean_depth": md,
            "split_evals": md,
        }

    def _set_graph(self, feature, threshold, left, right, value, root):
        f, t, lft, rgt, v = compact(feature, threshold, left, right, value, root)
        f[lft < 0] = 0
        t[lft < 0] = 0.0
        self.feature_, self.threshold_ = f, t
        self.children_left_, self.children_right_, self.value_ = lft, rgt, v

    def to_graph(self):
        """Return the decision graph as a :class:`treebench.inspect.GraphEnsemble`.

        Shared children are kept.
        """
        from treebench.methods.tnt.export import tnt_graph

        return tnt_graph(self)


def _prepare(est, X, y, sample_weight):
    """Validate inputs, encode labels, scale the weights and drop the rows of weight 0.

    Integer weights are counts and are used as given: node weights are then exact sums, equal to
    those of the rows repeated, so ties between equally good splits resolve as on repeated rows
    (rescaled, they lost that exactness). Other weights (AdaBoost's) are rescaled to sum to the
    number of rows, as before, so that TnT-AdaBoost fits are unchanged. A fit depends on the scale
    of the weights only through floating-point rounding, and with it tie-breaking.
    """
    X, y = validate_data(est, X, y, dtype=np.float32, order="C")
    check_classification_targets(y)
    classes, yi = np.unique(y, return_inverse=True)
    w = validate_sample_weight(sample_weight, X)
    if w is None:
        w = np.ones(len(yi))
    else:
        if not np.array_equal(w, np.round(w)):
            w = w * (len(yi) / w.sum())
        keep = w > 0
        if not keep.all():
            X, yi, w = X[keep], yi[keep], w[keep]
    return np.ascontiguousarray(X), yi.astype(np.int64), w, classes
