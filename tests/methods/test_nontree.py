"""The non-tree baselines (MLP, linear SVM): scikit-learn's models on standardised or raw inputs."""

import numpy as np
import pytest
from sklearn import neural_network
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_wine
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC, LinearSVR

from treebench.methods.nontree import (
    LinearSVMClassifier,
    LinearSVMRegressor,
    MLPClassifier,
    MLPRegressor,
)

CASES = [  # (ours, scikit-learn's, data, settings)
    (
        MLPClassifier,
        neural_network.MLPClassifier,
        load_wine,
        {"max_iter": 30, "hidden_layer_sizes": (8,)},
    ),
    (
        MLPRegressor,
        neural_network.MLPRegressor,
        load_diabetes,
        {"max_iter": 30, "hidden_layer_sizes": (8,)},
    ),
    (LinearSVMClassifier, LinearSVC, load_wine, {"C": 0.1, "max_iter": 5000}),
    (LinearSVMRegressor, LinearSVR, load_diabetes, {"C": 0.1, "max_iter": 5000}),
]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("standardize", [True, False])
@pytest.mark.parametrize(
    ("ours", "plain", "load", "kw"), CASES, ids=lambda c: getattr(c, "__name__", "")
)
def test_predictions_equal_the_plain_model_on_the_same_inputs(ours, plain, load, kw, standardize):
    X, y = load(return_X_y=True)
    Z = StandardScaler().fit(X).transform(X) if standardize else X
    est = ours(standardize=standardize, random_state=0, **kw).fit(X, y)
    ref = plain(random_state=0, **kw).fit(Z, y)
    np.testing.assert_allclose(est.predict(X), ref.predict(Z))
    if hasattr(ref, "decision_function"):
        np.testing.assert_allclose(est.decision_function(X), ref.decision_function(Z))
    if isinstance(ref, neural_network.MLPClassifier):
        np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(Z))


@pytest.mark.parametrize(("ours", "plain"), [c[:2] for c in CASES], ids=lambda c: c.__name__)
def test_parameters_are_the_scikit_learn_parents_plus_standardize(ours, plain):
    mine = ours().get_params()
    assert mine.pop("standardize") is True
    assert mine == plain().get_params()


def test_the_raw_and_the_standardised_model_differ_where_the_units_do():
    X, y = load_wine(return_X_y=True)  # proline is in the hundreds, hue below 2
    on = LinearSVMClassifier(C=0.1, max_iter=5000, random_state=0).fit(X, y)
    off = clone(on).set_params(standardize=False).fit(X, y)
    assert off.get_params()["standardize"] is False
    np.testing.assert_allclose(off.scaler_.transform(X), X)  # the raw inputs reach the model
    assert not np.allclose(on.coef_, off.coef_)


def test_a_non_boolean_standardize_is_refused_naming_the_parameter():
    X, y = load_wine(return_X_y=True)
    with pytest.raises(ValueError, match="'standardize' parameter"):
        MLPClassifier(standardize="yes").fit(X, y)


def test_linear_svm_scores_are_normalised_and_agree_with_predict():
    X, y = load_wine(return_X_y=True)
    est = LinearSVMClassifier(C=0.1, max_iter=5000, random_state=0).fit(X, y)
    P = est.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_array_equal(est.classes_[P.argmax(axis=1)], est.predict(X))
    yb = (y == 0).astype(int)  # binary: one decision value, two columns
    Pb = LinearSVMClassifier(C=0.1, max_iter=5000, random_state=0).fit(X, yb).predict_proba(X)
    assert Pb.shape == (len(X), 2)
    np.testing.assert_allclose(Pb.sum(axis=1), 1.0)


def test_partial_fit_is_not_offered():
    assert not hasattr(MLPClassifier(), "partial_fit") and not hasattr(
        MLPRegressor(), "partial_fit"
    )
