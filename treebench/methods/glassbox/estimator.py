"""Glass-box baselines practitioners pick instead of a tree.

EBM and FIGS (classification and regression).

* EBM, the Explainable Boosting Machine (Lou et al. 2013, Nori et al. 2019; ``interpret-core``): a
  generalised additive model with pairwise interactions, each term a binned shape function learnt
  by cyclic boosting over bagged rounds. Its size is its number of terms and of shape-function bins,
  which count lookup cells, not tests: they are not comparable with a tree's splits or leaves (the
  tree fields of its size report are 0, as for a model without a tree).
* FIGS, Fast Interpretable Greedy-tree Sums (Tan et al. 2022; ``imodels``): CART grown on several
  trees at once, each new split placed where it most reduces the impurity of the sum's residuals,
  up to ``max_rules`` splits in total. Classification fits one output per class (one-hot targets)
  and predicts the argmax of the summed leaf values (probabilities: their softmax); regression
  sums one output. The fitted trees
  are kept as flat arrays, so prediction, size and export need no ``imodels`` call.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import RealNotInt
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from treebench.methods.base import (
    CLASSIFICATION,
    NON_NEGATIVE,
    NON_NEGATIVE_INT,
    POSITIVE,
    POSITIVE_INT,
    REGRESSION,
    SIZE_KEYS,
    Interval,
    SizeMixin,
    _fit_context,
    combine_sizes,
    int_seed,
    register,
    validate_sample_weight,
)


def _validated(est, X, y, sample_weight, classify: bool):
    """Return validated float64 inputs, targets and weights; rows of zero weight are left out.

    Targets are class indices when ``classify`` (``est.classes_`` set); interpret refuses zero
    weights.
    """
    X, y = validate_data(est, X, y, dtype=np.float64, y_numeric=not classify)
    if classify:
        check_classification_targets(y)
    sw = validate_sample_weight(sample_weight, X)
    if sw is not None and not np.all(sw > 0):
        X, y, sw = X[sw > 0], y[sw > 0], sw[sw > 0]
    if not classify:
        return X, np.asarray(y, dtype=np.float64), sw
    est.classes_, codes = np.unique(y, return_inverse=True)
    return X, codes, sw


class _EBM(SizeMixin, BaseEstimator):
    """Explainable Boosting Machine (``interpret``'s, fitted in ``model_``).

    Parameters
    ----------
    max_bins, max_interaction_bins : int
        Bins of a main-effect and of an interaction term's features.
    interactions : int, float or str
        Pairwise terms: a number, a fraction of the features, or ``"3x"`` (three times the
        features).
    outer_bags, inner_bags : int
        Bagged boosting runs (averaged) and inner bags per run.
    learning_rate : float
    max_rounds, early_stopping_rounds : int
        Boosting rounds and the patience on the internal validation part (``validation_size``).
    validation_size : float
        Fraction of the training part held out per outer bag for early stopping.
    min_samples_leaf, max_leaves : int
        Per boosting step: samples per leaf, leaves per term update.
    n_jobs : int or None
        Processes (the runner sets its threads).
    random_state : int, RandomState or None
    """

    no_graph = "not a tree: an additive model of binned shape functions (terms and bins)"
    _expected_failed_checks = {
        "check_sample_weight_equivalence_on_dense_data": "an integer weight is not a repeated "
        "row: the outer bags and the early-stopping split draw rows, not weight",
    }

    _parameter_constraints = {
        "max_bins": [Interval(Integral, 2, None, closed="left")],
        "max_interaction_bins": [Interval(Integral, 2, None, closed="left")],
        "interactions": [NON_NEGATIVE, str],
        "outer_bags": [POSITIVE_INT],
        "inner_bags": [NON_NEGATIVE_INT],
        "learning_rate": [POSITIVE],
        "max_rounds": [POSITIVE_INT],
        "early_stopping_rounds": [NON_NEGATIVE_INT],
        "validation_size": [Interval(Real, 0, 1, closed="left")],
        "min_samples_leaf": [POSITIVE_INT],
        "max_leaves": [Interval(Integral, 2, None, closed="left")],
        "n_jobs": [Integral, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        max_bins=1024,
        max_interaction_bins=64,
        interactions="3x",
        outer_bags=14,
        inner_bags=0,
        learning_rate=0.015,
        max_rounds=50000,
        early_stopping_rounds=100,
        validation_size=0.15,
        min_samples_leaf=4,
        max_leaves=2,
        n_jobs=None,
        random_state=None,
    ):
        self.max_bins = max_bins
        self.max_interaction_bins = max_interaction_bins
        self.interactions = interactions
        self.outer_bags = outer_bags
        self.inner_bags = inner_bags
        self.learning_rate = learning_rate
        self.max_rounds = max_rounds
        self.early_stopping_rounds = early_stopping_rounds
        self.validation_size = validation_size
        self.min_samples_leaf = min_samples_leaf
        self.max_leaves = max_leaves
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _fit_model(self, model_cls, X, y, sw):
        params = self.get_params()
        params["n_jobs"] = 1 if self.n_jobs is None else int(self.n_jobs)
        params["random_state"] = int_seed(self.random_state)
        self.model_ = model_cls(**params)
        self.model_.fit(X, y, sample_weight=sw)
        self.fit_info_ = {"n_terms": len(self.model_.term_features_)}
        return self

    def size_report(self, X):
        """Report the size: the tree fields are 0 (no tree).

        ``n_terms`` (main effects + interactions), ``n_interactions`` and ``n_bins`` (shape-function
        cells, summed over terms and classes).
        """
        check_is_fitted(self, "model_")
        terms = self.model_.term_features_
        return {
            **dict.fromkeys(SIZE_KEYS, 0),
            "n_terms": len(terms),
            "n_interactions": sum(len(t) > 1 for t in terms),
            "n_bins": int(sum(np.asarray(s).size for s in self.model_.term_scores_)),
        }


@register(
    "ebm",
    CLASSIFICATION,
    "Explainable Boosting Machine (interpret-core): additive shape functions + pairwise "
    "interactions; size = terms and bins, not comparable with leaves",
)
class EBMClassifier(ClassifierMixin, _EBM):
    """Explainable Boosting Machine classifier (see :class:`_EBM` for the parameters)."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the boosting machine on ``X, y`` (weighted by ``sample_weight``)."""
        from interpret.glassbox import ExplainableBoostingClassifier

        X, codes, sw = _validated(self, X, y, sample_weight, classify=True)
        if len(self.classes_) < 2:
            raise ValueError(
                "EBM needs at least two classes among the training rows of positive weight; got "
                f"one class ({self.classes_[0]!r})"
            )
        return self._fit_model(ExplainableBoostingClassifier, X, codes, sw)

    def predict_proba(self, X):
        """Return the class probabilities of the rows of ``X``."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.model_.predict_proba(X)

    def predict(self, X):
        """Return the most probable class of every row of ``X``."""
        check_is_fitted(self, "model_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


@register("ebm", REGRESSION)
class EBMRegressor(RegressorMixin, _EBM):
    """Explainable Boosting Machine regressor (squared error; see :class:`_EBM`)."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the boosting machine on ``X, y`` (weighted by ``sample_weight``)."""
        from interpret.glassbox import ExplainableBoostingRegressor

        X, y, sw = _validated(self, X, y, sample_weight, classify=False)
        return self._fit_model(ExplainableBoostingRegressor, X, y, sw)

    def predict(self, X):
        """Return the predicted value of every row of ``X``."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.asarray(self.model_.predict(X), dtype=np.float64)


class _FIGS(SizeMixin, BaseEstimator):
    """FIGS: a sum of trees grown together (``imodels``' ``FIGSClassifier``/``FIGSRegressor``).

    Parameters
    ----------
    max_rules : int
        Splits over all trees.
    max_trees : int or None
        Trees at most (None: as many as the splits choose).
    max_depth : int or None
        Depth of each tree at most.
    min_impurity_decrease : float
        A split must reduce the residuals' impurity by at least this much.
    max_features : int, float, str or None
        Features tried per split (scikit-learn's meaning; drawn from ``random_state``).
    random_state : int, RandomState or None
    """

    _parameter_constraints = {
        "max_rules": [POSITIVE_INT],
        "max_trees": [POSITIVE_INT, None],
        "max_depth": [NON_NEGATIVE_INT, None],
        "min_impurity_decrease": [NON_NEGATIVE],
        "max_features": [POSITIVE_INT, Interval(RealNotInt, 0, 1, closed="right"), str, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        max_rules=12,
        max_trees=None,
        max_depth=None,
        min_impurity_decrease=0.0,
        max_features=None,
        random_state=None,
    ):
        self.max_rules = max_rules
        self.max_trees = max_trees
        self.max_depth = max_depth
        self.min_impurity_decrease = min_impurity_decrease
        self.max_features = max_features
        self.random_state = random_state

    def _fit_trees(self, X, y, sw, n_outputs: int):
        from treebench.methods.glassbox.figs import fit_figs

        self.trees_ = fit_figs(self, X, y, sw, int_seed(self.random_state), n_outputs)
        self.fit_info_ = {"n_trees": len(self.trees_)}
        return self

    def _sum(self, X) -> np.ndarray:
        """Return summed leaf values (n_samples, n_outputs)."""
        check_is_fitted(self, "trees_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        S = np.zeros((len(X), self.trees_[0].value.shape[1]))
        for t in self.trees_:
            S += t.value[t.apply(X)[0]]
        return S

    def size_report(self, X):
        check_is_fitted(self, "trees_")
        X = np.asarray(X, dtype=np.float64)
        return combine_sizes([t.size_report(X) for t in self.trees_])

    def to_graph(self):
        """Return the sum of trees as a :class:`treebench.inspect.GraphEnsemble`.

        Combine ``sum``; a classifier's probabilities are the softmax.
        """
        from treebench.methods.glassbox.figs import figs_graph

        check_is_fitted(self, "trees_")
        return figs_graph(self)


@register(
    "figs",
    CLASSIFICATION,
    "FIGS (Tan et al. 2022, imodels): a sum of greedily grown CART trees, max_rules splits in all",
)
class FIGSClassifier(ClassifierMixin, _FIGS):
    """FIGS classifier: one output per class (one-hot targets); see :class:`_FIGS`."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the sum of trees on ``X, y`` (weighted by ``sample_weight``)."""
        X, codes, sw = _validated(self, X, y, sample_weight, classify=True)
        return self._fit_trees(X, codes, sw, len(self.classes_))

    def predict_proba(self, X):
        """Return the class probabilities: the softmax of the summed leaf values."""
        from scipy.special import softmax

        return softmax(self._sum(X), axis=1)

    def predict(self, X):
        """Return the class with the largest summed leaf value for every row of ``X``."""
        check_is_fitted(self, "trees_")
        return self.classes_[np.argmax(self._sum(X), axis=1)]


@register("figs", REGRESSION)
class FIGSRegressor(RegressorMixin, _FIGS):
    """FIGS regressor (squared error); see :class:`_FIGS`."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the sum of trees on ``X, y`` (weighted by ``sample_weight``)."""
        X, y, sw = _validated(self, X, y, sample_weight, classify=False)
        return self._fit_trees(X, y, sw, 1)

    def predict(self, X):
        """Return the summed leaf values of every row of ``X``."""
        check_is_fitted(self, "trees_")
        return self._sum(X)[:, 0]
