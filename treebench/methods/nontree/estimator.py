"""Scikit-learn's MLP and linear SVM on (by default) standardised inputs; empty size report."""

from __future__ import annotations

import numpy as np
from sklearn import neural_network
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC, LinearSVR
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from treebench.methods.base import CLASSIFICATION, REGRESSION, SIZE_KEYS, SizeMixin, register


class _Standardized(SizeMixin):
    """A model on inputs standardised with the training part's (weighted) mean and SD.

    With ``standardize=True`` (the default): both models are scale-sensitive, and the paper's
    datasets mix units (as SDT and One-Stage, which standardise too). ``standardize=False`` feeds
    the raw inputs. Not a tree: no splits and no decision graph.
    """

    no_graph = "not a tree: an MLP or a linear SVM has no decision graph"

    def fit(self, X, y, sample_weight=None):
        self._validate_params()  # before the scaler reads ``standardize``
        on = self.standardize
        self.scaler_ = StandardScaler(with_mean=on, with_std=on).fit(X, sample_weight=sample_weight)
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


# Each class repeats its scikit-learn parent's parameters and defaults in ``__init__`` (an
# estimator's parameters are its signature) and adds ``standardize``; a test keeps the defaults
# equal to the parent's. Each class scales in the public methods that reach the model without
# going through another scaled one (LinearSVC.predict calls decision_function; MLP's
# predict_log_proba, predict_proba).


class _ScaledPredict:
    def predict(self, X):
        return super().predict(self._scaled(X))


_MLP = "MLP (scikit-learn, Adam, stops when the training loss stalls), standardised inputs"


@register("mlp", CLASSIFICATION, _MLP)
class MLPClassifier(_ScaledPredict, _Standardized, neural_network.MLPClassifier):
    """Multi-layer perceptron classifier on standardised inputs.

    No ``partial_fit``: the scaler is fitted once, in ``fit``.
    """

    _parameter_constraints = {
        **neural_network.MLPClassifier._parameter_constraints,
        "standardize": ["boolean"],
    }

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        activation="relu",
        *,
        standardize=True,
        solver="adam",
        alpha=0.0001,
        batch_size="auto",
        learning_rate="constant",
        learning_rate_init=0.001,
        power_t=0.5,
        max_iter=200,
        shuffle=True,
        random_state=None,
        tol=1e-4,
        verbose=False,
        warm_start=False,
        momentum=0.9,
        nesterovs_momentum=True,
        early_stopping=False,
        validation_fraction=0.1,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-8,
        n_iter_no_change=10,
        max_fun=15000,
    ):
        super().__init__(
            hidden_layer_sizes=hidden_layer_sizes,
            activation=activation,
            solver=solver,
            alpha=alpha,
            batch_size=batch_size,
            learning_rate=learning_rate,
            learning_rate_init=learning_rate_init,
            power_t=power_t,
            max_iter=max_iter,
            shuffle=shuffle,
            random_state=random_state,
            tol=tol,
            verbose=verbose,
            warm_start=warm_start,
            momentum=momentum,
            nesterovs_momentum=nesterovs_momentum,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            n_iter_no_change=n_iter_no_change,
            max_fun=max_fun,
        )
        self.standardize = standardize

    @available_if(lambda self: False)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Not offered: the scaler is fitted once, in :meth:`fit`."""
        raise AttributeError("partial_fit is not offered: the scaler is fitted once, in fit")

    def predict_proba(self, X):
        """Return the class probabilities of the rows of ``X`` (standardised first)."""
        return super().predict_proba(self._scaled(X))


@register("mlp", REGRESSION)
class MLPRegressor(_ScaledPredict, _Standardized, neural_network.MLPRegressor):
    """Multi-layer perceptron regressor on standardised inputs (no ``partial_fit``)."""

    _parameter_constraints = {
        **neural_network.MLPRegressor._parameter_constraints,
        "standardize": ["boolean"],
    }

    def __init__(
        self,
        loss="squared_error",
        hidden_layer_sizes=(100,),
        activation="relu",
        *,
        standardize=True,
        solver="adam",
        alpha=0.0001,
        batch_size="auto",
        learning_rate="constant",
        learning_rate_init=0.001,
        power_t=0.5,
        max_iter=200,
        shuffle=True,
        random_state=None,
        tol=1e-4,
        verbose=False,
        warm_start=False,
        momentum=0.9,
        nesterovs_momentum=True,
        early_stopping=False,
        validation_fraction=0.1,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-8,
        n_iter_no_change=10,
        max_fun=15000,
    ):
        super().__init__(
            loss=loss,
            hidden_layer_sizes=hidden_layer_sizes,
            activation=activation,
            solver=solver,
            alpha=alpha,
            batch_size=batch_size,
            learning_rate=learning_rate,
            learning_rate_init=learning_rate_init,
            power_t=power_t,
            max_iter=max_iter,
            shuffle=shuffle,
            random_state=random_state,
            tol=tol,
            verbose=verbose,
            warm_start=warm_start,
            momentum=momentum,
            nesterovs_momentum=nesterovs_momentum,
            early_stopping=early_stopping,
            validation_fraction=validation_fraction,
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            n_iter_no_change=n_iter_no_change,
            max_fun=max_fun,
        )
        self.standardize = standardize

    @available_if(lambda self: False)
    def partial_fit(self, X, y, sample_weight=None):
        """Not offered: the scaler is fitted once, in :meth:`fit`."""
        raise AttributeError("partial_fit is not offered: the scaler is fitted once, in fit")


_SVM = "Linear SVM (scikit-learn liblinear: hinge loss / epsilon-insensitive), standardised inputs"


@register("linear_svm", CLASSIFICATION, _SVM)
class LinearSVMClassifier(_Standardized, LinearSVC):
    """Linear support vector classifier (one-vs-rest) on standardised inputs."""

    _parameter_constraints = {**LinearSVC._parameter_constraints, "standardize": ["boolean"]}

    def __init__(
        self,
        penalty="l2",
        loss="squared_hinge",
        *,
        standardize=True,
        dual="auto",
        tol=1e-4,
        C=1.0,
        multi_class="ovr",
        fit_intercept=True,
        intercept_scaling=1,
        class_weight=None,
        verbose=0,
        random_state=None,
        max_iter=1000,
    ):
        super().__init__(
            penalty=penalty,
            loss=loss,
            dual=dual,
            tol=tol,
            C=C,
            multi_class=multi_class,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            class_weight=class_weight,
            verbose=verbose,
            random_state=random_state,
            max_iter=max_iter,
        )
        self.standardize = standardize

    def decision_function(self, X):
        """Return the decision scores of the rows of ``X`` (standardised first)."""
        return super().decision_function(self._scaled(X))

    def predict_proba(self, X):
        """Scores, not calibrated probabilities.

        The one-vs-rest decision values through a logistic function, normalised over the classes
        (``LogisticRegression``'s one-vs-rest rule), so that bagging can average them and their
        argmax is ``predict``.
        """
        from scipy.special import expit

        d = self.decision_function(X)
        if d.ndim == 1:
            return np.column_stack([1.0 - expit(d), expit(d)])
        p = expit(d)
        return p / p.sum(axis=1, keepdims=True)


@register("linear_svm", REGRESSION)
class LinearSVMRegressor(_ScaledPredict, _Standardized, LinearSVR):
    """Linear support vector regressor on standardised inputs."""

    _parameter_constraints = {**LinearSVR._parameter_constraints, "standardize": ["boolean"]}

    def __init__(
        self,
        *,
        standardize=True,
        epsilon=0.0,
        tol=1e-4,
        C=1.0,
        loss="epsilon_insensitive",
        fit_intercept=True,
        intercept_scaling=1.0,
        dual="auto",
        verbose=0,
        random_state=None,
        max_iter=1000,
    ):
        super().__init__(
            epsilon=epsilon,
            tol=tol,
            C=C,
            loss=loss,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
            dual=dual,
            verbose=verbose,
            random_state=random_state,
            max_iter=max_iter,
        )
        self.standardize = standardize
