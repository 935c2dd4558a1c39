"""Datasets bundled with scikit-learn (iris, digits, wine, breast_cancer, diabetes).

Offline, no cache.
"""

from __future__ import annotations

import numpy as np
from sklearn import datasets as skd

from treebench.data.base import Dataset, Part

_LOADERS = {
    "iris": skd.load_iris,
    "digits": skd.load_digits,
    "wine": skd.load_wine,
    "breast_cancer": skd.load_breast_cancer,
    "diabetes": skd.load_diabetes,
}


def load(name: str, task: str, image_shape: list[int] | None = None, ctx=None) -> Dataset:
    """Load a scikit-learn bundled dataset as a single ``all`` part.

    Parameters
    ----------
    name : str
        One of ``iris``, ``digits``, ``wine``, ``breast_cancer``, ``diabetes``.
    task : {"classification", "regression"}
    image_shape : list of int, optional
        Pixel layout (``[8, 8]`` for digits).
    """
    if name not in _LOADERS:
        raise ValueError(f"no bundled dataset {name!r}; choices: {', '.join(sorted(_LOADERS))}")
    bunch = _LOADERS[name]()
    X = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target)
    return Dataset(
        name=name,
        task=task,
        parts={"all": Part(X, y)},
        image_shape=tuple(image_shape) if image_shape else None,
        meta={
            "source": "sklearn",
            "feature_names": list(getattr(bunch, "feature_names", [])),
            "class_names": [str(c) for c in getattr(bunch, "target_names", [])]
            if task == "classification"
            else [],
        },
    )
