"""Random Hinge Forest and Random Hinge Ferns (ReLU hinge trees trained end to end)."""

from treebench.methods.hinge.estimator import (
    HingeFernClassifier,
    HingeFernRegressor,
    HingeForestClassifier,
    HingeForestRegressor,
)

__all__ = [
    "HingeFernClassifier",
    "HingeFernRegressor",
    "HingeForestClassifier",
    "HingeForestRegressor",
]
