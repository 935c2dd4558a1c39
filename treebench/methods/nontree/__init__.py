"""Non-tree reference baselines (One-Stage paper, Table 6): MLP and linear SVM from scikit-learn."""

from treebench.methods.nontree.estimator import (
    MLP,
    LinearSVM,
    LinearSVMReg,
    MLPReg,
)

__all__ = ["MLP", "LinearSVM", "LinearSVMReg", "MLPReg"]
