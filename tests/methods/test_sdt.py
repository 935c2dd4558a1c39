"""Soft Decision Tree (Frosst & Hinton): path probabilities, penalty behaviour, fit, contract."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_iris

from treebench.methods.base import get_method
from treebench.methods.sdt import SoftDecisionTreeClassifier

torch = pytest.importorskip("torch")


def test_path_probabilities_sum_to_one_and_match_products():
    X, y = load_iris(return_X_y=True)
    m = SoftDecisionTreeClassifier(max_depth=3, max_epochs=1, random_state=0).fit(X, y)
    Xa = m._augment(X[:5])
    mu, _ = m._mu(torch, torch.as_tensor(Xa), torch.as_tensor(m.inner_))
    np.testing.assert_allclose(mu.sum(1).numpy(), 1.0, rtol=1e-5)
    p = 1 / (1 + np.exp(-(Xa @ m.inner_)))
    # leaf 5 (0-based, level order 7+5=12): path root -R-> 2 -L-> 5 -R-> 12
    expect = (1 - p[:, 0]) * p[:, 2] * (1 - p[:, 5])
    np.testing.assert_allclose(mu[:, 5].numpy(), expect, rtol=1e-5)
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)


def test_fit_breast_cancer_and_penalty_balances_routing():
    X, y = load_breast_cancer(return_X_y=True)
    m = SoftDecisionTreeClassifier(max_depth=3, max_epochs=20, random_state=0).fit(X[:400], y[:400])
    assert m.score(X[400:], y[400:]) > 0.9
    # a huge penalty keeps the root's mean routing close to 1/2
    h = SoftDecisionTreeClassifier(max_depth=2, lam=50.0, max_epochs=20, random_state=0).fit(X, y)
    p_root = 1 / (1 + np.exp(-(h._augment(X) @ h.inner_[:, 0])))
    assert abs(p_root.mean() - 0.5) < 0.1


def test_clone_reproducible_and_registered():
    X, y = load_iris(return_X_y=True)
    m = SoftDecisionTreeClassifier(max_depth=2, max_epochs=3, random_state=5)
    c = clone(m)
    assert c.get_params() == m.get_params()
    np.testing.assert_array_equal(m.fit(X, y).predict_proba(X), c.fit(X, y).predict_proba(X))
    assert get_method("sdt", "classification") is SoftDecisionTreeClassifier
    assert m.size_report(X)["n_splits"] == 3
    with pytest.raises(ValueError, match="max_depth"):
        SoftDecisionTreeClassifier(max_depth=0).fit(X, y)
