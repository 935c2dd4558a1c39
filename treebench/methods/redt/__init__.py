"""Rectified Decision Trees (ReDT): a soft-label CART distilled from a teacher."""

from treebench.methods.redt.estimator import (
    DEFAULT_ALPHA_GRID,
    ReDTClassifier,
    TorchTeacher,
    jackknife_soft_labels,
    pair_heldout_soft_labels,
)

__all__ = [
    "DEFAULT_ALPHA_GRID",
    "ReDTClassifier",
    "TorchTeacher",
    "jackknife_soft_labels",
    "pair_heldout_soft_labels",
]
