"""Glass-box baselines: the Explainable Boosting Machine and FIGS (the ``optimal`` extra)."""

from treebench.methods.glassbox.estimator import EBM, FIGS

__all__ = ["EBM", "FIGS"]
