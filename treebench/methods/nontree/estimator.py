"""scikit-learn's MLP and linear SVM on standardised inputs, with an (empty) tree-size report."""

from __future__ import annotations

import numpy as np
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC, LinearSVR
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from treebench.methods.base import CLASSIFICATION, REGRESSION, SIZE_KEYS, SizeMixin, register


class _Standardized(SizeMixin):
    """Inputs standardised with the training part's (weighted) mean and SD before the model sees
    them: both models are scale-sensitive, and the paper's datasets mix units (as SDT and One-Stage,
    which standardise too). Not a tree: no splits and no decision graph."""

    no_graph = "not a tree: an MLP or a linear SVM has no decision graph"

    def fit(self, X, y, sample_weight=None):
        self.scaler_ = StandardScaler().fit(X, sample_weight=sample_weight)
        super().fit(self.scaler_.transform(X), y, sample_weight=sample_weight)
        if hasattr(self.scaler_, "feature_names_in_"):
            self.feature_names_in_ = self.scaler_.feature_names_in_
        return self

    def _scaled(self, X):
        check_is_fitted(self, "scaler_")
        return self.scaler_.transform(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False  # a sparse matrix cannot be centred (the runner densifies)
        return tags

    def size_report(self, X):
        return dict.fromkeys(SIZE_KEYS, 0)


# Each class scales in the public methods that reach the model without going through another
# scaled one (LinearSVC.predict calls decision_function; MLP's predict_log_proba, predict_proba).


class _ScaledPredict:
    def predict(self, X):
        return super().predict(self._scaled(X))


_MLP = "MLP (scikit-learn, Adam, early stopping on 10 % of the training part), standardised inputs"


@register("mlp", CLASSIFICATION, _MLP)
class MLP(_ScaledPredict, _Standardized, MLPClassifier):
    """Multi-layer perceptron classifier on standardised inputs (no ``partial_fit``: the scaler is
    fitted once, in ``fit``)."""

    @available_if(lambda self: False)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        raise AttributeError("partial_fit is not offered: the scaler is fitted once, in fit")

    def predict_proba(self, X):
        return super().predict_proba(self._scaled(X))


@register("mlp", REGRESSION)
class MLPReg(_ScaledPredict, _Standardized, MLPRegressor):
    """Multi-layer perceptron regressor on standardised inputs (no ``partial_fit``)."""

    @available_if(lambda self: False)
    def partial_fit(self, X, y, sample_weight=None):
        raise AttributeError("partial_fit is not offered: the scaler is fitted once, in fit")


_SVM = "Linear SVM (scikit-learn liblinear: hinge loss / epsilon-insensitive), standardised inputs"


@register("linear_svm", CLASSIFICATION, _SVM)
class LinearSVM(_Standardized, LinearSVC):
    """Linear support vector classifier (one-vs-rest) on standardised inputs."""

    def decision_function(self, X):
        return super().decision_function(self._scaled(X))

    def predict_proba(self, X):
        """Scores, not calibrated probabilities: the one-vs-rest decision values through a logistic
        function, normalised over the classes (``LogisticRegression``'s one-vs-rest rule), so that
        bagging can average them and their argmax is ``predict``."""
        from scipy.special import expit

        d = self.decision_function(X)
        if d.ndim == 1:
            return np.column_stack([1.0 - expit(d), expit(d)])
        p = expit(d)
        return p / p.sum(axis=1, keepdims=True)


@register("linear_svm", REGRESSION)
class LinearSVMReg(_ScaledPredict, _Standardized, LinearSVR):
    """Linear support vector regressor on standardised inputs."""
