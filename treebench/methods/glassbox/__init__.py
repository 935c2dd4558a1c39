"""Glass-box baselines: the Explainable Boosting Machine and FIGS (the ``optimal`` extra)."""

from treebench.methods.glassbox.estimator import EBMClassifier, FIGSClassifier

__all__ = ["EBMClassifier", "FIGSClassifier"]
