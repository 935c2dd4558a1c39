"""scikit-learn trees and tree ensembles (CART, RF, bagging, GBDT, AdaBoost) as decision graphs."""

from __future__ import annotations

from treebench.methods._export import GraphEnsemble, sklearn_ensemble


def baseline_graph(est) -> GraphEnsemble:
    """Return the fitted scikit-learn tree or ensemble ``est`` as a :class:`GraphEnsemble`."""
    return sklearn_ensemble(est)
