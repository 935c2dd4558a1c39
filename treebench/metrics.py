"""The metrics a record can hold (``metrics:`` in the config), by name, and the lower-is-better."""

from __future__ import annotations

import numpy as np
from sklearn import metrics as skm

METRICS = {
    "accuracy": lambda y, p: float(skm.accuracy_score(y, p)),
    "balanced_accuracy": lambda y, p: float(skm.balanced_accuracy_score(y, p)),
    "error": lambda y, p: float(1.0 - skm.accuracy_score(y, p)),
    "r2": lambda y, p: float(skm.r2_score(y, p)),
    "rmse": lambda y, p: float(np.sqrt(skm.mean_squared_error(y, p))),
    "mae": lambda y, p: float(skm.mean_absolute_error(y, p)),
}
#: metrics where smaller is better (tuning maximises their negative)
LOWER_IS_BETTER = frozenset({"error", "rmse", "mae"})
