"""Baselines from scikit-learn: CART, random forest, bagged CART, gradient boosting and AdaBoost."""

from __future__ import annotations

import numpy as np
from joblib import parallel_config
from sklearn import ensemble
from sklearn.ensemble import (
    BaggingClassifier,
    BaggingRegressor,
    GradientBoostingClassifier,
    GradientBoostingRegressor,
)
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from treebench.methods.base import (
    CLASSIFICATION,
    REGRESSION,
    SizeMixin,
    combine_sizes,
    member_size,
    register,
    sklearn_tree_size,
)


class _TreeSize(SizeMixin):
    """Size report of a single scikit-learn tree."""

    def size_report(self, X):
        return sklearn_tree_size(self, X)

    def to_graph(self):
        """Return the tree as a :class:`treebench.inspect.GraphEnsemble` (export, render, rules)."""
        from treebench.methods.baselines.export import baseline_graph

        return baseline_graph(self)


class _EnsembleSize(SizeMixin):
    """Size report of a scikit-learn ensemble: members' sizes combined."""

    def size_report(self, X):
        members = np.asarray(self.estimators_, dtype=object).ravel()
        if hasattr(self, "estimators_features_"):  # bagging may subsample features
            reports = [
                member_size(m, np.asarray(X)[:, f])
                for m, f in zip(members, self.estimators_features_, strict=True)
            ]
        else:
            reports = [member_size(m, X) for m in members]
        return combine_sizes(reports)

    def to_graph(self):
        """Return the ensemble as a :class:`treebench.inspect.GraphEnsemble`.

        Export, render, rules.
        """
        from treebench.methods.baselines.export import baseline_graph

        return baseline_graph(self)


_CART = (
    "CART (scikit-learn): depth-first, best-first with max_leaf_nodes, cost-complexity ccp_alpha"
)


@register("cart", CLASSIFICATION, _CART)
class CARTClassifier(_TreeSize, DecisionTreeClassifier):
    """CART classifier (scikit-learn ``DecisionTreeClassifier``) with a size report."""


@register("cart", REGRESSION)
class CARTRegressor(_TreeSize, DecisionTreeRegressor):
    """CART regressor (scikit-learn ``DecisionTreeRegressor``) with a size report."""


_RF = "Random forest (scikit-learn), bootstrap + random feature subsets"


@register("rf", CLASSIFICATION, _RF)
class RandomForestClassifier(_EnsembleSize, ensemble.RandomForestClassifier):
    """Random forest classifier with a size report."""


@register("rf", REGRESSION)
class RandomForestRegressor(_EnsembleSize, ensemble.RandomForestRegressor):
    """Random forest regressor with a size report."""


class _Threaded:
    """Run joblib-parallel member fits and predictions on threads, not processes.

    sklearn's trees release the GIL, so threads use both cores; Bagging's default process pool
    costs seconds of start-up per fit (measured 19.8 s vs 0.13 s for 3 trees on digits).
    """

    def fit(self, X, y, sample_weight=None, **fit_params):
        # sample_weight named in the signature: AdaBoost and scikit-learn's checks look for it there
        with parallel_config(backend="threading"):
            return super().fit(X, y, sample_weight=sample_weight, **fit_params)

    def predict(self, X, *args, **kwargs):
        with parallel_config(backend="threading"):
            return super().predict(X, *args, **kwargs)


class _ThreadedProba(_Threaded):
    """:class:`_Threaded` plus ``predict_proba``, for classifiers only (a regressor has none)."""

    def predict_proba(self, X, *args, **kwargs):
        with parallel_config(backend="threading"):
            return super().predict_proba(X, *args, **kwargs)


_BAG = "Bagged full CART without feature subsampling (TnT paper's 'Random Forest')"


@register("bagged_cart", CLASSIFICATION, _BAG)
class BaggedCARTClassifier(_ThreadedProba, _EnsembleSize, BaggingClassifier):
    """Bagging of CART classifiers (``estimator=None`` means a full-depth CART)."""


@register("bagged_cart", REGRESSION)
class BaggedCARTRegressor(_Threaded, _EnsembleSize, BaggingRegressor):
    """Bagging of CART regressors."""


_GBDT = "Gradient-boosted trees (scikit-learn GradientBoosting, 100 trees of depth 3)"


@register("gbdt", CLASSIFICATION, _GBDT)
class GBDTClassifier(_EnsembleSize, GradientBoostingClassifier):
    """Gradient boosting classifier with a size report (K trees per stage for K > 2 classes)."""


@register("gbdt", REGRESSION)
class GBDTRegressor(_EnsembleSize, GradientBoostingRegressor):
    """Gradient boosting regressor with a size report."""


_ADA = "AdaBoost (SAMME) over CART; estimator=null means decision stumps"


@register("adaboost", CLASSIFICATION, _ADA)
class AdaBoostClassifier(_EnsembleSize, ensemble.AdaBoostClassifier):
    """AdaBoost (SAMME) classifier with a size report."""


@register("adaboost", REGRESSION)
class AdaBoostRegressor(_EnsembleSize, ensemble.AdaBoostRegressor):
    """AdaBoost.R2 regressor with a size report."""
