"""Provably optimal sparse trees over binarised features: GOSDT and STreeD.

Both solvers search exactly over trees whose tests are binary columns ``x[f] <= t``; the columns are
chosen first, on the training part only, as part of the estimator (:mod:`.binarize`), so the tree is
optimal *for those columns* (not over every possible threshold). The fitted tree is kept as flat
arrays over the raw features (:mod:`.tree`): prediction, size report and graph export need neither
the binariser nor the solver.

* GOSDT (Lin et al. 2020, McTavish et al. 2022; ``gosdt`` package) minimises
  ``misclassification rate + regularization * leaves`` (up to ``depth_budget``) on the columns its
  threshold guessing picks from a boosted reference. Its own time limit is checked only every
  10,000 search iterations, so the solver runs in a child process killed at the limit
  (:mod:`.deadline`).
* STreeD (van der Linden et al. 2023; ``pystreed``) finds the most accurate tree of depth at most
  ``max_depth`` (and at most ``max_num_nodes`` splits) on quantile thresholds; it honours its time
  limit and says whether it proved optimality.

A fit that reaches its time limit says so in ``fit_info_`` (the record's ``info``): ``timed_out``,
and for GOSDT its lower and upper bounds on the objective and their gap.
"""

from __future__ import annotations

import time
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods._flattree import FlatTree, build_tree, leaf_tree, tree_graph
from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    UNIT,
    Interval,
    SizeMixin,
    _fit_context,
    int_seed,
    register,
)
from treebench.methods.optimal.binarize import Thresholds, guess_thresholds, quantile_thresholds
from treebench.methods.optimal.deadline import DeadlineExceeded, call_with_deadline

#: extra wall seconds the GOSDT child gets past ``time_limit`` to return its own timed-out result
GOSDT_GRACE = 0.1


class _OptimalTree(SizeMixin, ClassifierMixin, BaseEstimator):
    """Shared by the solvers: validation, the flat tree, predict, size and graph."""

    def _validated(self, X, y):
        """Return validated float64 inputs (kept for the training error), class indices, seed."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        self._X_fit = X
        return X, codes.astype(np.int64), int_seed(self.random_state)

    def _leaf_tree(self, codes) -> FlatTree:
        return leaf_tree(codes, len(self.classes_))

    def predict_proba(self, X):
        check_is_fitted(self, "tree_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.tree_.predict_proba(X)

    def predict(self, X):
        check_is_fitted(self, "tree_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def size_report(self, X):
        check_is_fitted(self, "tree_")
        return self.tree_.size_report(np.asarray(X, dtype=np.float64))

    def to_graph(self):
        """Return the tree as a :class:`treebench.inspect.GraphEnsemble` (export, render, rules)."""
        check_is_fitted(self, "tree_")
        return tree_graph(self, self.tree_, source=type(self)._tb_name)

    def _train_error(self, codes) -> float:
        pred = np.argmax(self.tree_.value, axis=1)
        leaves, _ = self.tree_.apply(self._X_fit)
        return float(np.mean(pred[leaves] != codes))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


@register(
    "gosdt",
    CLASSIFICATION,
    "GOSDT (Lin et al. 2020; McTavish et al. 2022): optimal sparse tree, misclassification + "
    "lambda * leaves, on thresholds guessed from a boosted reference",
)
class GOSDTClassifier(_OptimalTree):
    """GOSDT optimal sparse decision tree on threshold-guessed binary columns.

    Parameters
    ----------
    regularization : float
        Penalty per leaf (lambda), in units of the training misclassification rate. Values below
        ``1 / n_samples`` are kept (the library would raise them), at a steep cost in search time.
    depth_budget : int or None
        Maximum depth (splits on a path); None = unlimited.
    time_limit : float or None
        Wall seconds for the search. The solver checks its limit rarely; it runs in a child process
        killed ``GOSDT_GRACE`` of the limit later. None = no limit (searched in-process).
    guess_n_estimators, guess_max_depth, guess_learning_rate : int, int, float
        The boosted reference of threshold guessing (scikit-learn gradient boosting).
    column_elimination : bool
        Backward elimination of the reference's least important columns (the library's).
    lower_bound_guess : bool
        Use the reference's training predictions as lower-bound guesses (McTavish et al.): faster,
        but the tree is then guaranteed only to match the reference-guided bound, not optimal.
    random_state : int, RandomState or None
        Seeds the boosted reference.
    """

    _parameter_constraints = {
        "regularization": [UNIT],
        "depth_budget": [POSITIVE_INT, None],
        "time_limit": [POSITIVE, None],
        "guess_n_estimators": [POSITIVE_INT],
        "guess_max_depth": [POSITIVE_INT],
        "guess_learning_rate": [POSITIVE],
        "column_elimination": ["boolean"],
        "lower_bound_guess": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        regularization=0.01,
        depth_budget=5,
        time_limit=600.0,
        guess_n_estimators=40,
        guess_max_depth=1,
        guess_learning_rate=0.1,
        column_elimination=True,
        lower_bound_guess=False,
        random_state=None,
    ):
        self.regularization = regularization
        self.depth_budget = depth_budget
        self.time_limit = time_limit
        self.guess_n_estimators = guess_n_estimators
        self.guess_max_depth = guess_max_depth
        self.guess_learning_rate = guess_learning_rate
        self.column_elimination = column_elimination
        self.lower_bound_guess = lower_bound_guess
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the optimal tree on ``X, y`` binarised by the thresholds."""
        X, codes, seed = self._validated(X, y)
        info = {"timed_out": False, "n_binary_features": 0}
        if len(self.classes_) == 1:
            self.bins_ = Thresholds(np.zeros(0, np.int64), np.zeros(0))
            self.tree_ = self._leaf_tree(codes)
        else:
            self.bins_ = guess_thresholds(
                X,
                codes,
                n_estimators=self.guess_n_estimators,
                max_depth=self.guess_max_depth,
                learning_rate=self.guess_learning_rate,
                column_elimination=self.column_elimination,
                seed=seed,
            )
            info["n_binary_features"] = len(self.bins_)
            Z = self.bins_.transform(X)
            keep = Z.any(axis=0) & ~Z.all(axis=0)  # a constant column cannot split
            if not keep.any():
                self.tree_ = self._leaf_tree(codes)
            else:
                self.tree_ = self._solve(Z, codes, keep, seed, info)
        err = self._train_error(codes)
        n_leaves = int((self.tree_.left < 0).sum())
        info["train_error"] = err
        info["objective"] = err + float(self.regularization) * n_leaves
        self.fit_info_ = info
        del self._X_fit
        return self

    def _reference_labels(self, Z, codes, seed):
        from sklearn.ensemble import GradientBoostingClassifier

        ref = GradientBoostingClassifier(
            n_estimators=self.guess_n_estimators,
            max_depth=self.guess_max_depth,
            learning_rate=self.guess_learning_rate,
            random_state=seed,
        )
        return ref.fit(Z, codes).predict(Z)

    def _solve(self, Z, codes, keep, seed, info) -> FlatTree:
        cols = np.flatnonzero(keep)
        y_ref = self._reference_labels(Z[:, cols], codes, seed) if self.lower_bound_guess else None
        if y_ref is not None and set(np.unique(y_ref)) != set(np.unique(codes)):
            y_ref = None  # the library needs every class among the guesses
            info["lower_bound_guess"] = "not used: the reference never predicts some class"
        limit = None if self.time_limit is None else float(self.time_limit)
        args = (
            np.ascontiguousarray(Z[:, cols]),
            codes,
            y_ref,
            {
                "regularization": float(self.regularization),
                "allow_small_reg": True,
                "depth_budget": self.depth_budget,
                "time_limit": None if limit is None else max(1, int(np.ceil(limit))),
            },
        )
        t0 = time.perf_counter()
        try:
            if limit is None:
                res = _gosdt_search(*args)
            else:
                res = call_with_deadline(_gosdt_search, limit * (1 + GOSDT_GRACE) + 1.0, *args)
        except DeadlineExceeded:
            info.update(
                search_wall_seconds=time.perf_counter() - t0,
                timed_out=True,
                stopped="killed at the time limit (the solver had not checked its limit yet)",
                model="the one-leaf tree (no solution of the solver's survived)",
            )
            return self._leaf_tree(codes)
        info.update(
            search_wall_seconds=time.perf_counter() - t0,
            status=res["status"],
            timed_out=res["status"] == "TIMEOUT",
            lower_bound=res["lower_bound"],
            upper_bound=res["upper_bound"],
            optimality_gap=max(0.0, res["upper_bound"] - res["lower_bound"]),
            solver_seconds=res["time"],
            iterations=res["n_iterations"],
        )
        return build_tree(
            res["tree"],
            lambda n: None if "prediction" in n else (n["true"], n["false"]),
            lambda n: cols[int(n["feature"])],
            self.bins_,
            Z,
            codes,
            len(self.classes_),
        )


def _gosdt_search(Z, codes, y_ref, config: dict) -> dict:
    """One GOSDT search (in the calling process or a child).

    The tree as nested dicts and the solver's bounds and status.
    """
    import json

    from gosdt import GOSDTClassifier

    clf = GOSDTClassifier(**config)
    clf.fit(Z, codes, y_ref=y_ref)
    r = clf.get_result()
    return {
        "tree": json.loads(r["models_string"])[0],
        "status": str(r["status"]).rsplit(".", 1)[-1],
        "lower_bound": float(r["lower_bound"]),
        "upper_bound": float(r["upper_bound"]),
        "time": float(r["time"]),
        "n_iterations": int(r["n_iterations"]),
    }


@register(
    "streed",
    CLASSIFICATION,
    "STreeD (van der Linden et al. 2023): the most accurate tree of depth <= max_depth "
    "(dynamic programming with bounds) on quantile thresholds",
)
class STreeDClassifier(_OptimalTree):
    """STreeD optimal classification tree of bounded depth and size on quantile thresholds.

    Parameters
    ----------
    max_depth : int
        Maximum depth (splits on a path).
    max_num_nodes : int or None
        Maximum number of splits (None: ``2**max_depth - 1``).
    min_leaf_node_size : int
        Minimum training samples per leaf.
    cost_complexity : float
        Cost of a split as a fraction of the training accuracy (0: maximise accuracy alone).
    time_limit : float
        Wall seconds for the search (honoured by the solver; a stopped search is not proven
        optimal).
    n_thresholds : int
        Cut points per continuous feature (:func:`~.binarize.quantile_thresholds`).
    random_state : int, RandomState or None
        Seeds the solver's random engine.
    """

    _parameter_constraints = {
        "max_depth": [Interval(Integral, 0, 20, closed="both")],
        "max_num_nodes": [NON_NEGATIVE_INT, None],
        "min_leaf_node_size": [POSITIVE_INT],
        "cost_complexity": [UNIT],
        "time_limit": [POSITIVE],
        "n_thresholds": [POSITIVE_INT],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        max_depth=3,
        max_num_nodes=None,
        min_leaf_node_size=1,
        cost_complexity=0.0,
        time_limit=600.0,
        n_thresholds=5,
        random_state=None,
    ):
        self.max_depth = max_depth
        self.max_num_nodes = max_num_nodes
        self.min_leaf_node_size = min_leaf_node_size
        self.cost_complexity = cost_complexity
        self.time_limit = time_limit
        self.n_thresholds = n_thresholds
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the optimal tree on ``X, y`` binarised by quantile thresholds."""
        X, codes, seed = self._validated(X, y)
        self.bins_ = quantile_thresholds(X, self.n_thresholds)
        Z = self.bins_.transform(X)
        keep = Z.any(axis=0) & ~Z.all(axis=0)
        info = {"timed_out": False, "n_binary_features": int(len(self.bins_))}
        if len(self.classes_) == 1 or not keep.any() or self.max_depth == 0:
            self.tree_ = self._leaf_tree(codes)
            info["optimal"] = True
        else:
            self.tree_ = self._solve(Z, codes, np.flatnonzero(keep), seed, info)
        info["train_error"] = self._train_error(codes)
        self.fit_info_ = info
        del self._X_fit
        return self

    def _solve(self, Z, codes, cols, seed, info) -> FlatTree:
        from pystreed import STreeDClassifier

        cc = float(self.cost_complexity)
        solver = STreeDClassifier(
            optimization_task="cost-complex-accuracy" if cc > 0 else "accuracy",
            max_depth=int(self.max_depth),
            max_num_nodes=None
            if self.max_num_nodes is None
            else min(int(self.max_num_nodes), 2 ** int(self.max_depth) - 1),
            min_leaf_node_size=int(self.min_leaf_node_size),
            cost_complexity=cc,
            time_limit=float(self.time_limit),
            random_seed=seed,
        )
        t0 = time.perf_counter()
        solver.fit(Z[:, cols].astype(np.intc), codes.astype(np.intc))
        info["solver_seconds"] = time.perf_counter() - t0
        if not hasattr(solver, "fit_result"):  # no feasible tree (min_leaf_node_size too large)
            info["optimal"] = False
            info["status"] = "infeasible: no tree meets min_leaf_node_size; one leaf kept"
            return self._leaf_tree(codes)
        optimal = bool(solver.fit_result.is_optimal())
        info["optimal"] = optimal
        info["timed_out"] = not optimal  # the search stops short of a proof only at its limit

        def children(node):
            if node.is_leaf_node():
                return None
            return node.right_child, node.left_child  # STreeD's right child: the column is 1

        return build_tree(
            solver.tree_,
            children,
            lambda n: cols[int(n.feature)],
            self.bins_,
            Z,
            codes,
            len(self.classes_),
        )
