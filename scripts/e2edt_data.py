"""Mirror readers for the E2EDT scripts (until the data branch lands): Letter, USPS, MNIST."""

from __future__ import annotations

import gzip
import os

import numpy as np

MIRROR = os.environ.get("TREEBENCH_MIRROR_DIR", "/work/shared/data")


def letter():
    """LIBSVM Letter (scaled to [-1, 1]): 15000 train / 5000 test, standardised on train."""
    from sklearn.datasets import load_svmlight_files

    d = f"{MIRROR}/libsvm/multiclass"
    Xtr, ytr, Xte, yte = load_svmlight_files([f"{d}/letter.scale", f"{d}/letter.scale.t"],
                                             n_features=16)
    Xtr, Xte = Xtr.toarray(), Xte.toarray()
    mu, sd = Xtr.mean(0), Xtr.std(0) + 1e-8
    return ((Xtr - mu) / sd).astype(np.float32), ytr.astype(int), \
        ((Xte - mu) / sd).astype(np.float32), yte.astype(int)


def usps():
    """USPS (ESL zip): 7291 train / 2007 test, 16x16 pixels in [-1, 1] rescaled to [0, 1]."""
    def read(name):
        a = np.loadtxt(gzip.open(f"{MIRROR}/esl/zip/{name}"))
        return ((a[:, 1:] + 1) / 2).astype(np.float32), a[:, 0].astype(int)

    Xtr, ytr = read("zip.train.gz")
    Xte, yte = read("zip.test.gz")
    return Xtr, ytr, Xte, yte


def _idx(path):
    with gzip.open(path) as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def mnist():
    """MNIST 60000/10000, normalised as the reference ((x/255 - 0.1307) / 0.3081), flattened."""
    d = f"{MIRROR}/mnist"
    out = []
    for part in ("train", "t10k"):
        X = _idx(f"{d}/{part}-images-idx3-ubyte.gz").reshape(-1, 784).astype(np.float32) / 255
        y = _idx(f"{d}/{part}-labels-idx1-ubyte.gz").astype(int)
        out += [(X - 0.1307) / 0.3081, y]
    return tuple(out)


LOADERS = {"letter": letter, "usps": usps, "mnist": mnist}
