"""The in-memory dataset.

Named parts (all, train, val, test) of features and targets plus metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from treebench.errors import TreebenchError


class DataError(ValueError, TreebenchError):
    """Bad or unusable data: the message names the dataset, file or fix."""


class DatasetUnavailableError(DataError):
    """A dataset is not in the cache and cannot be fetched now.

    The message names the fetch command.
    """


@dataclass
class Part:
    """Features ``X`` (numpy array or DataFrame) and targets ``y`` of one part of a dataset."""

    X: Any
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.y)


@dataclass
class Dataset:
    """A loaded dataset before splitting.

    Parameters
    ----------
    name : str
        Short name (the ``treebench/conf/dataset`` file name).
    task : {"classification", "regression"}
    parts : dict of str to Part
        ``"all"`` when the source has no given split, otherwise ``"train"``, ``"test"`` and
        optionally ``"val"``, in file order.
    categorical : list of str or int
        Columns to encode (names for DataFrames, indices for arrays).
    image_shape : tuple of int, optional
        ``(height, width)`` or ``(channels, height, width)`` for pixel data.
    meta : dict
        Anything else worth recording (source files, checksums, notes).
    """

    name: str
    task: str
    parts: dict[str, Part]
    categorical: list = field(default_factory=list)
    image_shape: tuple[int, ...] | None = None
    meta: dict = field(default_factory=dict)

    def part(self, key: str) -> Part:
        """Return part ``key`` (train, val or test).

        A missing part is an error naming the ones present.
        """
        if key not in self.parts:
            raise DataError(
                f"dataset {self.name!r} has no {key!r} part (it has: {', '.join(self.parts)}); "
                "choose a split protocol that fits, e.g. split=holdout"
            )
        return self.parts[key]

    def pooled(self) -> Part:
        """All parts concatenated in file order (train, val, test), or ``all`` itself."""
        if "all" in self.parts:
            return self.parts["all"]
        keys = [k for k in ("train", "val", "test") if k in self.parts]
        Xs = [self.parts[k].X for k in keys]
        if isinstance(Xs[0], pd.DataFrame):
            X = pd.concat(Xs, ignore_index=True)
        elif hasattr(Xs[0], "tocsr"):
            import scipy.sparse as sp

            X = sp.vstack(Xs).tocsr()
        else:
            X = np.concatenate([np.asarray(x) for x in Xs])
        return Part(X, np.concatenate([self.parts[k].y for k in keys]))


def take(X, idx):
    """Rows ``idx`` of an array, sparse matrix or DataFrame."""
    if isinstance(X, pd.DataFrame):
        return X.iloc[idx].reset_index(drop=True)
    return X[idx]
