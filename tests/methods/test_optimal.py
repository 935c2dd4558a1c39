"""The optimal-tree solvers keep their guarantee on their own binary columns.

And stop at their limit.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine
from sklearn.tree import DecisionTreeClassifier

pytest.importorskip("gosdt")
pytest.importorskip("pystreed")

from treebench.methods.optimal import GOSDTClassifier, STreeDClassifier  # noqa: E402
from treebench.methods.optimal.binarize import quantile_thresholds  # noqa: E402
from treebench.methods.optimal.deadline import (  # noqa: E402
    DeadlineExceeded,
    call_with_deadline,
    decode,
    encode,
)


def _sets():
    rng = np.random.RandomState(3)
    Xr = rng.normal(size=(300, 6))
    yr = (Xr[:, 0] * Xr[:, 1] + 0.5 * rng.normal(size=300) > 0).astype(
        int
    )  # XOR-like: greedy is short-sighted
    out = {"xor": (Xr, yr)}
    for name, load in (
        ("breast_cancer", load_breast_cancer),
        ("wine", load_wine),
        ("iris", load_iris),
    ):
        out[name] = load(return_X_y=True)
    return out


SETS = _sets()


def _accuracy(pred, y):
    return float(np.mean(pred == y))


@pytest.mark.parametrize("name", sorted(SETS))
@pytest.mark.parametrize("depth", [2, 3])
def test_streed_is_at_least_as_accurate_as_cart_of_the_same_depth(name, depth):
    """On STreeD's binary columns.

    CART of depth d (any tie-break) never beats STreeD's depth-d tree on the training data: STreeD
    searched all trees of that depth.
    """
    X, y = SETS[name]
    est = STreeDClassifier(max_depth=depth, n_thresholds=5, random_state=0).fit(X, y)
    assert est.fit_info_["optimal"] and not est.fit_info_["timed_out"]
    Z = est.bins_.transform(X)
    for seed in range(3):  # CART's ties between equal-gain columns go by its seed
        cart = DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(Z, y)
        assert _accuracy(est.predict(X), y) >= _accuracy(cart.predict(Z), y)
    assert est.size_report(X)["depth"] <= depth
    # the raw-feature tree is the binary one: predicting from raw inputs equals the training error
    assert 1 - _accuracy(est.predict(X), y) == pytest.approx(est.fit_info_["train_error"])


def test_streed_beats_cart_where_greedy_is_short_sighted():
    X, y = SETS["xor"]
    est = STreeDClassifier(max_depth=2, random_state=0).fit(X, y)
    cart = DecisionTreeClassifier(max_depth=2, random_state=0).fit(est.bins_.transform(X), y)
    assert _accuracy(est.predict(X), y) > _accuracy(cart.predict(est.bins_.transform(X)), y)


@pytest.mark.parametrize("name", ["breast_cancer", "xor", "wine"])
def test_gosdt_objective_is_no_worse_than_cart_pruned_to_the_same_leaves(name):
    """GOSDT's objective is at most that of any CART cut of the same depth on its columns.

    GOSDT minimises misclassification + lambda * leaves over trees of depth <= depth_budget on its
    binary columns: CART on the same columns, grown to the same depth and cut to L leaves (best
    first) for every L up to the depth's maximum, has an objective at least as large.
    """
    X, y = SETS[name]
    lam, depth = 0.01, 3
    est = GOSDTClassifier(
        regularization=lam, depth_budget=depth, time_limit=120, random_state=0
    ).fit(X, y)
    info = est.fit_info_
    assert info["status"] == "CONVERGED" and info["optimality_gap"] == pytest.approx(0, abs=1e-6)
    # our tree's objective is the solver's (its bounds meet at it)
    assert info["objective"] == pytest.approx(info["upper_bound"], abs=1e-6)
    Z = est.bins_.transform(X)
    leaves = est.size_report(X)["n_leaves"]
    assert leaves == int((est.tree_.left < 0).sum())
    for L in range(2, 2**depth + 1):
        cart = DecisionTreeClassifier(max_depth=depth, max_leaf_nodes=L, random_state=0).fit(Z, y)
        obj = 1 - _accuracy(cart.predict(Z), y) + lam * cart.get_n_leaves()
        assert info["objective"] <= obj + 1e-9, (L, info["objective"], obj)


def _hard():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(1500, 30))
    y = (X[:, :8].sum(axis=1) + rng.normal(scale=0.8, size=1500) > 4).astype(int)
    return X, y


def test_gosdt_time_limit_stops_a_hard_instance_and_the_record_says_so():
    """GOSDT checks its limit every 10,000 iterations.

    The child is killed at the limit (plus the grace) and the fit keeps the one-leaf tree or the
    solver's timed-out tree, saying so.
    """
    X, y = _hard()
    limit = 2.0
    est = GOSDTClassifier(
        regularization=1e-4,
        depth_budget=6,
        time_limit=limit,
        guess_n_estimators=60,
        guess_max_depth=2,
        column_elimination=False,
        random_state=0,
    ).fit(X, y)
    info = est.fit_info_
    assert info["timed_out"] is True
    assert info["search_wall_seconds"] <= limit * 1.1 + 1.0 + 1.0  # + kill and reap
    assert "optimality_gap" in info or "killed" in info["stopped"]
    assert est.predict(X).shape == y.shape


def test_streed_time_limit_stops_a_hard_instance_and_the_record_says_so():
    X, y = _hard()
    limit = 1.0
    t0 = time.perf_counter()
    est = STreeDClassifier(max_depth=5, n_thresholds=20, time_limit=limit, random_state=0).fit(X, y)
    elapsed = time.perf_counter() - t0
    assert est.fit_info_["timed_out"] is True and est.fit_info_["optimal"] is False
    assert est.fit_info_["solver_seconds"] <= limit + 1.0
    assert elapsed < 30


def test_deadline_kills_the_child_and_leaves_no_process():
    import psutil

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(DeadlineExceeded):
        call_with_deadline(time.sleep, 0.3, 30)
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before  # killed and reaped: no child of ours is left
    assert call_with_deadline(sum, 5.0, [1, 2, 3]) == 6
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        call_with_deadline(divmod, 5.0, 1, 0)


def test_the_child_sends_data_only_never_pickles():
    value = {
        "tree": {"feature": 3, "true": {"prediction": 1}, "false": {"prediction": 0}},
        "bounds": [0.25, np.float64(0.5)],
        "z": np.arange(6, dtype=np.int32).reshape(2, 3),
        "mask": np.array([True, False]),
        "status": "OPTIMAL",
        "none": None,
    }
    back = decode(encode(value))
    assert back["tree"] == value["tree"] and back["bounds"] == [0.25, 0.5]
    assert back["status"] == "OPTIMAL" and back["none"] is None
    np.testing.assert_array_equal(back["z"], value["z"])
    assert back["z"].dtype == np.int32 and back["mask"].dtype == bool
    # what has no data-only form fails in the child, and the parent is told so
    with pytest.raises(RuntimeError, match="cannot be sent back from the child as data"):
        call_with_deadline(lambda: object(), 5.0)
    with pytest.raises(TypeError, match="object array"):
        encode(np.array([object()]))
    assert call_with_deadline(np.arange, 5.0, 4).tolist() == [0, 1, 2, 3]


class _Marker:
    """Unpickling it would create a file: the parent must never do so."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def test_a_pickled_payload_is_refused_not_run(tmp_path):
    import pickle

    marker = tmp_path / "ran"
    with pytest.raises((ValueError, struct.error, UnicodeDecodeError)):
        decode(pickle.dumps({"status": "ok", "value": _Marker(marker)}))
    assert not marker.exists()


def test_binary_columns_are_fitted_on_the_training_part_only():
    X, y = SETS["breast_cancer"]
    est = STreeDClassifier(max_depth=2, random_state=0).fit(X[:300], y[:300])
    ref = quantile_thresholds(X[:300], 5)
    np.testing.assert_array_equal(est.bins_.threshold, ref.threshold)
    assert est.fit_info_["n_binary_features"] == len(ref)
