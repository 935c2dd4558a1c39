"""scikit-learn baselines: CART, random forest, bagged CART, gradient boosting, AdaBoost."""

from treebench.methods.baselines.estimator import (
    GBDT,
    AdaBoost,
    AdaBoostReg,
    BaggedCART,
    BaggedCARTReg,
    CARTClassifier,
    CARTRegressor,
    GBDTReg,
    RandomForest,
    RandomForestReg,
)

__all__ = [
    "GBDT",
    "AdaBoost",
    "AdaBoostReg",
    "BaggedCART",
    "BaggedCARTReg",
    "CARTClassifier",
    "CARTRegressor",
    "GBDTReg",
    "RandomForest",
    "RandomForestReg",
]
