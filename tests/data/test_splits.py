"""Every split protocol: reproducible from its seed, disjoint parts, paper sizes, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf

from tests.data.tb_data_helpers import REPO
from treebench.data import DataError, Dataset, Part
from treebench.data.splits import (
    FileOrder,
    Given,
    Holdout,
    KFold,
    RotatingFolds,
    split_indices,
)


def _ds(n=300, k=3, task="classification", parts=None, seed=0):
    rs = np.random.RandomState(seed)
    X = np.column_stack([np.arange(n), rs.rand(n)])  # column 0 = row id
    y = np.arange(n) % k if task == "classification" else rs.rand(n)
    if parts is None:
        return Dataset("toy", task, {"all": Part(X, y)})
    out, start = {}, 0
    for name, m in parts.items():
        out[name] = Part(X[start : start + m], y[start : start + m])
        start += m
    return Dataset("toy", task, out)


def _ids(part):
    return part.X[:, 0].astype(int)


def _signature(folds):
    return [
        (
            f.split_id,
            _ids(f.train).tolist(),
            _ids(f.test).tolist(),
            None if f.val is None else _ids(f.val).tolist(),
        )
        for f in folds
    ]


PROTOCOLS = [
    pytest.param(lambda: Holdout(0.33), None, id="holdout"),
    pytest.param(lambda: Holdout(0.2, val_size=0.2), None, id="holdout-val"),
    pytest.param(lambda: Holdout(0.25, n_repeats=3, stratify=False), None, id="holdout-repeats"),
    pytest.param(lambda: KFold(5), None, id="kfold"),
    pytest.param(lambda: KFold(3, n_repeats=2), None, id="kfold-repeated"),
    pytest.param(lambda: RotatingFolds(5, 3), None, id="rotating"),
    pytest.param(lambda: Given(val_size=30), {"train": 200, "test": 100}, id="given-val"),
]


@pytest.mark.parametrize(("make", "parts"), PROTOCOLS)
def test_reproducible_from_seed(make, parts):
    ds = _ds(parts=parts)
    a = _signature(make().folds(ds, seed=7))
    b = _signature(make().folds(ds, seed=7))
    c = _signature(make().folds(ds, seed=8))
    assert a == b
    assert a != c
    assert len(a) == make().n_folds


@pytest.mark.parametrize(("make", "parts"), PROTOCOLS)
def test_only_selects_the_same_fold(make, parts):
    ds = _ds(parts=parts)
    full = _signature(make().folds(ds, seed=3))
    for i in range(make().n_folds):
        assert _signature(make().folds(ds, seed=3, only=i)) == [full[i]]


@pytest.mark.parametrize(("make", "parts"), PROTOCOLS)
def test_parts_are_disjoint(make, parts):
    ds = _ds(parts=parts)
    for f in make().folds(ds, seed=1):
        tr, te = set(_ids(f.train)), set(_ids(f.test))
        assert not tr & te
        if f.val is not None:
            va, proper = set(_ids(f.val)), set(_ids(f.train_proper))
            assert va <= tr and not va & proper and va | proper == tr
        else:
            assert f.train_proper is f.train


def test_holdout_sizes_and_stratification():
    ds = _ds(n=1000, k=4)
    (f,) = Holdout(0.2, val_size=0.2).folds(ds, seed=0)
    assert (len(f.train_proper), len(f.val), len(f.test)) == (600, 200, 200)
    for part in (f.train_proper, f.val, f.test):
        assert np.bincount(part.y).tolist() == [len(part) // 4] * 4


def test_holdout_fixed_seed_ignores_run_seed():
    ds = _ds()
    a = _signature(Holdout(0.2, fixed_seed=0).folds(ds, seed=1))
    b = _signature(Holdout(0.2, fixed_seed=0).folds(ds, seed=2))
    assert a == b and "fixed=0" in a[0][0]


def test_kfold_tests_cover_every_row_once_per_repeat():
    ds = _ds(n=100)
    folds = list(KFold(5, n_repeats=2).folds(ds, seed=0))
    for r in range(2):
        ids = np.concatenate([_ids(f.test) for f in folds[5 * r : 5 * r + 5]])
        assert sorted(ids.tolist()) == list(range(100))


def test_rotating_folds_rhf_iris_protocol():
    ds = _ds(n=150)
    folds = list(RotatingFolds(5, 3).folds(ds, seed=0))
    assert len(folds) == 15
    for s in range(5):
        group = folds[3 * s : 3 * s + 3]
        assert all((len(f.train_proper), len(f.val), len(f.test)) == (50, 50, 50) for f in group)
        tests = np.concatenate([_ids(f.test) for f in group])
        assert sorted(tests.tolist()) == list(range(150))  # each row tested once per shuffle
        # rotation: the validation part of rotation r is the training part of rotation r+1
        assert _ids(group[0].val).tolist() == _ids(group[1].train_proper).tolist()


def test_file_order_abalone_and_letter():
    ds = _ds(n=4177, k=3)
    (f,) = FileOrder(2089, n_val=1044, n_test=1044).folds(ds, seed=0)
    assert _ids(f.train_proper).tolist() == list(range(2089))
    assert _ids(f.val).tolist() == list(range(2089, 3133))
    assert _ids(f.test).tolist() == list(range(3133, 4177))
    (g,) = FileOrder(16000, 4000).folds(_ds(n=20000, k=26), seed=5)
    assert (len(g.train), len(g.test), g.val) == (16000, 4000, None)
    with pytest.raises(DataError, match="needs more than"):
        next(FileOrder(4000, 200).folds(_ds(n=4100), seed=0))


def test_given_with_val_file_merged_or_apart():
    ds = _ds(parts={"train": 100, "val": 50, "test": 60})
    (f,) = Given().folds(ds, seed=0)
    assert (len(f.train), len(f.train_proper), len(f.val), len(f.test)) == (150, 100, 50, 60)
    (g,) = Given(merge_val=False).folds(ds, seed=0)
    assert (len(g.train), len(g.val)) == (100, 50)
    assert _ids(f.test).tolist() == list(range(150, 210))


def test_stratified_split_keeps_singleton_classes_in_train():
    y = np.array([0] * 50 + [1] * 40 + [2] * 2 + [3])
    keep, out = split_indices(y, 31, np.random.RandomState(0))
    assert len(out) == 31 and set(np.unique(y[keep])) == {0, 1, 2, 3}
    assert not set(keep) & set(out)


def test_class_absent_from_train_is_a_clear_error():
    X = np.arange(10.0)[:, None]
    ds = Dataset(
        "toy",
        "classification",
        {
            "train": Part(X[:8], np.zeros(8, int) + np.arange(8) % 2),
            "test": Part(X[8:], np.array([2, 2])),
        },
    )
    with pytest.raises(DataError, match=r"leaves classes \[2\] out of the training part"):
        next(Given().folds(ds, seed=0))


def test_regression_holdout_is_not_stratified():
    ds = _ds(task="regression")
    (f,) = Holdout(0.2, val_size=0.2).folds(ds, seed=0)
    assert "strat" not in f.split_id and len(f.test) == 60


@pytest.mark.parametrize(
    "path", sorted((REPO / "treebench" / "conf" / "split").glob("*.yaml")), ids=lambda p: p.stem
)
def test_split_configs_instantiate(path):
    split = instantiate(OmegaConf.load(path))
    assert split.n_folds >= 1
