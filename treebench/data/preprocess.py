"""Preprocessing fitted on the training part only.

Imputation, categorical encoding, scaling, checks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, StandardScaler

from treebench.data.base import DataError

_SCALERS = {"none": None, "standard": StandardScaler, "minmax": MinMaxScaler}
_ENCODERS = {
    "onehot": lambda: OneHotEncoder(handle_unknown="ignore", sparse_output=False),
    # missing and unseen categories both become -1 (one-hot: missing is its own column)
    "ordinal": lambda: OrdinalEncoder(
        handle_unknown="use_encoded_value", unknown_value=-1, encoded_missing_value=-1
    ),
}


class Preprocessor(TransformerMixin, BaseEstimator):
    """Turn raw features into a finite float matrix, fitted on the training part only.

    Parameters
    ----------
    scale : {"none", "standard", "minmax"}
        Scaling of numeric columns.
    categorical : {"onehot", "ordinal"}
        Encoding of the dataset's categorical columns.
    impute : {"none", "mean", "median", "most_frequent"}
        Missing-value strategy; with ``"none"`` a missing value is an error.
    dense : bool
        Densify sparse inputs (LIBSVM files).
    """

    def __init__(self, scale="none", categorical="onehot", impute="none", dense=True):
        self.scale = scale
        self.categorical = categorical
        self.impute = impute
        self.dense = dense

    def _numeric_pipe(self):
        steps = []
        if self.impute != "none":
            steps.append(SimpleImputer(strategy=self.impute))
        if _SCALERS[self.scale] is not None:
            steps.append(_SCALERS[self.scale]())
        return make_pipeline(*steps) if steps else "passthrough"

    def fit(self, X, y=None, categorical=()):
        """Fit the scaler and the encoder of the ``categorical`` columns on ``X``."""
        if self.scale not in _SCALERS:
            raise ValueError(f"scale must be one of {list(_SCALERS)}, got {self.scale!r}")
        if self.categorical not in _ENCODERS:
            raise ValueError(
                f"categorical must be one of {list(_ENCODERS)}, got {self.categorical!r}"
            )
        cats = list(categorical)
        if isinstance(X, pd.DataFrame):
            num = [c for c in X.columns if c not in cats]
        else:
            num = [i for i in range(X.shape[1]) if i not in cats]
        transformers = [("num", self._numeric_pipe(), num)]
        if cats:
            enc = [_ENCODERS[self.categorical]()]
            if self.impute != "none":
                enc.insert(0, SimpleImputer(strategy="most_frequent"))
            transformers.append(("cat", make_pipeline(*enc), cats))
        self.transformer_ = ColumnTransformer(
            transformers, sparse_threshold=0.0 if self.dense else 1.0
        )
        X = self._prepare(X)
        self.transformer_.fit(X)
        return self

    def _prepare(self, X):
        if sp.issparse(X) and self.dense:
            X = X.toarray()
        return X

    def transform(self, X):
        """Return ``X`` scaled and encoded, as a dense float array."""
        out = self.transformer_.transform(self._prepare(X))
        if sp.issparse(out):
            data = out.data
        else:
            out = np.asarray(out, dtype=np.float64)
            data = out
        if not np.all(np.isfinite(data)):
            bad = np.argwhere(~np.isfinite(out))[:3].tolist() if not sp.issparse(out) else "?"
            raise DataError(
                f"features contain NaN or inf after preprocessing (first cells {bad}); "
                "run with ++dataset.preprocess.impute=mean (or median/most_frequent) or clean the "
                "data"
            )
        return out
