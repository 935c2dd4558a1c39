"""Bench data: the runner's fold 0 of a dataset, cut to random stratified subsets, preprocessed."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np


@dataclass
class BenchData:
    """Preprocessed train/test arrays of one dataset (a random stratified subset)."""

    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    image_shape: tuple | None = None

    def pooled(self, n: int, seed: int = 0) -> BenchData:
        """Return a dataset of ``n`` rows to time fits on, with no test part.

        Its training part is ``n`` rows of the train and test parts pooled: a random stratified
        subset (all rows when ``n`` is not below their count); the preprocessing stays the one
        fitted on the train part.
        """
        X = np.concatenate([self.X_train, self.X_test])
        y = np.concatenate([self.y_train, self.y_test])
        o = _order(y, n, np.random.RandomState(seed))[:n]
        return BenchData(self.name, X[o], y[o], X[:0], y[:0], self.image_shape)

    def subset(self, n_train: int | None, n_test: int | None = None) -> BenchData:
        """Return the first ``n_train`` / ``n_test`` rows.

        Rows are already in random order: nested subsets.
        """
        return BenchData(
            self.name,
            self.X_train[:n_train],
            self.y_train[:n_train],
            self.X_test[:n_test],
            self.y_test[:n_test],
            self.image_shape,
        )


def _order(y: np.ndarray, n: int | None, rs: np.random.RandomState) -> np.ndarray:
    """Return a random order of the rows whose first ``n`` rows are a stratified subset."""
    idx = rs.permutation(len(y))
    if n is None or n >= len(y):
        return idx
    from sklearn.model_selection import train_test_split

    strat = y if np.bincount(np.unique(y, return_inverse=True)[1]).min() >= 2 else None
    try:
        head, tail = train_test_split(
            idx, train_size=n, random_state=rs, stratify=strat[idx] if strat is not None else None
        )
    except ValueError:
        head, tail = idx[:n], idx[n:]
    return np.concatenate([head, tail])


def load_bench_data(
    name: str,
    max_train: int | None = None,
    max_test: int | None = None,
    seed: int = 0,
    data_dir: str | None = None,
) -> BenchData:
    """Return fold 0 of ``name`` under its own split protocol, cut to a random stratified subset.

    The fold is as ``treebench run dataset=<name>`` makes it
    (:func:`treebench.runner.prepare_fold`'s path), cut to ``max_train`` / ``max_test`` rows, with
    the dataset's preprocessing fitted on the kept train rows.
    """
    from treebench.config import compose
    from treebench.data import load_dataset
    from treebench.data.base import Part, take
    from treebench.runner import Job, data_context, preprocess_fold

    overrides = [f"dataset={name}", f"seed={seed}"]
    cfg = compose(overrides + ([f"paths.data={data_dir}"] if data_dir else []))
    job = Job.from_config(cfg)
    ds = load_dataset(cfg.dataset, data_context(cfg, allow_fetch=True))
    fold = job.split_fold(ds, 0)
    rs = np.random.RandomState(seed)

    def cut(part: Part, n: int | None) -> Part:
        o = _order(np.asarray(part.y), n, rs)[:n]
        return Part(take(part.X, o), np.asarray(part.y)[o])

    fold = dataclasses.replace(
        fold, train=cut(fold.train, max_train), test=cut(fold.test, max_test), train_proper=None
    )
    pf = preprocess_fold(cfg, fold, ds)
    shape = tuple(ds.image_shape) if ds.image_shape is not None else None
    return BenchData(
        name,
        np.ascontiguousarray(pf.X_train, dtype=np.float32),
        pf.y_train,
        np.ascontiguousarray(pf.X_test, dtype=np.float32),
        pf.y_test,
        shape,
    )


def synthetic_data(n: int, n_features: int, seed: int = 0) -> BenchData:
    """Return ``make_classification`` rows as a training part without a test part.

    Two classes, half the features informative, float32: fit time against rows on data of a fixed
    shape.
    """
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=n, n_features=n_features, n_informative=n_features // 2, random_state=seed
    )
    name = f"make_classification({n_features} features)"
    return BenchData(name, X.astype(np.float32), y, X[:0].astype(np.float32), y[:0])
