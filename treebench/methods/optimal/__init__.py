"""Optimal sparse decision trees on binarised features: GOSDT and STreeD (the ``optimal`` extra)."""

from treebench.methods.optimal.estimator import GOSDTClassifier, STreeDClassifier

__all__ = ["GOSDTClassifier", "STreeDClassifier"]
