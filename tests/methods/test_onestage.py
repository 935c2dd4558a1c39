"""One-Stage Tree: closed-form values, pruning at inference, straight-through gradients."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_iris

from treebench.methods.base import get_method
from treebench.methods.onestage import (
    OneStageClassifier,
    OneStageGumbelClassifier,
    OneStageJointClassifier,
    OneStageRegressor,
)
from treebench.methods.onestage.core import (
    collapse_neutral_splits,
    node_values,
    reachable,
    refresh_values,
    route_paths,
    stop_nodes,
    stop_positions,
)

torch = pytest.importorskip("torch")


def _setup(task="classification", D=3, n=40, d=4, c=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    Xa = np.hstack([X, np.ones((n, 1))]).astype(np.float32)
    n_int, n_nodes = 2**D - 1, 2 ** (D + 1) - 1
    W = rng.randn(d + 1, n_int, 2)
    if task == "classification":
        t = rng.randint(0, c, n)
        V = rng.dirichlet(np.ones(c), size=n_nodes)
        V[rng.rand(n_nodes, c) < 0.2] = 0.0  # exact zeros exercise the clamp
        est = OneStageClassifier(max_depth=D, prob_floor=1e-2)
    else:
        t = rng.randn(n)
        V = rng.randn(n_nodes, 1)
        est = OneStageRegressor(max_depth=D)
    keep = rng.rand(n_int) < 0.7
    keep[0] = True
    return est, Xa, t, W, V, keep, D, rng


def _torch_response(Xa, W, V, gbar, D, hard_right, soft_left=None):
    """Eq. (2) bottom up in torch.

    F_i = g_i (s_i0 f_L + s_i1 f_R) + (1 - g_i) v_i (full vectors).
    """
    n = Xa.shape[0]
    n_int = 2**D - 1
    Vt = torch.as_tensor(V)
    f = {i: Vt[i].expand(n, -1) for i in range(n_int, 2 ** (D + 1) - 1)}
    for i in range(n_int - 1, -1, -1):
        left = 1.0 - torch.as_tensor(hard_right[:, i], dtype=torch.float64)
        if soft_left is not None:  # straight-through: forward hard, backward soft
            left = left + soft_left[:, i] - soft_left[:, i].detach()
        kids = left[:, None] * f[2 * i + 1] + (1 - left)[:, None] * f[2 * i + 2]
        f[i] = gbar[i] * kids + (1 - gbar[i]) * Vt[i]
    return f[0]


def _torch_loss(est, f, t, floor):
    if est._task == "classification":
        fy = f[torch.arange(len(t)), torch.as_tensor(t)]
        fy = fy + (fy.clamp_min(floor) - fy).detach()
        return -torch.log(fy).mean()
    return ((f[:, 0] - torch.as_tensor(t)) ** 2).mean()


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_router_gradient_matches_autograd(task):
    est, Xa, t, W, V, keep, D, rng = _setup(task)
    noise = rng.logistic(size=(len(t), 2**D - 1))
    tau = 0.7
    g = est._router_grad(Xa, t, np.ones(len(t)), noise, W, V, keep, tau, D)
    Wt = torch.tensor(W, requires_grad=True)
    Xt = torch.as_tensor(Xa, dtype=torch.float64)
    z = Xt @ Wt[:, :, 0] - Xt @ Wt[:, :, 1]
    a = (z + torch.as_tensor(noise)) / tau
    hard_right = (a <= 0).detach().numpy()
    f = _torch_response(
        Xa,
        Wt,
        V,
        torch.as_tensor(keep, dtype=torch.float64),
        D,
        hard_right,
        soft_left=torch.sigmoid(a),
    )
    _torch_loss(est, f, t, est.prob_floor).backward()
    np.testing.assert_allclose(np.stack([g, -g], axis=2), Wt.grad.numpy(), rtol=1e-4, atol=1e-6)
    assert np.abs(g).sum() > 0


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_joint_relaxed_gradients_match_autograd(task):
    """Joint Tree (Eq. 8): continuous gamma mixes each node's value and its children (Eq. 2)."""
    est, Xa, t, W, V, _, D, rng = _setup(task)
    noise = rng.logistic(size=(len(t), 2**D - 1))
    gamma = rng.rand(2**D - 1)
    gW, gg = est._router_grad(Xa, t, np.ones(len(t)), noise, W, V, gamma, 1.0, D, with_gamma=True)
    Wt = torch.tensor(W, requires_grad=True)
    gt = torch.tensor(gamma, requires_grad=True)
    Xt = torch.as_tensor(Xa, dtype=torch.float64)
    a = Xt @ Wt[:, :, 0] - Xt @ Wt[:, :, 1] + torch.as_tensor(noise)
    hard_right = (a <= 0).detach().numpy()
    f = _torch_response(Xa, Wt, V, gt, D, hard_right, soft_left=torch.sigmoid(a))
    _torch_loss(est, f, t, est.prob_floor).backward()
    np.testing.assert_allclose(np.stack([gW, -gW], axis=2), Wt.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(gg, gt.grad.numpy(), rtol=1e-6, atol=1e-9)
    # the monitored relaxed loss is the same response under argmax routing
    Wd = (W[:, :, 0] - W[:, :, 1]).astype(np.float32)
    f0 = _torch_response(Xa, None, V, torch.as_tensor(gamma), D, (Xa @ Wd) <= 0)
    ref = float(_torch_loss(est, f0, t, est.prob_floor))
    assert est._relaxed_loss(Xa, t, np.ones(len(t)), W, V, gamma, D) == pytest.approx(ref)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_gamma_straight_through_gradient_matches_autograd_and_is_nonzero(task):
    est, Xa, t, W, V, keep, D, rng = _setup(task, n=200)
    est.set_params(gamma_gradient="tangent")  # the literal derivative at gamma_bar
    Wd = (W[:, :, 0] - W[:, :, 1]).astype(np.float32)
    g = est._gamma_grad(Xa, t, np.ones(len(t)), Wd, V, keep, D, 2**D - 1)
    gbar = torch.tensor(keep.astype(np.float64), requires_grad=True)  # the discrete gamma_bar
    hard_right = (Xa @ Wd) <= 0
    f = _torch_response(Xa, None, V, gbar, D, hard_right)
    _torch_loss(est, f, t, est.prob_floor).backward()
    np.testing.assert_allclose(g, gbar.grad.numpy(), rtol=1e-6, atol=1e-9)
    # nonzero for the root and for a pruned node that rows reach (it can bud again)
    assert abs(g[0]) > 0
    paths = route_paths(Xa, Wd, D)
    pruned_reached = [i for i in np.unique(paths[:, :D]) if not keep[i]]
    assert pruned_reached and all(abs(g[i]) > 0 for i in pruned_reached[:1])


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_gamma_flip_gradient_is_the_loss_change_of_flipping_each_node(task):
    est, Xa, t, W, V, keep, D, rng = _setup(task, n=200)
    est.set_params(gamma_gradient="flip")
    Wd = (W[:, :, 0] - W[:, :, 1]).astype(np.float32)
    w = rng.rand(len(t)) + 0.5
    g = est._gamma_grad(Xa, t, w, Wd, V, keep, D, 2**D - 1)
    hard_right = (Xa @ Wd) <= 0

    def loss(k):
        f = _torch_response(Xa, None, V, torch.as_tensor(k, dtype=torch.float64), D, hard_right)
        if task == "classification":
            fy = f[torch.arange(len(t)), torch.as_tensor(t)].clamp_min(est.prob_floor)
            per_row = -torch.log(fy)
        else:
            per_row = (f[:, 0] - torch.as_tensor(t)) ** 2
        return float((per_row * torch.as_tensor(w)).mean())

    for i in range(2**D - 1):  # exact: L(gamma_bar_i = 1) - L(gamma_bar_i = 0), the others fixed
        k1, k0 = keep.copy(), keep.copy()
        k1[i], k0[i] = True, False
        np.testing.assert_allclose(g[i], loss(k1) - loss(k0), rtol=1e-9, atol=1e-12)
    assert abs(g[0]) > 0
    # for MSE the flip gradient is the tangent at gamma_bar minus the curvature term: the tangent
    # at gamma_bar = 1 is biased towards pruning whenever the held-out response wants shrinking
    if task == "regression":
        tangent = est.set_params(gamma_gradient="tangent")._gamma_grad(
            Xa, t, w, Wd, V, keep, D, 2**D - 1
        )
        assert tangent[0] > g[0]


def test_closed_form_values_equal_brute_force_means():
    rng = np.random.RandomState(1)
    D, n, d, c = 4, 300, 3, 3
    Xa = np.hstack([rng.randn(n, d), np.ones((n, 1))]).astype(np.float32)
    Wd = rng.randn(d + 1, 2**D - 1).astype(np.float32)
    Wd[:, 5] = 0.0
    Wd[-1, 5] = 1.0  # node 5 sends everything left: node 12 stays empty and copies its parent
    y = rng.randint(0, c, n)
    Y = np.eye(c)[y]
    w = rng.rand(n)
    V = node_values(route_paths(Xa, Wd, D)[:, -1], Y, w, D)
    np.testing.assert_allclose(node_values(route_paths(Xa, Wd, D, leaves_only=True), Y, w, D, y), V)
    for node in range(2 ** (D + 1) - 1):
        rows = []
        for r in range(n):  # brute force: walk each row down the tree
            i = 0
            hit = i == node
            while i < 2**D - 1 and not hit:
                i = 2 * i + 1 + int(float(Xa[r] @ Wd[:, i]) <= 0)
                hit = i == node
            if hit:
                rows.append(r)
        if rows:
            expect = (Y[rows] * w[rows, None]).sum(0) / w[rows].sum()
        else:
            p = node
            while not rows:  # nearest non-empty ancestor
                p = (p - 1) // 2
                rows = [r for r in range(n) if p in route_paths(Xa[r : r + 1], Wd, D)[0]]
            expect = (Y[rows] * w[rows, None]).sum(0) / w[rows].sum()
        np.testing.assert_allclose(V[node], expect, rtol=1e-10, err_msg=f"node {node}")


def test_compiled_router_matches_numpy_router():
    rng = np.random.RandomState(0)
    Xa = np.hstack([rng.randn(5000, 7), np.ones((5000, 1))]).astype(np.float32)
    Wd = rng.randn(8, 2**5 - 1).astype(np.float32)
    fast = route_paths(Xa, Wd, 5)
    Z = (Xa @ Wd).ravel()  # the numpy router: one matmul over every router
    idx = np.zeros(len(Xa), dtype=np.int64)
    for lvl in range(5):
        idx = 2 * idx + 1 + (Z[np.arange(len(Xa)) * Wd.shape[1] + idx] <= 0)
        assert (fast[:, lvl + 1] == idx).mean() > 0.999  # float32 summation order may flip ties
        idx = fast[:, lvl + 1]
    assert (route_paths(Xa[:10], Wd, 5) == fast[:10]).all()  # the same kernel at every size


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_fused_refresh_equals_routing_then_node_values(task):
    """One compiled pass gives exactly the values of route_paths + node_values, and each leaf.

    The pass routes every row, sums it into its leaf and makes the values.
    """
    rng = np.random.RandomState(3)
    D, n, d = 5, 703, 6  # not a multiple of 4: rows are routed four at a time, then one by one
    Xa = np.hstack([rng.randn(n, d), np.ones((n, 1))]).astype(np.float32)
    Wd = rng.randn(d + 1, 2**D - 1).astype(np.float32)
    w = rng.rand(n) + 0.1
    if task == "classification":
        codes = rng.randint(0, 4, n)
        Y = np.eye(4)[codes]
    else:
        codes, Y = None, rng.randn(n, 1)
    V, leaf = refresh_values(Xa, Wd, Y, w, D, codes)
    ref_leaf = route_paths(Xa, Wd, D, leaves_only=True)
    assert (leaf == ref_leaf).all()
    assert np.array_equal(V, node_values(ref_leaf, Y, w, D, codes))


def test_half_adam_on_routers_equals_adam_on_both_logits():
    """The second logits' gradient is the first's negation.

    Adam on half of the routers' moments moves both logits by exactly the numbers of Adam on the
    stacked gradient.
    """
    rng = np.random.RandomState(4)
    W = rng.randn(5, 7, 2)
    W2 = W.copy()
    full = {"m": np.zeros_like(W), "v": np.zeros_like(W), "t": 0}
    half = {"m": np.zeros(W.shape[:2]), "v": np.zeros(W.shape[:2]), "t": 0}
    for _ in range(20):
        g0 = rng.randn(5, 7) * rng.choice([0.0, 1e-3, 1.0], size=(5, 7))
        full["t"] += 1
        half["t"] += 1
        OneStageClassifier._adam(W, np.stack([g0, -g0], axis=2), full, 0.01, 0.9, 0.999, 1e-8)
        OneStageClassifier._adam_routers(W2, g0, half, 0.01, 0.9, 0.999, 1e-8)
    assert np.array_equal(W, W2)


def test_pruned_nodes_stop_routing_in_predict():
    X, y = load_iris(return_X_y=True)
    m = OneStageClassifier(max_depth=3, max_epochs=3, random_state=0).fit(X, y)
    m.keep_ = np.ones_like(m.keep_)
    full = m.apply(X)
    assert (full >= 2**3 - 1).all()  # full tree: every row ends in a depth-3 leaf
    m.keep_[1] = False  # prune the root's left child
    stops = m.apply(X)
    went_left = np.isin(full, [7, 8, 9, 10])
    assert (stops[went_left] == 1).all() and (stops[~went_left] == full[~went_left]).all()
    np.testing.assert_allclose(
        m.predict_proba(X)[went_left], np.tile(m.values_[1], (went_left.sum(), 1))
    )
    rep = m.size_report(X)
    assert rep["n_splits"] == 4 and rep["n_leaves"] == 5  # nodes 0, 2, 5, 6 (3, 4 unreachable)
    m.keep_[0] = False
    assert (m.apply(X) == 0).all() and m.size_report(X)["n_splits"] == 0


def test_reachable_matches_recursive_definition():
    rng = np.random.RandomState(0)
    for D in (1, 3, 6):
        keep = rng.rand(2**D - 1) < 0.7
        want = np.zeros_like(keep)
        for i in range(keep.size):
            want[i] = keep[i] and (i == 0 or want[(i - 1) // 2])
        np.testing.assert_array_equal(reachable(keep, D), want)


@pytest.mark.parametrize("cls", [OneStageClassifier, OneStageRegressor])
def test_collapsing_neutral_splits_keeps_predictions(cls):
    X, y = (
        load_iris(return_X_y=True) if cls is OneStageClassifier else load_diabetes(return_X_y=True)
    )
    m = cls(max_depth=7, max_epochs=3, random_state=0).fit(X, y)
    info = m.fit_info_
    # depth 7 on ~100-330 rows: many routers get rows on one side only
    assert info["internal_kept"] < info["internal_kept_gamma"]
    pred = m.predict_proba if cls is OneStageClassifier else m.predict
    collapsed = pred(X)
    m.keep_ = m.gamma_ >= 0.5
    np.testing.assert_array_equal(pred(X), collapsed)
    # a split whose two sides both receive rows is never collapsed
    paths = np.array([[0, 1, 3], [0, 2, 5], [0, 2, 5]])
    keep = np.ones(3, dtype=bool)
    np.testing.assert_array_equal(
        collapse_neutral_splits(paths, np.ones(3, bool), keep, 2), [True, False, False]
    )


def test_fit_learns_and_prunes_iris():
    X, y = load_iris(return_X_y=True)
    m = OneStageClassifier(max_depth=4, random_state=0, max_epochs=200, patience=200).fit(X, y)
    assert m.score(X, y) > 0.9
    assert m.fit_info_["internal_kept"] < 15  # the validation loss pruned part of the depth-4 tree
    assert m.predict_proba(X).shape == (150, 3)
    assert set(m.fit_info_) >= {"epochs", "best_epoch", "internal_kept", "frac_pruned"}


def test_regression_diabetes():
    X, y = load_diabetes(return_X_y=True)
    m = OneStageRegressor(max_depth=4, random_state=0, max_epochs=40).fit(X[:350], y[:350])
    from sklearn.metrics import r2_score

    assert r2_score(y[350:], m.predict(X[350:])) > 0.2
    assert m.size_report(X)["n_splits"] >= 1


def test_clone_params_reproducible_and_variants():
    X, y = load_iris(return_X_y=True)
    for cls in (OneStageClassifier, OneStageJointClassifier, OneStageGumbelClassifier):
        m = cls(max_depth=3, max_epochs=5, random_state=3)
        c = clone(m)
        assert c.get_params() == m.get_params()
        c.set_params(**m.get_params())
        p1 = m.fit(X, y).predict_proba(X)
        p2 = c.fit(X, y).predict_proba(X)
        np.testing.assert_array_equal(p1, p2)
    assert get_method("onestage", "regression") is OneStageRegressor
    assert get_method("onestage_joint", "classification") is OneStageJointClassifier
    with pytest.raises(ValueError, match="validation_fraction"):
        OneStageClassifier(validation_fraction=1.5).fit(X, y)
    with pytest.raises(ValueError, match="gamma_optimizer"):
        OneStageClassifier(gamma_optimizer="rmsprop").fit(X, y)
    assert OneStageClassifier(patience=None)._patience(10) == 15
    assert OneStageRegressor(patience=None)._patience(10) == 70


def test_auto_patience_counts_minibatch_steps():
    """patience="auto".

    AUTO_PATIENCE_STEPS steps in epochs of n_batches, never below the paper's.
    """
    from treebench.methods.onestage.estimator import AUTO_PATIENCE_STEPS, auto_patience

    assert AUTO_PATIENCE_STEPS == 1000
    assert auto_patience(24, 15) == 42  # cmc: 739 training rows in batches of 32
    assert auto_patience(104, 15) == 15  # satimage: 3326 rows, the paper's 15 epochs
    assert auto_patience(10, 70) == 100 and auto_patience(20, 70) == 70  # regression: at least 70
    assert OneStageClassifier()._patience(24) == 42 and OneStageRegressor()._patience(5) == 200
    assert OneStageClassifier(patience=7)._patience(24) == 7
    X, y = load_iris(return_X_y=True)  # 112 training rows: 4 batches of 32, patience 250 epochs
    m = OneStageClassifier(max_depth=2, max_epochs=3, random_state=0).fit(X, y)
    assert m.fit_info_["n_train_part"] == 112 and m.fit_info_["patience"] == 250
    with pytest.raises(ValueError, match="patience"):
        OneStageClassifier(patience="long").fit(X, y)


def test_bagging_and_adaboost_accept_it():
    from sklearn.ensemble import AdaBoostClassifier, BaggingClassifier

    X, y = load_iris(return_X_y=True)
    base = OneStageClassifier(max_depth=2, max_epochs=3, random_state=0)
    BaggingClassifier(base, n_estimators=2, random_state=0).fit(X, y).predict(X)
    AdaBoostClassifier(base, n_estimators=2, random_state=0).fit(X, y).predict(X)


def test_regression_gamma_step_prunes_a_useless_tree_early():
    """The regression gamma step prunes the whole tree on pure-noise targets within 6 epochs.

    The step is 0.1 on the standardised MSE; a 10x smaller step keeps every node. Classification's
    step is 1.0. (Why 0.1: docs/methods/onestage.md.)
    """
    assert OneStageRegressor()._gamma_step() == 0.1
    assert OneStageClassifier()._gamma_step() == 1.0
    rng = np.random.RandomState(0)
    X, y = rng.randn(400, 25), rng.randn(400)
    kw = dict(max_depth=6, max_epochs=6, patience=6, random_state=0)
    default = OneStageRegressor(**kw).fit(X, y)
    small = OneStageRegressor(gamma_learning_rate=0.01, **kw).fit(X, y)
    assert default.fit_info_["internal_kept_gamma"] == 0
    assert (small.gamma_ >= 0.5).all()


def test_pruned_subtree_and_one_sided_last_split_get_no_router_gradient():
    """Routers below a pruned node, or of a one-sided last split, get no gradient.

    The subtree below a pruned node is frozen while pruned; a one-sided split just above the leaves,
    whose empty child copies its parent's value (Eq. 17 + empty-node rule), has equal children and
    so a zero router gradient.
    """
    est, Xa, t, W, V, keep, D, rng = _setup("regression", D=3, n=60)
    keep[:] = True
    keep[1] = False  # node 1 pruned: its children 3, 4 are split nodes of a frozen subtree
    noise = rng.logistic(size=(len(t), 7))
    g = est._router_grad(Xa, t, np.ones(len(t)), noise, W, V, keep, 1.0, D)
    assert np.abs(g[:, [1, 3, 4]]).max() == 0.0
    assert np.abs(g[:, [0, 2, 5, 6]]).max() > 0
    keep[1] = True
    V[13] = V[14] = V[6]  # node 6 one-sided: the empty leaf copies the parent = the other leaf
    g = est._router_grad(Xa, t, np.ones(len(t)), noise, W, V, keep, 1.0, D)
    assert np.abs(g[:, 6]).max() == 0.0
    assert np.abs(g[:, 5]).max() > 0


@pytest.mark.parametrize("holdout", [True, False])
def test_joint_tree_uses_one_stage_parts_and_early_stops_on_held_out_rows(holdout):
    """Joint Tree holds rows out only with ``early_stopping_holdout``.

    With it, Joint Tree trains on One-Stage's training part only (same stratified split for the
    same seed) and its monitored loss is the relaxed model's loss on the held-out rows; without it
    every row trains and the monitored rows are the training rows.
    """
    from sklearn.model_selection import train_test_split
    from sklearn.utils import check_random_state

    X, y = load_iris(return_X_y=True)
    m = OneStageJointClassifier(
        max_depth=3, max_epochs=8, random_state=5, early_stopping_holdout=holdout
    ).fit(X, y)
    idx = np.arange(len(y))
    if holdout:
        tr, va = train_test_split(
            idx, test_size=0.25, random_state=check_random_state(5), stratify=y
        )
    else:
        tr, va = idx, idx
    assert m.fit_info_["n_train_part"] == len(tr)
    assert m.fit_info_["n_val_part"] == (len(va) if holdout else 0)
    Xa = np.hstack([(X - m.x_mean_) / m.x_scale_, np.ones((len(X), 1))]).astype(np.float32)
    Y = np.eye(3)[y]
    leaf = route_paths(Xa[tr], m.Wdiff_, 3, leaves_only=True)
    np.testing.assert_allclose(m.values_, node_values(leaf, Y[tr], np.ones(len(tr)), 3))
    w = np.ones(len(va))
    mon = m._relaxed_loss(Xa[va], y[va], w, m.W_, m.values_, m.gamma_, 3)
    assert mon == pytest.approx(m.fit_info_["best_monitored_loss"], rel=1e-9)
    # the held-out rows are the ones One-Stage validates on for the same seed
    if holdout:
        o = OneStageClassifier(max_depth=3, max_epochs=1, random_state=5).fit(X, y)
        o_leaf = route_paths(Xa[tr], o.Wdiff_, 3, leaves_only=True)
        o_vals = node_values(o_leaf, Y[tr], np.ones(len(tr)), 3)
        np.testing.assert_allclose(o.values_, o_vals)
    with pytest.raises(ValueError, match="validation_fraction"):
        OneStageJointClassifier(validation_fraction=0.0).fit(X, y)
    OneStageJointClassifier(
        validation_fraction=0.0, early_stopping_holdout=False, max_epochs=1
    ).fit(X, y)


def _one_sided(Xa, Wd, D):
    """Reached split nodes (level order) whose training rows all go to one side."""
    P = route_paths(Xa, Wd, D)
    cnt = np.bincount(P.ravel(), minlength=2 ** (D + 1) - 1)
    n_int = 2**D - 1
    reached = np.flatnonzero(cnt[:n_int] >= 2)
    return reached, [i for i in reached if cnt[2 * i + 1] == 0 or cnt[2 * i + 2] == 0]


def test_data_router_init_centres_every_reached_split():
    """``router_init='data'``.

    With the default init's directions (near-origin hyperplanes) many deep splits of a depth-6 tree
    are one-sided on shifted data; after centring each bias on the median of its node's rows, every
    split reached by two or more rows sends rows both ways, all 63 are reached, the directions are
    unchanged and each node's mean bias is kept.
    """
    from treebench.methods.onestage.core import center_router_biases

    rng = np.random.RandomState(0)
    n, d, D = 300, 5, 6
    X = rng.randn(n, d) @ rng.randn(d, d) + 0.5  # correlated, not centred at the origin
    Xa = np.hstack([X, np.ones((n, 1))]).astype(np.float32)
    W = rng.uniform(-0.4, 0.4, size=(d + 1, 2**D - 1, 2))
    Wd = (W[:, :, 0] - W[:, :, 1]).astype(np.float32)
    _, before = _one_sided(Xa, Wd, D)
    assert len(before) >= 10
    W2 = center_router_biases(W.copy(), Xa, D)
    np.testing.assert_array_equal(W2[:d], W[:d])
    np.testing.assert_allclose(W2[d].sum(axis=1), W[d].sum(axis=1))
    reached, after = _one_sided(Xa, (W2[:, :, 0] - W2[:, :, 1]).astype(np.float32), D)
    assert after == [] and len(reached) == 2**D - 1
    # each child gets half of its parent's rows (up to the median row)
    leaf = route_paths(Xa, (W2[:, :, 0] - W2[:, :, 1]).astype(np.float32), D, leaves_only=True)
    assert np.bincount(leaf - 63, minlength=64).max() <= 6


@pytest.mark.parametrize(
    "cls", [OneStageClassifier, OneStageJointClassifier, OneStageGumbelClassifier]
)
def test_router_init_applies_to_all_variants(cls):
    """The three variants share the router code.

    With a negligible router step the fitted routers are the initial ones, and with
    ``router_init='data'`` no reached split is one-sided on the training part (recovered as in
    ``fit``); the directions equal the default init's (same random draws).
    """
    from sklearn.model_selection import train_test_split
    from sklearn.utils import check_random_state

    X, y = load_iris(return_X_y=True)
    kw = dict(max_depth=4, max_epochs=1, learning_rate=1e-12, random_state=3)
    m = cls(router_init="data", **kw).fit(X, y)
    m0 = cls(router_init="default", **kw).fit(X, y)
    np.testing.assert_allclose(m.W_[:-1], m0.W_[:-1], atol=1e-9)
    tr, _ = train_test_split(
        np.arange(len(y)), test_size=0.25, random_state=check_random_state(3), stratify=y
    )
    Xa = np.hstack([(X - m.x_mean_) / m.x_scale_, np.ones((len(X), 1))]).astype(np.float32)
    _, after = _one_sided(Xa[tr], m.Wdiff_, 4)
    _, before = _one_sided(Xa[tr], m0.Wdiff_, 4)
    assert after == [] and len(before) > 0
    with pytest.raises(ValueError, match="router_init"):
        cls(router_init="median").fit(X, y)


@pytest.mark.parametrize("codes", [True, False])
def test_running_leaf_sums_equal_a_fresh_count_after_moves(codes):
    """step_rows='batch': moving rows between leaves gives the values of routing every row anew."""
    from treebench.methods.onestage.core import LeafSums

    rng = np.random.RandomState(2)
    D, n, c = 3, 200, 3
    y = rng.randint(0, c, n)
    Y, w = np.eye(c)[y], rng.rand(n) * 2
    leaf = rng.randint(7, 15, n)
    sums = LeafSums(Y, w, D, y if codes else None)
    sums.reset(leaf)
    for _ in range(20):  # minibatches of 16 rows move to random leaves
        b = rng.choice(n, 16, replace=False)
        leaf[b] = rng.randint(7, 15, 16)
        sums.move(b, leaf[b])
    np.testing.assert_allclose(sums.values(), node_values(leaf, Y, w, D, y), rtol=0, atol=1e-12)
    sums.move(np.arange(n), np.full(n, 7))  # every row in one leaf: the others empty, not residue
    assert (sums.cnt[1:] == 0).all()


@pytest.mark.parametrize("cls", [OneStageClassifier, OneStageJointClassifier])
def test_batch_step_rows_learns_and_leaves_the_default_paper_rule(cls):
    """step_rows='batch' (O(batch) steps) learns iris as well as the paper's rule (the default).

    Training accuracy over three seeds within 0.02 (measured: 0.918 vs 0.911, Joint 0.900 vs 0.898).
    """
    X, y = load_iris(return_X_y=True)
    assert cls().step_rows == "all"
    acc = {
        sr: np.mean(
            [
                cls(random_state=s, step_rows=sr, max_epochs=40).fit(X, y).score(X, y)
                for s in range(3)
            ]
        )
        for sr in ("all", "batch")
    }
    assert acc["batch"] > 0.85 and acc["batch"] >= acc["all"] - 0.02
    a, b = (cls(random_state=0, step_rows="batch", max_epochs=5).fit(X, y) for _ in range(2))
    np.testing.assert_array_equal(a.W_, b.W_)


def test_stop_nodes_equal_full_paths_then_stop_positions():
    """Prediction's kernel stops each row where route_paths + stop_positions stop it.

    It walks each row only through the kept splits it passes.
    """
    rng = np.random.RandomState(5)
    D, n, d = 6, 3000, 9
    Xa = np.hstack([rng.randn(n, d), np.ones((n, 1))]).astype(np.float32)
    Wd = rng.randn(d + 1, 2**D - 1).astype(np.float32)
    keep = rng.rand(2**D - 1) < 0.8
    keep[0] = True
    stop, level = stop_nodes(Xa[:, :d], np.zeros(d), np.ones(d), Wd, keep, D)
    paths = route_paths(Xa, Wd, D)
    s1, _ = stop_positions(keep[paths[:, :D]])
    assert (level == s1).all() and (stop == paths[np.arange(n), s1]).all()
    for m in (1, 7):  # rows walk four at a time, the rest one by one: the same stops
        s, lv = stop_nodes(Xa[:m, :d], np.zeros(d), np.ones(d), Wd, keep, D)
        assert (s == stop[:m]).all() and (lv == level[:m]).all()
    assert 0 < level.mean() < D
    # raw features: standardised inside as fit standardises them (float64, then float32)
    mu, sd = rng.randn(d), rng.rand(d) + 0.5
    X = Xa[:, :d].astype(np.float64) * sd + mu
    Xs = np.hstack([(X - mu) / sd, np.ones((n, 1))]).astype(np.float32)
    paths = route_paths(Xs, Wd, D)
    s1, _ = stop_positions(keep[paths[:, :D]])
    stop, level = stop_nodes(X, mu, sd, Wd, keep, D)
    assert (level == s1).all() and (stop == paths[np.arange(n), s1]).all()
    X32 = X.astype(np.float32)  # float32 rows, widened exactly as validate_data would
    Xs = np.hstack([(X32.astype(np.float64) - mu) / sd, np.ones((n, 1))]).astype(np.float32)
    paths = route_paths(Xs, Wd, D)
    s1, _ = stop_positions(keep[paths[:, :D]])
    stop, level = stop_nodes(X32, mu, sd, Wd, keep, D)
    assert (level == s1).all() and (stop == paths[np.arange(n), s1]).all()
