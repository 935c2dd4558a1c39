"""Soft Decision Tree (Frosst & Hinton): a soft oblique tree trained by gradient descent."""

from treebench.methods.sdt.estimator import SoftDecisionTreeClassifier

__all__ = ["SoftDecisionTreeClassifier"]
