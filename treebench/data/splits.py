"""Split protocols.

Given files, file order, seeded (stratified) holdout, repeated k-fold, and the rotating
train/validation/test folds of the Random Hinge Forest paper.

Every protocol yields :class:`Fold` objects. ``fold.train`` is everything a method may train on;
when the protocol defines a validation part, ``fold.val`` is that part (a subset of ``fold.train``
unless a ``Given`` protocol is told not to merge it) and ``fold.train_proper`` is ``fold.train``
without it. Methods that do model selection fit on ``train_proper`` and select on ``val``; the rest
(and baselines, e.g. One-Stage's CART on train+val) fit on ``train``. Every fold is reproducible
from its seed and carries a ``split_id`` (protocol, fold index and digests of the test/val indices).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from sklearn.model_selection import KFold as _KFold
from sklearn.model_selection import StratifiedKFold

from treebench.data.base import DataError, Dataset, Part, take


@dataclass
class Fold:
    """One train/test split of a dataset, with a stable id recorded in every result row.

    ``val`` (optional) is the validation part; ``train_proper`` is ``train`` without it (equal to
    ``train`` when there is no validation part or it was kept separate).
    """

    index: int
    train: Part
    test: Part
    split_id: str
    val: Part | None = None
    train_proper: Part | None = None

    def __post_init__(self):
        if self.train_proper is None:
            self.train_proper = self.train


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


def _rng(seed: int, *keys: int) -> np.random.RandomState:
    return np.random.RandomState(np.random.SeedSequence([int(seed), *keys]).generate_state(1)[0])


def _n_of(size: float | int, n: int, what: str) -> int:
    """Return a fraction in (0, 1) of ``n``, or an absolute count."""
    if isinstance(size, float) and size < 1.0:
        if size <= 0.0:
            raise ValueError(f"{what} must be a fraction in (0, 1) or a count, got {size}")
        return int(np.ceil(size * n))
    k = int(size)
    if not 0 < k < n:
        raise ValueError(f"{what} must be between 1 and {n - 1} rows, got {size}")
    return k


def split_indices(
    y: np.ndarray | None, n_out: int, rs: np.random.RandomState
) -> tuple[np.ndarray, np.ndarray]:
    """Split ``range(len(y))`` into (keep, out) with ``n_out`` rows out, seeded by ``rs``.

    With ``y`` the split is stratified: each class gives its proportional share (largest
    remainders), and a class with a single member always stays in ``keep``.
    """
    n = len(y) if y is not None else None
    if y is None:
        raise ValueError("y is required")
    if n_out <= 0 or n_out >= n:
        raise ValueError(f"cannot hold out {n_out} of {n} rows")
    perm = rs.permutation(n)
    classes, inv = np.unique(np.asarray(y)[perm], return_inverse=True)
    counts = np.bincount(inv, minlength=len(classes))
    quota = counts * (n_out / n)
    take_n = np.floor(quota).astype(int)
    cap = np.maximum(counts - 1, 0)  # keep at least one of every class
    take_n = np.minimum(take_n, cap)
    short = n_out - take_n.sum()
    if short > 0:
        order = np.argsort(-(quota - np.floor(quota)), kind="stable")
        for c in np.concatenate([order, order]):
            if short == 0:
                break
            if take_n[c] < cap[c]:
                take_n[c] += 1
                short -= 1
    out = []
    for c in range(len(classes)):
        members = perm[inv == c]
        out.append(members[: take_n[c]])
    out = np.sort(np.concatenate(out)) if out else np.array([], dtype=np.int64)
    keep = np.setdiff1d(np.arange(n), out)
    return keep, out


def _random_split(n: int, n_out: int, rs, y=None, stratify=False):
    if stratify and y is not None:
        return split_indices(y, n_out, rs)
    perm = rs.permutation(n)
    return np.sort(perm[n_out:]), np.sort(perm[:n_out])


class SplitProtocol:
    """Base class: ``n_folds`` folds of a dataset, reproducible from an integer seed."""

    name = "split"

    @property
    def n_folds(self) -> int:
        """Return the number of folds the protocol gives."""
        return 1

    def folds(self, ds: Dataset, seed: int, only: int | None = None):
        """Yield the folds (all, or only fold ``only``) of ``ds`` for ``seed``."""
        raise NotImplementedError

    def _make(self, ds, part, tr, te, index, desc, va=None) -> Fold:
        """Return a fold of ``part``: train rows ``tr`` (val rows ``va`` are appended to train)."""
        tr = np.asarray(tr, dtype=np.int64)
        te = np.asarray(te, dtype=np.int64)
        split_id = f"{desc}#{index}:{_digest(te)}"
        if va is not None and len(va):
            va = np.asarray(va, dtype=np.int64)
            split_id += f"/val:{_digest(va)}"
            full = np.concatenate([tr, va])
            fold = Fold(
                index,
                Part(take(part.X, full), part.y[full]),
                Part(take(part.X, te), part.y[te]),
                split_id,
                val=Part(take(part.X, va), part.y[va]),
                train_proper=Part(take(part.X, tr), part.y[tr]),
            )
            _check_classes(ds, fold.train_proper, fold.val, split_id + " (validation)")
        else:
            fold = Fold(
                index,
                Part(take(part.X, tr), part.y[tr]),
                Part(take(part.X, te), part.y[te]),
                split_id,
            )
        _check_classes(ds, fold.train, fold.test, split_id)
        return fold


class Given(SplitProtocol):
    """The train/test files as the source serves them.

    Parameters
    ----------
    merge_val : bool
        With a given ``val`` part: ``True`` appends it to ``fold.train`` (and exposes it as
        ``fold.val``); ``False`` keeps ``fold.train`` to the train file only, with ``fold.val``
        apart.
    val_size : float or int, optional
        Carve a seeded (stratified) validation part out of the train file (fraction or count),
        e.g. RHF's 1838 of HAR's 7352 training rows. Ignored when the source gives a val part.
    stratify : bool
        Stratify ``val_size`` by class.
    """

    def __init__(
        self, merge_val: bool = True, val_size: float | int | None = None, stratify: bool = True
    ):
        self.merge_val, self.val_size, self.stratify = merge_val, val_size, stratify

    def folds(self, ds, seed, only=None):
        """Yield the given train/test (and val) parts as one fold."""
        train, test = ds.part("train"), ds.part("test")
        te = np.arange(len(test))
        if "val" in ds.parts:
            val = ds.parts["val"]
            split_id = f"given#0:{_digest(te)}/val:given"
            if self.merge_val:
                full = Dataset(ds.name, ds.task, {"train": train, "val": val}).pooled()
                fold = Fold(0, full, test, split_id, val=val, train_proper=train)
            else:
                fold = Fold(0, train, test, split_id, val=val)
            _check_classes(ds, fold.train_proper, val, split_id + " (validation)")
        elif self.val_size:
            n = len(train)
            strat = self.stratify and ds.task == "classification"
            tr, va = _random_split(
                n, _n_of(self.val_size, n, "val_size"), _rng(seed, 0), train.y, strat
            )
            full = np.concatenate([tr, va])
            split_id = f"given#0:{_digest(te)}/val:{_digest(va)}"
            fold = Fold(
                0,
                Part(take(train.X, full), train.y[full]),
                test,
                split_id,
                val=Part(take(train.X, va), train.y[va]),
                train_proper=Part(take(train.X, tr), train.y[tr]),
            )
            _check_classes(ds, fold.train_proper, fold.val, split_id + " (validation)")
        else:
            split_id = f"given#0:{_digest(te)}"
            fold = Fold(0, train, test, split_id)
        _check_classes(ds, fold.train, test, split_id)
        yield fold


class FileOrder(SplitProtocol):
    """All parts pooled in file order.

    The first ``n_train`` rows train, the next ``n_val`` validate, the next ``n_test`` (default: all
    the rest) test. Letter 16000/4000, abalone 2089/1044/1044.
    """

    def __init__(self, n_train: int, n_test: int | None = None, n_val: int | None = None):
        self.n_train, self.n_test = int(n_train), n_test
        self.n_val = int(n_val or 0)

    def folds(self, ds, seed, only=None):
        """Yield one fold of consecutive rows in file order: train, val, then test."""
        part = ds.pooled()
        n = len(part)
        start = self.n_train + self.n_val
        end = n if self.n_test is None else start + int(self.n_test)
        if end > n or start >= n:
            raise DataError(
                f"file-order split {self.n_train}/{self.n_val}/{self.n_test} of "
                f"dataset {ds.name!r} needs more than its {n} rows"
            )
        va = np.arange(self.n_train, start) if self.n_val else None
        desc = f"fileorder({self.n_train}" + (f",{self.n_val}" if self.n_val else "") + ")"
        yield self._make(ds, part, np.arange(self.n_train), np.arange(start, end), 0, desc, va)


class Holdout(SplitProtocol):
    """A random (stratified) holdout of ``test_size`` from the pooled data, seeded.

    Parameters
    ----------
    test_size : float or int
        Fraction (or count) held out as test.
    stratify : bool
        Keep class proportions (classification only).
    n_repeats : int
        Independent holdouts, each one fold.
    val_size : float or int, optional
        Fraction of ALL rows (or a count) carved from the rest as validation: One-Stage's
        6:2:2 is ``test_size=0.2, val_size=0.2``.
    fixed_seed : int, optional
        Use this seed instead of the run seed, so every run sees the same split (One-Stage's code
        splits with ``random_state=0``; E2EDT's connect4 permutation uses seed 0).
    """

    def __init__(
        self,
        test_size: float = 0.33,
        stratify: bool = True,
        n_repeats: int = 1,
        val_size: float | int | None = None,
        fixed_seed: int | None = None,
    ):
        if isinstance(test_size, float) and not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size must be in (0, 1), got {test_size}")
        self.test_size, self.stratify, self.n_repeats = test_size, stratify, int(n_repeats)
        self.val_size, self.fixed_seed = val_size, fixed_seed

    @property
    def n_folds(self):
        """Return the number of repeats (one fold each)."""
        return self.n_repeats

    def folds(self, ds, seed, only=None):
        """Yield one random (stratified) train/val/test fold per repeat."""
        part = ds.pooled()
        n = len(part)
        strat = self.stratify and ds.task == "classification"
        seed = seed if self.fixed_seed is None else self.fixed_seed
        n_te = _n_of(self.test_size, n, "test_size")
        n_va = _n_of(self.val_size, n, "val_size") if self.val_size else 0
        if n_te + n_va >= n:
            raise DataError(
                f"holdout of {n_te} test + {n_va} validation rows leaves no training "
                f"data in dataset {ds.name!r} ({n} rows)"
            )
        for r in range(self.n_repeats):
            if only is not None and r != only:
                continue
            rs = _rng(seed, r)
            rest, te = _random_split(n, n_te, rs, part.y, strat)
            va = None
            if n_va:
                keep, out = _random_split(len(rest), n_va, rs, part.y[rest], strat)
                rest, va = rest[keep], rest[out]
            desc = (
                f"holdout({self.test_size}"
                + (f",val={self.val_size}" if n_va else "")
                + (",strat" if strat else "")
                + (f",fixed={self.fixed_seed}" if self.fixed_seed is not None else "")
                + ")"
            )
            yield self._make(ds, part, rest, te, r, desc, va)


class KFold(SplitProtocol):
    """Repeated (stratified) k-fold cross-validation on the pooled data, seeded."""

    def __init__(self, n_splits: int = 5, n_repeats: int = 1, stratify: bool = True):
        self.n_splits, self.n_repeats, self.stratify = int(n_splits), int(n_repeats), stratify

    @property
    def n_folds(self):
        """Return the number of folds: ``n_splits`` per repeat."""
        return self.n_splits * self.n_repeats

    def folds(self, ds, seed, only=None):
        """Yield the ``n_splits`` (stratified) folds of each repeat."""
        part = ds.pooled()
        strat = self.stratify and ds.task == "classification"
        for r in range(self.n_repeats):
            if only is not None and only // self.n_splits != r:
                continue
            rs = _rng(seed, r)
            cv = (StratifiedKFold if strat else _KFold)(
                self.n_splits, shuffle=True, random_state=rs
            )
            for k, (tr, te) in enumerate(cv.split(np.zeros(len(part)), part.y)):
                i = r * self.n_splits + k
                if only is None or i == only:
                    yield self._make(
                        ds, part, tr, te, i, f"kfold({self.n_splits}x{self.n_repeats})"
                    )


class RotatingFolds(SplitProtocol):
    """``n_shuffles`` shuffles x ``n_parts`` rotations of train / validation / test parts.

    Each shuffle cuts the pooled data into ``n_parts`` (3) equal parts P0, P1, P2; rotation r
    trains on P[r], validates on P[r+1] and tests on P[r+2] (mod 3). This is the Random Hinge
    Forest protocol for iris: 5 shuffles x 3 folds = 15 runs of 50 / 50 / 50.
    ``fold.train`` is P[r] + P[r+1] (see the module docstring); methods with model selection fit on
    ``fold.train_proper`` and select on ``fold.val``.
    """

    def __init__(self, n_shuffles: int = 5, n_parts: int = 3, stratify: bool = False):
        if int(n_parts) < 3:
            raise ValueError(f"n_parts must be >= 3 (train, val, test), got {n_parts}")
        self.n_shuffles, self.n_parts, self.stratify = int(n_shuffles), int(n_parts), stratify

    @property
    def n_folds(self):
        """Return the number of folds: ``n_parts`` per shuffle."""
        return self.n_shuffles * self.n_parts

    def folds(self, ds, seed, only=None):
        """Yield each rotation of the parts of each shuffle as a fold."""
        part = ds.pooled()
        n = len(part)
        strat = self.stratify and ds.task == "classification"
        for s in range(self.n_shuffles):
            if only is not None and only // self.n_parts != s:
                continue
            rs = _rng(seed, s)
            if strat:
                cv = StratifiedKFold(self.n_parts, shuffle=True, random_state=rs)
                chunks = [te for _, te in cv.split(np.zeros(n), part.y)]
            else:
                chunks = np.array_split(rs.permutation(n), self.n_parts)
            for r in range(self.n_parts):
                i = s * self.n_parts + r
                if only is not None and i != only:
                    continue
                tr = np.sort(chunks[r])
                va = np.sort(chunks[(r + 1) % self.n_parts])
                te = np.sort(
                    np.concatenate([chunks[(r + k) % self.n_parts] for k in range(2, self.n_parts)])
                )
                desc = f"rotating({self.n_shuffles}x{self.n_parts}{',strat' if strat else ''})"
                yield self._make(ds, part, tr, te, i, desc, va)
