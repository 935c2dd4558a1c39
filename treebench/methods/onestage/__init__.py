"""One-Stage Tree: a complete soft oblique tree trained and pruned in one stage, then hardened."""

from treebench.methods.onestage.estimator import (
    OneStageClassifier,
    OneStageGumbelClassifier,
    OneStageGumbelRegressor,
    OneStageJointClassifier,
    OneStageJointRegressor,
    OneStageRegressor,
)

__all__ = [
    "OneStageClassifier",
    "OneStageGumbelClassifier",
    "OneStageGumbelRegressor",
    "OneStageJointClassifier",
    "OneStageJointRegressor",
    "OneStageRegressor",
]
