"""Optimal sparse decision trees on binarised features: GOSDT and STreeD (the ``optimal`` extra)."""

from treebench.methods.optimal.estimator import GOSDT, STreeD

__all__ = ["GOSDT", "STreeD"]
