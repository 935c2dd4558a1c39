"""Non-tree reference baselines (One-Stage paper, Table 6): MLP and linear SVM from scikit-learn."""

from treebench.methods.nontree.estimator import (
    LinearSVMClassifier,
    LinearSVMRegressor,
    MLPClassifier,
    MLPRegressor,
)

__all__ = ["MLPClassifier", "LinearSVMClassifier", "LinearSVMRegressor", "MLPRegressor"]
