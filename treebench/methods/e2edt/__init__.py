"""End-to-end learned decision trees and forests (E2EDT / E2EDF)."""

from treebench.methods.e2edt.estimator import E2EDFClassifier, E2EDTClassifier

__all__ = ["E2EDFClassifier", "E2EDTClassifier"]
