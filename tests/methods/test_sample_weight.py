"""sample_weight semantics.

Exact for the deterministic learners, in distribution for the stochastic ones, unchanged unweighted
fits, and boosting that uses the weights (AdaBoost reweights through them).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.ensemble import AdaBoostClassifier
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.validation import has_fit_parameter

from tests.methods.test_contract import CASES, CHECK_PARAMS, smoke_estimator
from treebench.methods.base import discover
from treebench.methods.redt.softcart import build_tree
from treebench.methods.tnt import (
    NDGClassifier,
    TnTAdaBoostClassifier,
    TnTBaggingClassifier,
    TnTClassifier,
)


def _graph(est):
    return (est.feature_, est.threshold_, est.children_left_, est.children_right_, est.value_)


def _assert_same_graph(a, b):
    for x, y in zip(_graph(a), _graph(b), strict=True):
        np.testing.assert_array_equal(x, y)


def _weighted_and_repeated(seed, n, d):
    """Random rows, labels and integer weights including zeros.

    Scikit-learn's equivalence check.
    """
    rng = np.random.RandomState(seed)
    X = rng.rand(n, d)
    y = rng.randint(0, 3, size=n)
    sw = rng.randint(0, 5, size=n)
    order = rng.permutation(n)  # the weighted rows in another order than the repeated ones
    return X, y, sw, order


# ----------------------------------------------------------------------------- deterministic: exact

DETERMINISTIC = {
    "tnt": lambda: TnTClassifier(random_state=0),
    "tnt_cart": lambda: TnTClassifier(N1=1, random_state=0),
    "tnt_sklearn_backend": lambda: TnTClassifier(criterion="entropy", N2=2, random_state=0),
    "ndg": lambda: NDGClassifier(random_state=0),
}


@pytest.mark.parametrize("make", DETERMINISTIC.values(), ids=DETERMINISTIC.keys())
def test_integer_weights_equal_repeated_rows(make):
    """Integer weights give the graph of the rows repeated (ties included), on many draws."""
    for seed in range(8):
        for n, d in ((15, 30), (40, 4)):
            X, y, sw, order = _weighted_and_repeated(seed, n, d)
            rep = make().fit(X.repeat(sw, axis=0), y.repeat(sw))
            wtd = make().fit(X[order], y[order], sample_weight=sw[order])
            np.testing.assert_array_equal(rep.predict_proba(X), wtd.predict_proba(X))


@pytest.mark.parametrize("make", DETERMINISTIC.values(), ids=DETERMINISTIC.keys())
def test_uniform_integer_weights_equal_the_unweighted_fit(make):
    X, y, _, _ = _weighted_and_repeated(0, 60, 4)
    ref = make().fit(X, y)
    for c in (1, 2, 5):
        _assert_same_graph(make().fit(X, y, sample_weight=np.full(len(y), c)), ref)


def test_redt_tree_integer_weights_equal_repeated_rows():
    """ReDT's distilled tree.

    Integer weights equal repeated rows exactly (hard labels; k = 1, since ``k`` counts rows as
    scikit-learn's ``min_samples_split``). The estimator as a whole is declared to fail
    scikit-learn's equivalence check: its teacher's jackknife folds split rows.
    """
    for seed in range(10):
        X, y, sw, _ = _weighted_and_repeated(seed, 30, 5)
        X = X.astype(np.float32)
        Y = np.eye(3)[y]
        rng = np.random.RandomState(seed)
        pseudo = np.column_stack([rng.randint(0, 3, len(y)), y])
        keep = sw > 0
        r = np.repeat(np.arange(len(y)), sw)
        wtd = build_tree(X[keep], Y[keep], pseudo[keep], k=1, sample_weight=sw[keep].astype(float))
        rep = build_tree(X[r], Y[r], pseudo[r], k=1)
        np.testing.assert_array_equal(wtd.predict_value(X), rep.predict_value(X))


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


# Digests of the predictions made by the code before the sample-weight change (commit daad936):
# unweighted TnT and NDG, TnT-bagging (its members get integer bootstrap counts as weights) and
# TnT-AdaBoost (AdaBoost's weights, rescaled as before) are unchanged. A scikit-learn upgrade that
# changes its trees' tie-breaking, Bagging's draws or AdaBoost's weights would move them too.
UNWEIGHTED_BEFORE = {
    "tnt": ("1e2577cbd6ee3472", lambda: TnTClassifier(random_state=0)),
    "ndg": ("3af619fb089ffaac", lambda: NDGClassifier(random_state=0)),
    "tnt_bagging": (
        "01ed2ef0ee3e5d5b",
        lambda: TnTBaggingClassifier(n_estimators=3, random_state=0),
    ),
    "tnt_adaboost": (
        "37d04f0330afbb54",
        lambda: TnTAdaBoostClassifier(n_estimators=3, ccp_alpha=3e-3, random_state=0),
    ),
}


@pytest.mark.parametrize("name", sorted(UNWEIGHTED_BEFORE))
def test_unweighted_fits_unchanged(name):
    X, y = load_digits(return_X_y=True)
    want, make = UNWEIGHTED_BEFORE[name]
    pred = make().fit(X[:500], y[:500]).predict(X[500:1000]).astype(np.int64)
    assert _digest(pred) == want, f"{name}: unweighted predictions moved (paper numbers would)"


# ---------------------------------------------------------------------- stochastic: distribution

# Estimators whose weighted fit can equal the repeated one only in distribution (declared failures
# of check_sample_weight_equivalence_on_dense_data), with settings that separate the two effects the
# weights are not meant to have: repeated rows also lengthen an epoch (so the weighted fit gets the
# same number of optimiser steps, by scaling its epochs) and land in a validation part drawn by row
# (so the hinge models keep their last state and One-Stage trains without early stopping).
STOCHASTIC = {
    # e2edt: a fixed batch (batch_size="auto" gives every stump ~16 steps per epoch at any size)
    "e2edt": ({"max_depth": 3, "epochs": 10, "batch_size": 1000}, "epochs"),
    "e2edf": ({"max_depth": 3, "epochs": 5}, "epochs"),
    "sdt": ({"batch_size": 32}, "max_epochs"),
    "hinge_forest": ({"selection": "last", "validation_fraction": 0.0}, None),
    "hinge_fern": ({"selection": "last", "validation_fraction": 0.0}, None),
    "onestage": ({"max_epochs": 30, "patience": 1000}, "max_epochs"),
    "onestage_joint": ({"max_epochs": 30, "patience": 1000}, "max_epochs"),
    "onestage_gumbel": ({"max_epochs": 30, "patience": 1000}, "max_epochs"),
    "redt": ({}, None),
    "mlp": ({}, None),
    "linear_svm": ({}, None),
}
# Per-task settings on top: LinearSVR's default absolute loss moves its mean prediction only 0.07
# under these weights (a weighted median moves less than a weighted mean); the squared loss moves it
# enough to tell a weighted fit from an unweighted one.
STOCHASTIC_TASK = {("linear_svm", "regression"): {"loss": "squared_epsilon_insensitive"}}
STOCHASTIC_CASES = [(n, t) for n, t in CASES if n in STOCHASTIC]


def _shifted_data(task, n=100):
    """Rows of class 1 (or with y > 0) weigh 4, the others 1: the fit should move towards them."""
    rng = np.random.RandomState(0)
    X, X_test = rng.randn(n, 2), rng.randn(500, 2)
    if task == "classification":
        y = (X[:, 0] + 0.7 * rng.randn(n) > 0).astype(int)
        w = np.where(y == 1, 4, 1)
    else:
        y = X[:, 0] + 0.5 * rng.randn(n)
        w = np.where(y > 0, 4, 1)
    return X, y, w, X_test


@pytest.mark.parametrize(("name", "task"), STOCHASTIC_CASES)
def test_weights_equal_repeated_rows_in_distribution(name, task):
    """Over 5 seeds, the weighted fit moves its predictions as far as the repeated rows do.

    Statistic: the share of test points predicted as class 1 (classification) or the mean
    prediction (regression). Unweighted, both the weighted and repeated fits must move away from
    the unweighted one, and the weighted one within 30 % of the repeated one's move (ignoring the
    weights would be 100 %).
    """
    extra, budget = STOCHASTIC[name]
    X, y, w, X_test = _shifted_data(task)
    rows = np.repeat(np.arange(len(y)), w)
    steps = len(rows) / len(y)  # optimiser steps per epoch, repeated over weighted

    def make(seed, scale=1.0):
        more = STOCHASTIC_TASK.get((name, task), {})
        est = smoke_estimator(name, task, **{**CHECK_PARAMS.get(name, {}), **extra, **more})
        est.set_params(random_state=seed)
        if budget:
            est.set_params(**{budget: int(round(est.get_params()[budget] * scale))})
        return est

    def stat(est):
        pred = est.predict(X_test)
        return float(np.mean(pred == 1) if task == "classification" else np.mean(pred))

    seeds = range(5)
    unweighted = np.mean([stat(make(s).fit(X, y)) for s in seeds])
    weighted = np.mean([stat(make(s, steps).fit(X, y, sample_weight=w)) for s in seeds])
    repeated = np.mean([stat(make(s).fit(X[rows], y[rows])) for s in seeds])
    moved = repeated - unweighted
    assert moved > 0.08, f"repeating rows should move the fit ({moved:.3f})"
    assert abs(weighted - repeated) <= 0.3 * moved, (
        f"weighted {weighted:.3f} vs repeated {repeated:.3f} (unweighted {unweighted:.3f})"
    )


# ----------------------------------------------------------------------------- boosting


# A weak setting per method, so that boosting has something to add on the disk below (most are a
# constant or a single split there); the rest of the settings are the contract test's.
WEAK = {
    "cart": {"max_depth": 1},
    "rf": {"n_estimators": 3, "max_depth": 1},
    "bagged_cart": {"n_estimators": 3, "estimator": DecisionTreeClassifier(max_depth=1)},
    "gbdt": {"n_estimators": 1, "max_depth": 1},
    "adaboost": {"n_estimators": 1},
    "tnt": {"ccp_alpha": 0.1, "N2": 2},
    "tnt_bagging": {"n_estimators": 3, "ccp_alpha": 0.06, "N2": 2},
    "tnt_adaboost": {"n_estimators": 1, "ccp_alpha": 0.03, "N2": 2},
    "ndg": {"C": 0.06},
    "redt": {"max_depth": 1, "n_repeats": 1, "alpha": 0.5, "teacher_params": {"n_estimators": 10}},
    "e2edt": {"max_depth": 1, "epochs": 20},
    "e2edf": {"n_estimators": 1, "max_depth": 1, "epochs": 20},
    "onestage": {"max_depth": 1, "max_epochs": 50},
    "onestage_joint": {"max_depth": 1, "max_epochs": 50},
    "onestage_gumbel": {"max_depth": 1, "max_epochs": 50},
    "sdt": {"max_depth": 1, "max_epochs": 30, "batch_size": 32, "learning_rate": 0.05},
    "hinge_forest": {"n_estimators": 1, "max_depth": 1, "n_iterations": 200},
    "hinge_fern": {"n_estimators": 1, "max_depth": 1, "n_iterations": 200},
    "mlp": {"hidden_layer_sizes": 2, "max_iter": 100, "learning_rate_init": 0.01},
    "figs": {"max_rules": 1},
    "ebm": {"max_rounds": 1, "learning_rate": 1.0, "max_leaves": 2, "max_bins": 8},
}
# Classifiers boosting cannot help on the centred disk, with why (their weights are checked by
# test_weights_equal_repeated_rows_in_distribution)
NOT_BOOSTABLE = {
    "linear_svm": "linear: every round's best half-plane is the majority class, nothing to combine",
}
WEIGHTED_CLASSIFIERS = sorted(
    n
    for n, e in discover().items()
    if "classification" in e.classes
    and has_fit_parameter(e.classes["classification"], "sample_weight")
)


def _disk(n, seed):
    """Points in a square, class 1 inside a centred disk (39 %): no single split separates it."""
    X = np.random.RandomState(seed).uniform(-1, 1, size=(n, 2))
    return X, (X[:, 0] ** 2 + X[:, 1] ** 2 < 0.5).astype(int)


def test_every_classifier_has_a_weak_setting():
    assert set(WEAK) | set(NOT_BOOSTABLE) == set(WEIGHTED_CLASSIFIERS)
    assert not set(WEAK) & set(NOT_BOOSTABLE)


@pytest.mark.parametrize("name", [n for n in WEIGHTED_CLASSIFIERS if n not in NOT_BOOSTABLE])
def test_adaboost_uses_the_weights(name):
    """AdaBoostClassifier(<method>) removes at least 20 % of the method's test errors.

    A method that ignored its weights would be refitted on the same data every round.
    """
    X, y = _disk(300, 0)
    X_test, y_test = _disk(1000, 1)
    single = smoke_estimator(name, "classification", **WEAK[name]).fit(X, y)
    boosted = AdaBoostClassifier(
        estimator=smoke_estimator(name, "classification", **WEAK[name]),
        n_estimators=15,
        random_state=0,
    ).fit(X, y)
    err_single = np.mean(single.predict(X_test) != y_test)
    err_boosted = np.mean(boosted.predict(X_test) != y_test)
    assert len(boosted.estimators_) > 1
    assert err_boosted <= 0.8 * err_single, f"{err_boosted:.3f} vs single {err_single:.3f}"
