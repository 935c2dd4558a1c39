"""scikit-learn baselines: CART, random forest, bagged CART, gradient boosting, AdaBoost."""

from treebench.methods.baselines.estimator import (
    AdaBoostClassifier,
    AdaBoostRegressor,
    BaggedCARTClassifier,
    BaggedCARTRegressor,
    CARTClassifier,
    CARTRegressor,
    GBDTClassifier,
    GBDTRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)

__all__ = [
    "GBDTClassifier",
    "AdaBoostClassifier",
    "AdaBoostRegressor",
    "BaggedCARTClassifier",
    "BaggedCARTRegressor",
    "CARTClassifier",
    "CARTRegressor",
    "GBDTRegressor",
    "RandomForestClassifier",
    "RandomForestRegressor",
]
