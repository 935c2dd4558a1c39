"""Tests of the Tree in Tree decision graph.

Its ensembles and the NDG baseline (all offline, small).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits, load_iris
from sklearn.ensemble import AdaBoostClassifier, BaggingClassifier
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

from treebench.graph.flat import compact, dag_depth
from treebench.methods.base import get_method
from treebench.methods.tnt import (
    NDGClassifier,
    TnTAdaBoostClassifier,
    TnTBaggingClassifier,
    TnTClassifier,
    graph_predict_nodes,
)
from treebench.methods.tnt.builder import _TnTBuilder


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return train_test_split(X, y, test_size=0.33, random_state=0)


def corners(n=40):
    """Paper Fig. 2: a 2-D grid, class 1 in the four corners, class 0 elsewhere."""
    g = (np.arange(n) + 0.5) / n
    xx, yy = np.meshgrid(g, g)
    X = np.c_[xx.ravel(), yy.ravel()]
    edge = lambda v: (v < 0.25) | (v > 0.75)  # noqa: E731
    y = (edge(X[:, 0]) & edge(X[:, 1])).astype(int)
    return X, y


def slow_traverse(X, f, t, lft, rgt):
    out, steps = [], []
    for x in X:
        i, d = 0, 0
        while lft[i] >= 0:
            i = rgt[i] if x[f[i]] > t[i] else lft[i]
            d += 1
        out.append(i)
        steps.append(d)
    return np.array(out), np.array(steps)


# ----------------------------------------------------------------------------- equivalences


@pytest.mark.parametrize("C", [1e-3, 5e-3, 2e-2])
def test_N1_1_is_cart_with_ccp(digits, C):
    """Exact equality (graph and predictions) with the scikit-learn micro-tree backend."""
    Xtr, Xte, ytr, yte = digits
    cart = DecisionTreeClassifier(ccp_alpha=C, random_state=0).fit(Xtr, ytr)
    tnt = TnTClassifier(ccp_alpha=C, N1=1, N2=2, random_state=0)
    tnt._micro_backend = "sklearn"
    tnt.fit(Xtr, ytr)
    assert tnt.n_splits_ == cart.tree_.node_count - cart.get_n_leaves()
    np.testing.assert_array_equal(tnt.predict(Xte), cart.predict(Xte))
    np.testing.assert_array_equal(tnt.predict(Xtr), cart.predict(Xtr))
    assert tnt.size_report(Xte)["depth"] == cart.get_depth()


@pytest.mark.parametrize("C", [1e-3, 3e-3, 1e-2])
def test_N1_1_numba_backend_is_cart_with_ccp(C):
    """The numba micro trees give CART-with-ccp's partition of the training set.

    They stop early and prune exactly. Continuous features and random weights make equally good
    splits (ties, which scikit-learn breaks by its random feature order) induce the same partition,
    so partitions must match exactly.
    """
    X, y = load_digits(return_X_y=True)
    rs = np.random.RandomState(0)
    X = X + rs.rand(*X.shape) * 0.5
    w = rs.uniform(0.5, 1.5, len(y))
    cart = DecisionTreeClassifier(ccp_alpha=C, random_state=0).fit(X, y, sample_weight=w)
    tnt = TnTClassifier(ccp_alpha=C, N1=1, N2=2, random_state=0).fit(X, y, sample_weight=w)
    assert tnt.fit_info_["micro_backend"] == "numba"
    assert tnt.n_splits_ == cart.tree_.node_count - cart.get_n_leaves()
    la, lb = tnt.apply(X), cart.apply(X)
    assert (
        len(set(zip(la.tolist(), lb.tolist(), strict=True)))
        == len(set(la.tolist()))
        == cart.get_n_leaves()
    )
    np.testing.assert_array_equal(tnt.predict(X), cart.predict(X))


def test_micro_tree_kernel_matches_sklearn_ccp():
    """``build_micro`` = DecisionTreeClassifier(ccp_alpha) on a subset.

    The same node count and predictions on tie-free data; the kernel's branch-and-bound growth must
    not change the pruned tree at any C. C = 0 grows to purity without pruning (scikit-learn also
    splits nodes whose impurity is a rounding error above 0, so node counts are not compared there).
    """
    from treebench.methods.tnt import core

    rs = np.random.RandomState(1)
    n, d, K = 1500, 6, 3
    X = rs.randn(n, d).astype(np.float32)
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rs.randn(n)) > 0).astype(np.int64) + (X[:, 3] > 1)
    w = rs.uniform(0.5, 1.5, n)
    rows = np.sort(rs.choice(n, 1000, replace=False))
    enc = core.encode_features(X)
    for C in [0.0, *np.geomspace(2e-4, 3e-2, 12)]:
        f, t, lft, rgt, lab, _ = core.build_micro(
            *enc, np.arange(d), rows, y[rows], w[rows], K, C * w[rows].sum(), 1
        )
        sk = DecisionTreeClassifier(ccp_alpha=C, random_state=0).fit(X[rows], y[rows], w[rows])
        pred = core.tree_route(X, f, t, lft, rgt, lab, rows)
        np.testing.assert_array_equal(pred, sk.predict(X[rows]))
        if C > 0:
            assert len(f) == sk.tree_.node_count
        else:
            np.testing.assert_array_equal(pred, y[rows])


@pytest.mark.parametrize("K", [2, 10])
def test_micro_tree_kernel_count_weights_path_is_exact(K):
    """The kernel's fast path (integral weights) and stable path give the same tree.

    Integral weights take the fast path (blocks split by swaps, larger children's histograms by
    subtraction); halving the weights and the penalty takes the stable path and scales every sum
    exactly by a power of two, so both must give the same tree on tie-heavy data.
    """
    from treebench.methods.tnt import core

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    y = y % K
    rs = np.random.RandomState(3)
    enc = core.encode_features(X)
    feats = np.flatnonzero(enc[1] > 1)
    w = rs.randint(1, 4, len(y)).astype(np.float64)
    for n_rows in (300, len(y)):
        rows = np.sort(rs.choice(len(y), n_rows, replace=False))
        for C in [0.0, 1e-4, 1e-3, 5e-3]:
            for min_leaf in (1, 3):
                tau = C * w.sum()
                a = core.build_micro(*enc, feats, rows, y[rows], w[rows], K, tau, min_leaf)
                b = core.build_micro(*enc, feats, rows, y[rows], w[rows] / 2, K, tau / 2, min_leaf)
                for u, v in zip(a[:5], b[:5], strict=True):
                    np.testing.assert_array_equal(u, v)
                np.testing.assert_array_equal(a[5], 2 * b[5])


@pytest.mark.parametrize("seed", range(6))
def test_micro_tree_kernel_ignores_splits_that_isolate_negligible_weight(seed):
    """Late AdaBoost rounds weigh some rows ~1e-20 of the others.

    A split that puts only such rows on one side leaves that side's weight below the rounding of the
    node's total (W - wl = 0 or a rounding residue): it used to divide by zero, or win with a huge
    bogus score. Both sides of the chosen split must carry real weight, and the tree grows as if
    those rows weighed nothing.
    """
    from treebench.methods.tnt import core

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = rng.integers(0, 3, 300).astype(np.int64)  # no signal: every real split gains little
    w = rng.uniform(0.5, 1.5, 300)
    w[X[:, 0] > 0.8] = 1e-22
    w *= 300 / w.sum()  # as TnT rescales AdaBoost's weights
    enc = core.encode_features(X)
    feat, thr, *_ = core.build_micro(*enc, np.arange(3), np.arange(300), y, w, 3, 0.0, 1)
    go_left = X[:, feat[0]] <= thr[0]
    for side in (go_left, ~go_left):
        assert w[side].sum() > 1e-9 * w.sum()


def test_N1_1_iris_and_string_labels():
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    cart = DecisionTreeClassifier(ccp_alpha=0.01, random_state=3).fit(X, names)
    tnt = TnTClassifier(ccp_alpha=0.01, N1=1, random_state=3).fit(X, names)
    np.testing.assert_array_equal(tnt.predict(X), cart.predict(X))
    assert list(tnt.classes_) == list(names[[0, 50, 100]])


def test_integer_weights_equal_repeated_rows():
    X, y = load_iris(return_X_y=True)
    w = np.random.RandomState(0).randint(0, 3, len(y))
    a = TnTClassifier(ccp_alpha=0.005, random_state=0).fit(X, y, sample_weight=w)
    b = TnTClassifier(ccp_alpha=0.005, random_state=0).fit(np.repeat(X, w, 0), np.repeat(y, w))
    assert a.n_splits_ == b.n_splits_
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


# ----------------------------------------------------------------------------- the graph


@pytest.mark.parametrize("seed", range(5))
def test_vectorized_predict_equals_slow_traversal(seed):
    rs = np.random.RandomState(seed)
    n_nodes, d = 60, 5
    f = rs.randint(0, d, n_nodes)
    t = rs.randn(n_nodes)
    lft = np.full(n_nodes, -1)
    rgt = np.full(n_nodes, -1)
    for i in range(n_nodes - 10):  # node i points only to later nodes: a DAG, many shared children
        lft[i], rgt[i] = rs.randint(i + 1, min(i + 6, n_nodes), 2)
    v = rs.randint(0, 3, n_nodes)
    f, t, lft, rgt, v = compact(f, t, lft, rgt, v, 0)
    X = rs.randn(500, d).astype(np.float32)
    leaf, steps = graph_predict_nodes(X, f, t, lft, rgt)
    leaf2, steps2 = slow_traverse(X, f, t, lft, rgt)
    np.testing.assert_array_equal(leaf, leaf2)
    np.testing.assert_array_equal(steps, steps2)
    leaf3, steps3 = graph_predict_nodes(X, f, t, lft, rgt, backend="numpy")
    np.testing.assert_array_equal(leaf3, leaf2)
    np.testing.assert_array_equal(steps3, steps2)
    assert dag_depth(lft, rgt) >= steps.max()
    parents = np.bincount(np.r_[lft[lft >= 0], rgt[rgt >= 0]], minlength=len(lft))
    assert parents.max() >= 2  # the random graphs do share children


def test_handmade_corners_graph_needs_4_splits_while_cart_needs_6():
    X, y = corners()
    cart = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert cart.score(X, y) == 1.0
    assert cart.tree_.node_count - cart.get_n_leaves() >= 6
    # Fig. 2(c): x<=.25 -> A; else x<=.75 -> leaf 0; else -> A;  A: y<=.25 -> 1; y<=.75 -> 0; else 1
    f = np.array([0, 0, 1, 1, 0, 0, 0])
    t = np.array([0.25, 0.75, 0.25, 0.75, 0, 0, 0])
    lft = np.array([2, 4, 5, 6, -1, -1, -1])
    rgt = np.array([1, 2, 3, 5, -1, -1, -1])
    v = np.array([-1, -1, -1, -1, 0, 1, 0])
    leaf, _ = graph_predict_nodes(X, f, t, lft, rgt)
    assert (v[leaf] == y).all()
    assert int((lft >= 0).sum()) == 4


@pytest.mark.parametrize("backend", ["numba", "sklearn"])
def test_tnt_on_corners_keeps_the_6_split_tree_like_the_reference(backend):
    """On Fig. 2's corners TnT keeps phase 1's 6-split CART.

    As the reference code does (not the paper's 4-split graph; why: docs/methods/tnt.md, "Fig. 2").
    """
    X, y = corners()
    cart = DecisionTreeClassifier(ccp_alpha=1e-3, random_state=0).fit(X, y)
    tnt = TnTClassifier(ccp_alpha=1e-3, N1=3, random_state=0)
    tnt._micro_backend = backend
    tnt.fit(X, y)
    assert tnt.score(X, y) == 1.0
    assert tnt.n_splits_ == cart.tree_.node_count - cart.get_n_leaves() == 6


def test_tnt_graph_has_shared_children(digits):
    Xtr, Xte, ytr, yte = digits
    tnt = TnTClassifier(ccp_alpha=2e-3, random_state=0).fit(Xtr, ytr)
    lft, rgt = tnt.children_left_, tnt.children_right_
    parents = np.bincount(np.r_[lft[lft >= 0], rgt[rgt >= 0]], minlength=len(lft))
    assert parents.max() >= 2  # a DAG, not a tree
    assert parents[0] == 0 and (parents[1:] >= 1).all()  # compact: every node reachable
    rep = tnt.size_report(Xte)
    assert rep["n_splits"] == tnt.n_splits_ and rep["n_leaves"] == tnt.n_leaves_
    assert 0 < rep["mean_depth"] <= rep["depth"]


def _live_vs_merged(X, y, prune):
    b = _TnTBuilder(X, y, np.ones(len(y)), int(y.max()) + 1, 1e-3, {"criterion": "gini"}, 0)
    b.fit(1, 1)
    b._start_phase()
    stats = b.grow()
    live = b._infer(np.full(len(y), b.root), np.arange(len(y)))
    n_dead = sum(1 for (r, nl, nr) in stats.values() if r > 0 and (nl == 0 or nr == 0))
    b.prune_and_merge(stats, do_prune=prune)
    f, t, lft, rgt, v, root = b.arrays()
    f, t, lft, rgt, v = compact(f, t, lft, rgt, v, root)
    leaf, _ = graph_predict_nodes(X, f, t, lft, rgt)
    return live, v[leaf], n_dead, b.guard_bypasses, (lft >= 0).sum()


def test_prune_before_merge_and_guard(digits):
    Xtr, _, ytr, _ = digits
    X = np.asarray(Xtr, dtype=np.float32)
    live, merged, n_dead, guard, n_int = _live_vs_merged(X, ytr, prune=True)
    # the case exists on this data: care sets of one class give constant micro trees
    assert n_dead > 0
    assert guard == 0  # PRUNE ran first, nothing left for the guard
    np.testing.assert_array_equal(live, merged)  # merging never changes the function
    # without PRUNE the guard must bypass the constant substitutes instead of making class leaves
    live2, merged2, _, guard2, n_int2 = _live_vs_merged(X, ytr, prune=False)
    assert guard2 > 0
    np.testing.assert_array_equal(live2, merged2)


def test_target_splits_search(digits):
    Xtr, _, ytr, _ = digits
    m = TnTClassifier(target_splits=40, target_tol=0.1, max_search=8, random_state=0).fit(Xtr, ytr)
    assert abs(m.n_splits_ - 40) <= 8
    assert m.fit_info_["search_fits"] >= 2 and m.fit_info_["ccp_alpha_used"] != 1e-4


def test_secant_search_meets_the_target_in_fewer_fits_than_bisection(digits):
    Xtr, _, ytr, _ = digits
    kw = dict(ccp_alpha=3e-3, target_splits=40, random_state=0)  # a start near the target's C
    fits = {}
    for step in ("bisect", "secant"):
        m = TnTClassifier(**kw, search_step=step).fit(Xtr, ytr)
        assert abs(m.n_splits_ - 40) <= 0.05 * 40
        fits[step] = m.fit_info_["search_fits"]
    assert fits == {"bisect": 5, "secant": 3}


def test_secant_step_follows_the_power_law_and_stays_in_the_bracket():
    from treebench.methods.tnt.estimator import _secant_step

    # one fit: slope -1, so twice the target's splits doubles C
    assert _secant_step([(1e-3, 200, None, None)], 100, 1e-3, None) == pytest.approx(2e-3)
    # two fits on #S = 1e-3 / C**2 (slope -2): the step lands on the target exactly
    tried = [(1e-5, 1e7, None, None), (1e-4, 1e5, None, None)]
    assert _secant_step(tried, 1e3, 1e-4, None) == pytest.approx(1e-3)
    # a step out of the bracket (lo, hi) falls back to its log midpoint
    assert _secant_step(tried, 1e3, 1e-4, 4e-4) == pytest.approx(2e-4)


def test_more_phases_fit_training_data_better_than_cart(digits):
    Xtr, Xte, ytr, yte = digits
    cart = TnTClassifier(ccp_alpha=3e-3, N1=1, random_state=0).fit(Xtr, ytr)
    tnt = TnTClassifier(ccp_alpha=3e-3, random_state=0).fit(Xtr, ytr)
    assert tnt.score(Xtr, ytr) > cart.score(Xtr, ytr)


def test_finetune_never_hurts_training_accuracy(digits):
    Xtr, _, ytr, _ = digits
    a = TnTClassifier(ccp_alpha=3e-3, random_state=0).fit(Xtr, ytr)
    b = TnTClassifier(ccp_alpha=3e-3, random_state=0, finetune_passes=2).fit(Xtr, ytr)
    assert b.score(Xtr, ytr) >= a.score(Xtr, ytr)
    assert b.n_splits_ <= a.n_splits_
    assert "approximation" in b.fit_info_["finetune"]


# ----------------------------------------------------------------------------- sklearn integration


def test_clone_params_and_validation():
    m = TnTClassifier(ccp_alpha=0.01, N2=3)
    c = clone(m)
    assert c.get_params() == m.get_params()
    c.set_params(N1=1)
    assert c.N1 == 1
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="N1"):
        TnTClassifier(N1=0).fit(X, y)
    with pytest.raises(ValueError, match="ccp_alpha"):
        TnTClassifier(ccp_alpha=-1.0).fit(X, y)
    proba = TnTClassifier(ccp_alpha=0.01, random_state=0).fit(X, y).predict_proba(X)
    assert proba.shape == (150, 3) and np.allclose(proba.sum(1), 1)


def test_inside_sklearn_bagging_and_adaboost(digits):
    Xtr, Xte, ytr, yte = digits
    base = TnTClassifier(ccp_alpha=5e-3, random_state=0)
    bag = BaggingClassifier(estimator=base, n_estimators=3, random_state=0).fit(Xtr, ytr)
    ada = AdaBoostClassifier(estimator=base, n_estimators=3, random_state=0).fit(Xtr, ytr)
    assert bag.score(Xte, yte) > 0.7 and ada.score(Xte, yte) > 0.7
    assert len(ada.estimators_) >= 2


def test_registered_ensembles_report_summed_sizes(digits):
    Xtr, Xte, ytr, yte = digits
    assert get_method("tnt_bagging", "classification") is TnTBaggingClassifier
    bag = TnTBaggingClassifier(n_estimators=3, ccp_alpha=5e-3, random_state=0).fit(Xtr, ytr)
    rep = bag.size_report(Xte)
    assert rep["n_trees"] == 3
    assert rep["n_splits"] == sum(e.n_splits_ for e in bag.estimators_)
    ada = TnTAdaBoostClassifier(n_estimators=3, ccp_alpha=5e-3, random_state=0).fit(Xtr, ytr)
    rep = ada.size_report(Xte)
    assert rep["n_splits"] == sum(e.n_splits_ for e in ada.estimators_)
    assert ada.score(Xte, yte) > 0.7
    assert clone(bag).get_params()["n_estimators"] == 3


def test_adaboost_members_search_c_from_the_previous_members_c(digits):
    """``search_start="previous"``.

    Member k's search starts where member k - 1's ended, every member still meets the #S target, and
    the walk is not repeated per member.
    """
    Xtr, _, ytr, _ = digits
    kw = dict(n_estimators=4, ccp_alpha=1e-4, target_splits=30, random_state=0)
    cold = TnTAdaBoostClassifier(**kw).fit(Xtr, ytr)
    warm = TnTAdaBoostClassifier(**kw, search_start="previous").fit(Xtr, ytr)
    assert [e.ccp_alpha for e in cold.estimators_] == [1e-4] * 4
    starts = [e.ccp_alpha for e in warm.estimators_]
    ends = [e.fit_info_["ccp_alpha_used"] for e in warm.estimators_]
    assert starts == [1e-4, *ends[:-1]]
    # the first member is the same fit either way
    assert warm.estimators_[0].n_splits_ == cold.estimators_[0].n_splits_
    for m in (cold, warm):
        fits = [e.fit_info_["search_fits"] for e in m.estimators_]
        assert m.fit_info_["member_search_fits"] == sum(fits)
        assert all(abs(e.n_splits_ - 30) <= 0.05 * 30 for e in m.estimators_)
    assert warm.fit_info_["member_search_fits"] < cold.fit_info_["member_search_fits"]
    with pytest.raises(ValueError, match="search_start"):
        TnTAdaBoostClassifier(search_start="last").fit(Xtr, ytr)


def test_ndg_splits_and_merges(digits):
    Xtr, Xte, ytr, yte = digits
    m = NDGClassifier(C=3e-3, random_state=0).fit(Xtr, ytr)
    assert m.fit_info_["n_merge_ops"] > 0 and m.n_splits_ > 10
    assert m.score(Xte, yte) > 0.6
    lft, rgt = m.children_left_, m.children_right_
    parents = np.bincount(np.r_[lft[lft >= 0], rgt[rgt >= 0]], minlength=len(lft))
    assert parents.max() >= 2
    few = NDGClassifier(C=3e-3, max_iter=5, random_state=0).fit(Xtr, ytr)
    assert few.n_splits_ <= 5


def test_threads_give_the_same_graph(digits):
    """Micro trees of one wave fitted in 2 threads: the graph equals the single-threaded one."""
    Xtr, Xte, ytr, yte = digits
    a = TnTClassifier(ccp_alpha=2e-3, random_state=0, n_jobs=1).fit(Xtr, ytr)
    b = TnTClassifier(ccp_alpha=2e-3, random_state=0, n_jobs=2).fit(Xtr, ytr)
    for name in ("feature_", "threshold_", "children_left_", "children_right_", "value_"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.fit_info_["micro_fits"] == b.fit_info_["micro_fits"]
