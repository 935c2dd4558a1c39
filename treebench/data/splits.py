"""Split protocols: given files, file order, seeded (stratified) holdout and repeated k-fold."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import (
    KFold as _KFold,
)
from sklearn.model_selection import (
    StratifiedKFold,
    train_test_split,
)

from treebench.data.base import DataError, Dataset, Part, take


@dataclass
class Fold:
    """One train/test split of a dataset, with a stable id recorded in every result row."""

    index: int
    train: Part
    test: Part
    split_id: str


def _digest(idx: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(idx, dtype=np.int64).tobytes()).hexdigest()[:12]


def _check_classes(ds: Dataset, train: Part, test: Part, split_id: str) -> None:
    if ds.task != "classification":
        return
    missing = np.setdiff1d(np.unique(test.y), np.unique(train.y))
    if missing.size:
        raise DataError(
            f"split {split_id} of dataset {ds.name!r} leaves classes {missing.tolist()} out of the "
            "training part; use a stratified split or a smaller test fraction"
        )
    if np.unique(train.y).size < 2:
        raise DataError(f"split {split_id} of dataset {ds.name!r} has a single class in training")


class SplitProtocol:
    """Base class: ``n_folds`` folds of a dataset, reproducible from an integer seed."""

    name = "split"

    @property
    def n_folds(self) -> int:
        return 1

    def folds(self, ds: Dataset, seed: int, only: int | None = None):
        """Yield the folds (all, or only fold ``only``) of ``ds`` for ``seed``."""
        raise NotImplementedError

    def _make(self, ds, part, tr, te, index, desc) -> Fold:
        split_id = f"{desc}#{index}:{_digest(te)}"
        fold = Fold(
            index, Part(take(part.X, tr), part.y[tr]), Part(take(part.X, te), part.y[te]), split_id
        )
        _check_classes(ds, fold.train, fold.test, split_id)
        return fold


class Given(SplitProtocol):
    """The train/test files as the source serves them; a ``val`` part is merged into train.

    Parameters
    ----------
    merge_val : bool
        Append the ``val`` part (if any) to the training part.
    """

    def __init__(self, merge_val: bool = True):
        self.merge_val = merge_val

    def folds(self, ds, seed, only=None):
        train, test = ds.part("train"), ds.part("test")
        if self.merge_val and "val" in ds.parts:
            pooled = Dataset(ds.name, ds.task, {"train": train, "val": ds.parts["val"]}).pooled()
            train = pooled
        split_id = f"given#0:{_digest(np.arange(len(test)))}"
        _check_classes(ds, train, test, split_id)
        yield Fold(0, train, test, split_id)


class FileOrder(SplitProtocol):
    """The first ``n_train`` rows (all parts pooled in file order) train, the next ``n_test`` test."""

    def __init__(self, n_train: int, n_test: int | None = None):
        self.n_train, self.n_test = int(n_train), n_test

    def folds(self, ds, seed, only=None):
        part = ds.pooled()
        n = len(part)
        end = n if self.n_test is None else self.n_train + int(self.n_test)
        if end > n or self.n_train >= n:
            raise DataError(f"file-order split {self.n_train}/{self.n_test} needs more than {n} rows")
        yield self._make(
            ds, part, np.arange(self.n_train), np.arange(self.n_train, end), 0,
            f"fileorder({self.n_train})",
        )


class Holdout(SplitProtocol):
    """A random (stratified) holdout of ``test_size`` from the pooled data, seeded.

    Parameters
    ----------
    test_size : float
        Fraction held out as test.
    stratify : bool
        Keep class proportions (classification only).
    n_repeats : int
        Independent holdouts, each one fold.
    """

    def __init__(self, test_size: float = 0.33, stratify: bool = True, n_repeats: int = 1):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size must be in (0, 1), got {test_size}")
        self.test_size, self.stratify, self.n_repeats = test_size, stratify, int(n_repeats)

    @property
    def n_folds(self):
        return self.n_repeats

    def folds(self, ds, seed, only=None):
        part = ds.pooled()
        idx = np.arange(len(part))
        strat = self.stratify and ds.task == "classification"
        for r in range(self.n_repeats):
            if only is not None and r != only:
                continue
            rs = np.random.RandomState(np.random.SeedSequence([seed, r]).generate_state(1)[0])
            tr, te = train_test_split(
                idx, test_size=self.test_size, random_state=rs, stratify=part.y if strat else None
            )
            desc = f"holdout({self.test_size}{',strat' if strat else ''})"
            yield self._make(ds, part, np.sort(tr), np.sort(te), r, desc)


class KFold(SplitProtocol):
    """Repeated (stratified) k-fold cross-validation on the pooled data, seeded."""

    def __init__(self, n_splits: int = 5, n_repeats: int = 1, stratify: bool = True):
        self.n_splits, self.n_repeats, self.stratify = int(n_splits), int(n_repeats), stratify

    @property
    def n_folds(self):
        return self.n_splits * self.n_repeats

    def folds(self, ds, seed, only=None):
        part = ds.pooled()
        strat = self.stratify and ds.task == "classification"
        for r in range(self.n_repeats):
            rs = np.random.RandomState(np.random.SeedSequence([seed, r]).generate_state(1)[0])
            cv = (StratifiedKFold if strat else _KFold)(self.n_splits, shuffle=True, random_state=rs)
            for k, (tr, te) in enumerate(cv.split(np.zeros(len(part)), part.y)):
                i = r * self.n_splits + k
                if only is None or i == only:
                    yield self._make(ds, part, tr, te, i, f"kfold({self.n_splits}x{self.n_repeats})")
