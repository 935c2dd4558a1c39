"""Binarisation of continuous features for the optimal-tree solvers: fitted ``x[f] <= t`` columns.

A solver sees only the binary columns ``z_j = [x[feature_j] <= threshold_j]``; a tree over them is a
tree over the raw features with the same thresholds, so the fitted model predicts, exports and draws
on raw inputs. Both ways of choosing thresholds are fitted on the training part only:

* :func:`guess_thresholds` -- GOSDT's threshold guessing (McTavish et al. 2022): the thresholds a
  gradient-boosted reference ensemble splits on, pruned by backward column elimination;
* :func:`quantile_thresholds` -- up to ``n_thresholds`` cut points per feature at its quantiles,
  snapped to midpoints between distinct training values (STreeD's ``quantile`` strategy).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Thresholds:
    """Binary columns ``x[feature[j]] <= threshold[j]`` (float64 comparisons)."""

    feature: np.ndarray
    threshold: np.ndarray

    def __len__(self) -> int:
        return len(self.feature)

    def transform(self, X) -> np.ndarray:
        """Boolean matrix (n_samples, n_columns) of the tests on ``X`` (float64)."""
        X = np.asarray(X, dtype=np.float64)
        return X[:, self.feature] <= self.threshold[None, :]


def _from_pairs(pairs) -> Thresholds:
    pairs = sorted({(int(f), float(t)) for f, t in pairs})
    f = np.array([p[0] for p in pairs], dtype=np.int64)
    t = np.array([p[1] for p in pairs], dtype=np.float64)
    return Thresholds(f, t)


def quantile_thresholds(X, n_thresholds: int) -> Thresholds:
    """Return at most ``n_thresholds`` cut points per feature, at quantiles of the training values.

    The quantiles are evenly spaced; each cut point is moved to the nearest midpoint between two
    distinct values (a constant feature has none; a feature with few distinct values keeps every
    midpoint).
    """
    X = np.asarray(X, dtype=np.float64)
    pairs = []
    for f in range(X.shape[1]):
        u = np.unique(X[:, f])
        mids = (u[:-1] + u[1:]) / 2
        if len(mids) <= n_thresholds:
            pairs += [(f, m) for m in mids]
            continue
        q = np.quantile(X[:, f], np.arange(1, n_thresholds + 1) / (n_thresholds + 1))
        idx = np.clip(np.searchsorted(mids, q), 0, len(mids) - 1)
        prev = np.clip(idx - 1, 0, len(mids) - 1)
        pick = np.where(np.abs(mids[prev] - q) <= np.abs(mids[idx] - q), prev, idx)
        pairs += [(f, mids[i]) for i in np.unique(pick)]
    return _from_pairs(pairs)


def guess_thresholds(
    X, y, *, n_estimators: int, max_depth: int, learning_rate: float, column_elimination: bool, seed
) -> Thresholds:
    """Return GOSDT's guessed thresholds (McTavish et al. 2022, Sect. 4.1).

    The split thresholds of a gradient-boosted reference ensemble (``n_estimators`` trees of
    depth ``max_depth``), then, with ``column_elimination``, the reference refitted on the binary
    columns drops its least important column while its training accuracy does not fall below the
    first refit's (the last column dropped is kept).

    Every class's trees give thresholds (the ``gosdt`` package's binariser reads only the first
    class's trees of a multiclass reference).
    """
    from sklearn.ensemble import GradientBoostingClassifier

    X = np.asarray(X, dtype=np.float64)

    def reference():
        return GradientBoostingClassifier(
            n_estimators=n_estimators,
            max_depth=max_depth,
            learning_rate=learning_rate,
            random_state=seed,
        )

    gb = reference().fit(X, y)
    pairs = []
    for t in np.asarray(gb.estimators_).ravel():
        inner = t.tree_.feature >= 0
        pairs += zip(t.tree_.feature[inner], t.tree_.threshold[inner], strict=True)
    bins = _from_pairs(pairs)
    if not column_elimination or len(bins) < 2:
        return bins
    keep = list(range(len(bins)))
    Z = bins.transform(X).astype(np.float64)
    ref = reference().fit(Z, y)
    base = ref.score(Z, y)
    while len(keep) > 1:
        drop = keep[int(np.argmin(ref.feature_importances_))]
        trial = [j for j in keep if j != drop]
        ref = reference().fit(Z[:, trial], y)
        if ref.score(Z[:, trial], y) < base:
            break  # the column just dropped mattered: keep it
        keep = trial
    return Thresholds(bins.feature[keep], bins.threshold[keep])
