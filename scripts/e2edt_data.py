"""Data for the E2EDT scripts, through treebench's own loaders (the runner's data path)."""

from __future__ import annotations

import numpy as np

from treebench.api import load_fold


def _arrays(f, scale=lambda X: X):
    return (
        scale(f.X_train).astype(np.float32),
        f.y_train.astype(int),
        scale(f.X_test).astype(np.float32),
        f.y_test.astype(int),
    )


def letter():
    """LIBSVM Letter (scaled to [-1, 1]): 15000 train / 5000 test, standardised on train."""
    return _arrays(load_fold("letter_libsvm", overrides=["++dataset.preprocess.scale=standard"]))


def usps():
    """USPS (ESL zip): 7291 train / 2007 test, 16x16 pixels in [-1, 1] rescaled to [0, 1]."""
    return _arrays(load_fold("usps"), lambda X: (X + 1) / 2)


def mnist():
    """MNIST 60000/10000, normalised as the reference ((x/255 - 0.1307) / 0.3081), flattened."""
    return _arrays(load_fold("mnist"), lambda X: (X / 255 - 0.1307) / 0.3081)


LOADERS = {"letter": letter, "usps": usps, "mnist": mnist}
