"""ReDT: soft-label CART equivalences, jackknife out-of-fold property, estimator contract."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_iris
from sklearn.ensemble import AdaBoostClassifier, BaggingClassifier
from sklearn.tree import DecisionTreeClassifier

from treebench.methods.base import get_method
from treebench.methods.redt import (
    ReDTClassifier,
    jackknife_soft_labels,
    pair_heldout_soft_labels,
)
from treebench.methods.redt.softcart import HAVE_NUMBA, best_split_numpy, build_tree

BACKENDS = ["numpy"] + (["numba"] if HAVE_NUMBA else [])


def _data(seed, n=300, d=3, K=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] + 0.7 * rng.normal(size=n) > 0).astype(int) + (X[:, -1] > 0.8)
    return X, np.minimum(y, K - 1)


def _gini_gain(Y, mask):
    """Brute-force weighted impurity decrease of one split (Eq. 2 with Gini on mean labels)."""

    def gini(Z):
        p = Z.mean(axis=0)
        return 1.0 - (p * p).sum()

    n = len(Y)
    return gini(Y) - mask.sum() / n * gini(Y[mask]) - (~mask).sum() / n * gini(Y[~mask])


# ----------------------------------------------------------------------------- alpha = 1 is CART


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(4))
def test_one_feature_equals_sklearn_cart_exactly(seed, backend):
    """With one feature there are no cross-feature ties: the trees must be identical."""
    rng = np.random.default_rng(seed)
    n = 500
    X = np.round(rng.normal(size=(n, 1)), 2).astype(np.float32)  # duplicates included
    y = ((X[:, 0] + 0.8 * rng.normal(size=n)) > 0).astype(int) + (rng.random(n) < 0.2)
    m = ReDTClassifier(
        alpha=1.0,
        pseudo_labels="mixed",
        backend=backend,
        teacher="rf",
        n_repeats=1,
        teacher_params={"n_estimators": 5},
        random_state=seed,
    ).fit(X, y)
    sk = DecisionTreeClassifier(min_samples_split=6, random_state=seed).fit(X, y)
    t, T = m.tree_, sk.tree_
    assert t.node_count == T.node_count
    np.testing.assert_array_equal(t.left, T.children_left)
    np.testing.assert_array_equal(t.right, T.children_right)
    internal = T.children_left >= 0
    np.testing.assert_array_equal(t.threshold[internal], T.threshold[internal])
    np.testing.assert_allclose(t.value, T.value[:, 0, :], atol=1e-12)
    Xt = rng.normal(size=(200, 1))
    np.testing.assert_array_equal(m.predict(Xt), sk.predict(Xt))
    np.testing.assert_allclose(m.predict_proba(Xt), sk.predict_proba(Xt), atol=1e-12)


def _compare(ours, T, X, y, node_o=0, node_s=0, idx=None, stats=None):
    """Walk both trees; where they choose different splits, it must be an exact tie in gain."""
    idx = np.arange(len(y)) if idx is None else idx
    Y = np.eye(int(y.max()) + 1)[y[idx]]
    assert ours.n_samples[node_o] == T.n_node_samples[node_s] == len(idx)
    lo, ls = ours.left[node_o], T.children_left[node_s]
    assert (lo < 0) == (ls < 0), "one tree splits where the other stops"
    if lo < 0:
        stats["same"] += 1
        return
    fo, fs = ours.feature[node_o], T.feature[node_s]
    if fo == fs and ours.threshold[node_o] == T.threshold[node_s]:
        stats["same"] += 1
        go = X[idx, fo].astype(np.float64) <= ours.threshold[node_o]
        _compare(ours, T, X, y, lo, ls, idx[go], stats)
        _compare(ours, T, X, y, ours.right[node_o], T.children_right[node_s], idx[~go], stats)
        return
    g_o = _gini_gain(Y, X[idx, fo].astype(np.float64) <= ours.threshold[node_o])
    g_s = _gini_gain(Y, X[idx, fs].astype(np.float64) <= T.threshold[node_s])
    assert g_o == pytest.approx(g_s, abs=1e-12), "different split with a different gain"
    stats["ties"] += 1


@pytest.mark.parametrize("seed", range(3))
def test_alpha_one_equals_sklearn_cart_up_to_feature_ties(seed):
    """Several features: identical wherever scikit-learn's random feature order cannot matter."""
    X, y = _data(seed, n=600, d=4)
    m = ReDTClassifier(
        alpha=1.0,
        pseudo_labels="mixed",
        teacher="rf",
        n_repeats=1,
        teacher_params={"n_estimators": 5},
        random_state=seed,
    ).fit(X, y)
    sk = DecisionTreeClassifier(min_samples_split=6, random_state=seed).fit(X, y)
    stats = {"same": 0, "ties": 0}
    _compare(m.tree_, sk.tree_, X, y, stats=stats)
    assert stats["same"] > 10 * max(stats["ties"], 1)


def test_soft_pseudo_labels_with_onehot_teacher_is_cart():
    """Eq. 4 purity on soft labels equal to the hard labels also reduces to CART (1 feature)."""
    X, y = _data(0, n=400, d=1)
    Y = np.eye(3)[y]
    t = build_tree(X, Y, y, k=5)
    sk = DecisionTreeClassifier(min_samples_split=6, random_state=0).fit(X, y)
    assert t.node_count == sk.tree_.node_count


# ----------------------------------------------------------------------------- split search


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_split_search_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, d, K = 40, 3, 4
    X = rng.integers(0, 6, size=(n, d)).astype(np.float32)  # many ties in feature values
    Y = rng.dirichlet(np.ones(K), size=n)
    f, thr, _ = best_split_numpy(X, Y)
    best, arg = -np.inf, None
    for j in range(d):
        vals = np.unique(X[:, j])
        for a, b in zip(vals[:-1], vals[1:], strict=True):
            t = a / 2.0 + b / 2.0
            g = _gini_gain(Y, X[:, j] <= t)
            if g > best + 1e-12:
                best, arg = g, (j, t)
    assert (f, thr) == (arg[0], pytest.approx(arg[1]))
    assert _gini_gain(Y, X[:, f] <= thr) == pytest.approx(best, abs=1e-12)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed")
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_numba_and_numpy_builders_agree(criterion):
    rng = np.random.default_rng(1)
    n, d, K = 400, 5, 3
    X = np.round(rng.normal(size=(n, d)), 1).astype(np.float32)
    S = rng.dirichlet(np.ones(K) * 0.5, size=n)
    y = rng.integers(0, K, size=n)
    Y = 0.3 * np.eye(K)[y] + 0.7 * S
    w = rng.uniform(0.5, 2.0, size=n)
    a = build_tree(X, Y, S.argmax(1), k=5, criterion=criterion, backend="numba", sample_weight=w)
    b = build_tree(X, Y, S.argmax(1), k=5, criterion=criterion, backend="numpy", sample_weight=w)
    c = build_tree(
        X,
        Y,
        S.argmax(1),
        k=5,
        criterion=criterion,
        backend="numba",
        sample_weight=w,
        presort=not (X.shape[0] * X.shape[1] <= 8_000_000),
    )  # the other numba path
    for other in (b, c):
        for name in ("feature", "threshold", "left", "right", "n_samples"):
            np.testing.assert_array_equal(getattr(a, name), getattr(other, name))
        np.testing.assert_allclose(a.value, other.value, atol=1e-12)


def test_stopping_rules():
    X, y = _data(3, n=300, d=2)
    rng = np.random.default_rng(0)
    S = rng.dirichlet(np.ones(3), size=len(y))
    Y = 0.5 * np.eye(3)[y] + 0.5 * S
    t = build_tree(X, Y, S.argmax(1), k=5)
    internal = t.left >= 0
    assert (t.n_samples[internal] > 5).all()  # split only nodes with more than k samples
    leaves = t.apply(X)
    np.testing.assert_allclose(t.value.sum(axis=1), 1.0)
    # leaf value = mean mixed label of its training samples (Eq. 6)
    for leaf in np.unique(leaves)[:10]:
        np.testing.assert_allclose(t.value[leaf], Y[leaves == leaf].mean(axis=0))
    # a node whose pseudo-labels agree is never split
    t2 = build_tree(X, Y, np.zeros(len(y), dtype=int), k=5)
    assert t2.node_count == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_pseudo_label_columns_stop_when_either_is_pure(backend):
    rng = np.random.default_rng(3)
    X, y = _data(3, n=300, d=3)
    S = rng.dirichlet(np.ones(3), size=len(y))
    Y = 0.5 * np.eye(3)[y] + 0.5 * S
    p1, p2 = S.argmax(1), y
    both = build_tree(X, Y, np.column_stack([p1, p2]), k=5, backend=backend)
    t1 = build_tree(X, Y, p1, k=5, backend=backend)
    assert both.node_count < t1.node_count
    # every internal node is impure in both columns
    leaf_of = both.apply(X)
    for i in np.flatnonzero(both.left >= 0):
        idx = np.flatnonzero(np.isin(leaf_of, _subtree(both, i)))
        assert len(np.unique(p1[idx])) > 1 and len(np.unique(p2[idx])) > 1
    # a constant column makes the root a leaf
    const = build_tree(X, Y, np.column_stack([p1, np.zeros_like(p2)]), k=5, backend=backend)
    assert const.node_count == 1


def _subtree(t, i):
    """Leaf indices below node ``i``."""
    out, stack = [], [i]
    while stack:
        j = stack.pop()
        if t.left[j] < 0:
            out.append(j)
        else:
            stack += [t.left[j], t.right[j]]
    return out


def test_soft_or_hard_pure_stop_keeps_predictions_with_fewer_nodes():
    X, y = _data(4, n=400, d=3)
    kw = {"teacher_params": {"n_estimators": 20}, "n_repeats": 1, "alpha": 0.5, "random_state": 0}
    lit = ReDTClassifier(pseudo_labels="soft", **kw).fit(X, y)
    both = ReDTClassifier(pseudo_labels="soft_or_hard", **kw).fit(X, y)
    np.testing.assert_array_equal(lit.soft_labels_, both.soft_labels_)
    assert both.n_nodes_ <= lit.n_nodes_


# ----------------------------------------------------------------------------- jackknife


class MemorisingTeacher(ClassifierMixin, BaseEstimator):
    """Predicts the stored label of a training sample, uniform probabilities for unseen samples."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        self.classes_ = np.unique(y)
        self.memory_ = {row.tobytes(): lab for row, lab in zip(np.asarray(X), y, strict=True)}
        return self

    def predict_proba(self, X):
        K = len(self.classes_)
        P = np.full((len(X), K), 1.0 / K)
        for i, row in enumerate(np.asarray(X)):
            lab = self.memory_.get(row.tobytes())
            if lab is not None:
                P[i] = 0.0
                P[i, np.searchsorted(self.classes_, lab)] = 1.0
        return P


def test_jackknife_soft_labels_are_out_of_fold():
    X, y = _data(5, n=120, d=3)
    X = X + np.arange(len(X))[:, None].astype(np.float32) * 1e-3  # unique rows
    S = jackknife_soft_labels(
        lambda s: MemorisingTeacher(s), X, y, 3, n_folds=5, n_repeats=3, random_state=0
    )
    np.testing.assert_allclose(S, 1.0 / 3)  # a teacher never saw the sample it labels
    # sanity: the same teacher fitted on all data is one-hot on its training samples
    full = MemorisingTeacher().fit(X, y).predict_proba(X)
    assert (full.max(axis=1) == 1.0).all()
    m = ReDTClassifier(teacher=MemorisingTeacher(), alpha=0.5, n_repeats=2, random_state=0).fit(
        X, y
    )
    np.testing.assert_allclose(m.soft_labels_, 1.0 / 3)


def test_jackknife_with_rf_teacher_deterministic_and_parallel():
    X, y = _data(6, n=150, d=3)
    kw = dict(
        teacher="rf", teacher_params={"n_estimators": 10}, n_repeats=2, alpha=0.3, random_state=3
    )
    a = ReDTClassifier(**kw, n_jobs=1).fit(X, y)
    b = ReDTClassifier(**kw, n_jobs=2).fit(X, y)
    np.testing.assert_allclose(a.soft_labels_, b.soft_labels_)
    np.testing.assert_allclose(a.soft_labels_.sum(axis=1), 1.0)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


# ----------------------------------------------------------------------------- estimator contract


def test_registered_and_predict_proba_follows_classes():
    assert get_method("redt", "classification") is ReDTClassifier
    X, y = load_iris(return_X_y=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    m = ReDTClassifier(teacher_params={"n_estimators": 10}, n_repeats=1, random_state=0)
    m.fit(X, labels)
    P = m.predict_proba(X)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert list(m.classes_) == ["setosa", "versicolor", "virginica"]
    np.testing.assert_array_equal(m.classes_[P.argmax(axis=1)], m.predict(X))
    assert m.score(X, labels) > 0.9
    info = m.fit_info_
    assert 0.0 <= info["alpha"] <= 1.0 and info["n_nodes"] == 2 * info["n_rules"] - 1
    rep = m.size_report(X)
    assert (
        rep["n_leaves"] == info["n_rules"] and rep["n_splits"] == info["n_nodes"] - info["n_rules"]
    )


def test_clone_bagging_adaboost():
    X, y = load_iris(return_X_y=True)
    m = ReDTClassifier(
        teacher="gbdt",
        teacher_params={"n_estimators": 5},
        n_folds=3,
        n_repeats=1,
        alpha=0.2,
        random_state=0,
    )
    c = clone(m)
    assert c.get_params() == m.get_params()
    c.set_params(alpha=0.4)
    assert c.alpha == 0.4 and m.alpha == 0.2
    bag = BaggingClassifier(m, n_estimators=3, random_state=0).fit(X, y)
    assert bag.score(X, y) > 0.9
    ada = AdaBoostClassifier(m, n_estimators=2, random_state=0).fit(X, y)
    assert ada.predict_proba(X).shape == (len(y), 3)


@pytest.mark.parametrize(
    "bad",
    [
        {"alpha": 1.5},
        {"alpha": "best"},
        {"teacher": "svm"},
        {"k": 0},
        {"criterion": "mse"},
        {"pseudo_labels": "x"},
        {"n_folds": 1},
        {"alpha_selection": "test"},
        {"cv_soft_labels": "x"},
    ],
)
def test_invalid_params_raise_naming_the_parameter(bad):
    X, y = load_iris(return_X_y=True)
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        ReDTClassifier(**bad).fit(X, y)


def test_alpha_auto_picks_from_grid_and_teacher_helps():
    rng = np.random.default_rng(0)
    n = 600
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + 1.0 * rng.normal(size=n) > 0).astype(int)  # noisy labels
    m = ReDTClassifier(
        teacher_params={"n_estimators": 30}, n_repeats=1, alpha_grid=[0.0, 0.5, 1.0], random_state=0
    ).fit(X, y)
    assert m.alpha_ in (0.0, 0.5, 1.0)
    hard = ReDTClassifier(
        alpha=1.0, teacher_params={"n_estimators": 30}, n_repeats=1, random_state=0
    ).fit(X, y)
    soft = ReDTClassifier(
        alpha=0.0, teacher_params={"n_estimators": 30}, n_repeats=1, random_state=0
    ).fit(X, y)
    assert soft.n_nodes_ < hard.n_nodes_  # soft labels give smaller trees (the paper's finding)


@pytest.mark.slow
def test_mlp_teacher_temperature_soft_labels():
    pytest.importorskip("torch")
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    m = ReDTClassifier(
        teacher="mlp", teacher_params={"epochs": 3}, alpha=0.5, n_jobs=1, random_state=0
    ).fit(X, y)
    S = m.soft_labels_
    np.testing.assert_allclose(S.sum(axis=1), 1.0)
    assert S.max(axis=1).mean() < 0.9  # T = 4 softens the teacher's outputs
    assert m.fit_info_["teacher_oof_accuracy"] > 0.8


@pytest.mark.slow
def test_vgg11_teacher_pads_to_32_and_draws_dropout_from_its_own_generator():
    """VGG-11 (configuration A) on 28 x 28 images.

    Padded with a raw 0 pixel's value to 32 x 32, so its five pools end at 1 x 1 x 512; dropout
    masks come from the teacher's seed (same seed, same net; the global torch generator is neither
    read nor moved); the fitted teacher pickles.
    """
    torch = pytest.importorskip("torch")
    import pickle

    from treebench.methods.redt.estimator import TorchTeacher

    rng = np.random.default_rng(0)
    X = rng.random((48, 784), dtype=np.float32)
    X[:, :28] = 0.0  # the first image row: background
    y = np.arange(48) % 3
    before = torch.get_rng_state()
    a = TorchTeacher(arch="vgg11", epochs=1, batch_size=16, random_state=3).fit(X, y)
    b = TorchTeacher(arch="vgg11", epochs=1, batch_size=16, random_state=3).fit(X, y)
    assert torch.equal(torch.get_rng_state(), before)
    convs = [m for m in a.net_ if isinstance(m, torch.nn.Conv2d)]
    linears = [m for m in a.net_ if isinstance(m, torch.nn.Linear)]
    assert [c.out_channels for c in convs] == [64, 128, 256, 256, 512, 512, 512, 512]
    assert [(m.in_features, m.out_features) for m in linears] == [
        (512, 4096),
        (4096, 4096),
        (4096, 3),
    ]
    padded = a.net_[:2](torch.from_numpy((X[:1] - a.mean_) / a.std_))
    assert padded.shape == (1, 1, 32, 32)
    np.testing.assert_allclose(padded[0, 0, 0].numpy(), -a.mean_ / a.std_, rtol=1e-6)  # pad = raw 0
    P = a.predict_proba(X)
    np.testing.assert_array_equal(P, b.predict_proba(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)).predict_proba(X), P)
    c = TorchTeacher(arch="vgg11", epochs=1, batch_size=16, random_state=4).fit(X, y)
    assert not np.array_equal(c.predict_proba(X), P)
    with pytest.raises(ValueError, match="vgg11 needs images of at most 32 x 32"):
        TorchTeacher(arch="vgg11", image_shape=(40, 40), epochs=1).fit(
            X[:, :1600].repeat(3, 1)[:, :1600], y
        )


def test_compiled_apply_equals_numpy_levels():
    X, y = _data(3, n=400, d=4)
    S = np.random.default_rng(1).dirichlet(np.ones(3), size=len(y))
    t = build_tree(X, 0.5 * np.eye(3)[y] + 0.5 * S, S.argmax(1), k=2)
    Xt = np.random.default_rng(2).normal(size=(1000, 4)).astype(np.float32)
    Xt[:10] = X[:10, :4]  # rows exactly on training thresholds
    np.testing.assert_array_equal(t.apply(Xt), t.apply_numpy(Xt))


# -------------------------------------------------------------------- alpha by cross-validation


class FoldHistogramTeacher(ClassifierMixin, BaseEstimator):
    """Predicts, for every row, the share of each fold id (column 0 of X) in its training data."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y, sample_weight=None):
        self.classes_ = np.unique(y)
        ids = np.asarray(X)[:, 0].astype(int)
        self.hist_ = np.bincount(ids)[self.classes_] / len(ids)  # y = fold id here
        return self

    def predict_proba(self, X):
        return np.tile(self.hist_, (len(X), 1))


def test_pair_heldout_soft_labels_never_see_the_validation_fold():
    M, n = 5, 100
    folds = np.arange(n) % M
    X = np.column_stack([folds, np.arange(n)]).astype(np.float32)
    y = folds.copy()  # K = M classes so the teacher's histogram is a probability vector
    Scv = pair_heldout_soft_labels(lambda s: FoldHistogramTeacher(s), X, y, M, folds, 0)
    assert Scv.shape == (M, n, M)
    for v in range(M):
        np.testing.assert_array_equal(Scv[v, folds == v], 0.0)  # no soft label on the val fold
        rows = np.flatnonzero(folds != v)
        P = Scv[v, rows]
        np.testing.assert_array_equal(P[:, v], 0.0)  # the teacher never trained on fold v
        np.testing.assert_array_equal(
            P[np.arange(len(rows)), folds[rows]], 0.0
        )  # nor on row's fold
        np.testing.assert_allclose(P.sum(axis=1), 1.0)
        np.testing.assert_allclose(P[P > 0], 1.0 / (M - 2))


def test_jackknife_return_folds_are_the_first_repetition():
    X, y = _data(5, n=120, d=3)
    X = X + np.arange(len(X))[:, None].astype(np.float32) * 1e-3
    S, folds = jackknife_soft_labels(
        lambda s: MemorisingTeacher(s),
        X,
        y,
        3,
        n_folds=4,
        n_repeats=2,
        random_state=0,
        return_folds=True,
    )
    np.testing.assert_allclose(S, 1.0 / 3)
    assert sorted(np.bincount(folds)) == [30, 30, 30, 30]
    S1 = jackknife_soft_labels(
        lambda s: MemorisingTeacher(s), X, y, 3, n_folds=4, n_repeats=2, random_state=0
    )
    np.testing.assert_array_equal(S, S1)  # returning the folds does not change the soft labels


@pytest.mark.parametrize("cv_soft_labels", ["heldout", "shared"])
def test_alpha_cv_scores_every_alpha_and_refits(cv_soft_labels):
    X, y = _data(7, n=300, d=3)
    grid = [0.0, 0.3, 1.0]
    m = ReDTClassifier(
        teacher_params={"n_estimators": 10},
        n_repeats=1,
        alpha_grid=grid,
        alpha_selection="cv",
        cv_soft_labels=cv_soft_labels,
        random_state=0,
    ).fit(X, y)
    assert set(m.alpha_scores_) == set(grid) and m.alpha_ in grid
    best = max(m.alpha_scores_.values())
    assert m.alpha_scores_[m.alpha_] == best == m.fit_info_["alpha_val_accuracy"]
    assert m.alpha_ == min(a for a in grid if m.alpha_scores_[a] == best)  # first best
    fixed = ReDTClassifier(
        teacher_params={"n_estimators": 10}, n_repeats=1, alpha=m.alpha_, random_state=0
    ).fit(X, y)  # same seed -> same final soft labels; the final tree uses all training data
    np.testing.assert_array_equal(m.soft_labels_, fixed.soft_labels_)
    assert m.n_nodes_ == fixed.n_nodes_


def test_alpha_cv_with_uninformative_teacher_never_picks_pure_soft_labels():
    """Out-of-fold soft labels of a memorising teacher are uniform: alpha = 0 is a one-leaf tree."""
    X, y = _data(2, n=240, d=3)
    X = X + np.arange(len(X))[:, None].astype(np.float32) * 1e-4
    m = ReDTClassifier(
        teacher=MemorisingTeacher(),
        n_repeats=1,
        alpha_selection="cv",
        pseudo_labels="mixed",
        random_state=0,
    ).fit(X, y)
    assert m.alpha_scores_[0.0] < max(m.alpha_scores_.values())
    assert m.alpha_ > 0.0


@pytest.mark.slow
def test_alpha_cv_heldout_with_full_dnn_teacher():
    pytest.importorskip("torch")
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    m = ReDTClassifier(
        teacher="mlp",
        teacher_params={"epochs": 1},
        alpha_grid=[0.2, 1.0],
        n_folds=3,
        n_jobs=1,
        random_state=0,
    ).fit(X[:600], y[:600])
    assert set(m.alpha_scores_) == {0.2, 1.0}


# ----------------------------------------------------------------------------- experiment rows


@pytest.mark.parametrize("experiment", ["redt_table2_3_5", "redt_alpha"])
@pytest.mark.parametrize("profile", ["full", "reduced"])
def test_experiment_rows_compose_with_the_inferred_protocol(experiment, profile):
    """Every dataset row composes.

    The crx/german/cmc/landcover/connect4 rows run on a 75/25 stratified holdout, the categorical
    sets of them ordinal-coded (the split/encoding inferred from Tables I and III).
    """
    from treebench.api import compose_config

    cfg = compose_config([f"experiment={experiment}"], return_hydra_config=True)
    plan = cfg.hydra.sweeper if profile == "full" else cfg.hydra.sweeper.reduced
    rows = plan.rows.datasets if "datasets" in plan.rows else plan.rows
    assert rows
    seen = set()
    for row in rows:
        job = compose_config(row.split())
        seen.add(job.dataset.name)
        if job.dataset.name in ("crx", "german", "cmc", "landcover", "connect4"):
            assert job.split._target_.endswith("Holdout") and job.split.test_size == 0.25
            if job.dataset.name in ("crx", "german", "connect4"):
                assert job.dataset.preprocess.categorical == "ordinal"
    assert {"crx", "german", "cmc", "landcover"} <= seen


# ----------------------------------------------------------------------------- soft-label memo


def _counting_jackknife(monkeypatch):
    """Count the jackknife computations behind ReDT fits (memo hits skip them)."""
    import treebench.methods.redt.estimator as est

    calls = []
    real = est.jackknife_soft_labels

    def counted(*args, **kwargs):
        calls.append(len(args[2]))
        return real(*args, **kwargs)

    monkeypatch.setattr(est, "jackknife_soft_labels", counted)
    monkeypatch.setattr(est, "_MEMO", est.OrderedDict())
    return est, calls


def _search(X, y):
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    m = ReDTClassifier(teacher_params={"n_estimators": 10}, n_repeats=2, random_state=3)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    return GridSearchCV(m, {"alpha": [0.0, 0.4, 1.0]}, cv=cv).fit(X, y)


def test_search_over_alpha_fits_each_teacher_once_with_identical_results(monkeypatch):
    """Candidates share their fold's soft labels: 3 folds + refit, not 3 x 3 + 1, same scores."""
    X, y = _data(11, n=240, d=4)
    est, calls = _counting_jackknife(monkeypatch)
    memo = _search(X, y)
    assert len(calls) == 3 + 1
    monkeypatch.setattr(est, "_MEMO", est.OrderedDict())
    monkeypatch.setattr(est, "_MEMO_MAX_ENTRIES", 0)  # every result evicted at once: no hits
    calls.clear()
    plain = _search(X, y)
    assert len(calls) == 3 * 3 + 1
    np.testing.assert_array_equal(
        memo.cv_results_["mean_test_score"], plain.cv_results_["mean_test_score"]
    )
    np.testing.assert_array_equal(
        memo.best_estimator_.soft_labels_, plain.best_estimator_.soft_labels_
    )
    assert memo.best_estimator_.n_nodes_ == plain.best_estimator_.n_nodes_
    assert not plain.best_estimator_.fit_info_["soft_labels_cached"]


def test_memo_hit_leaves_the_generator_where_the_computation_would(monkeypatch):
    """alpha='auto' (holdout) draws its split after the soft labels.

    A hit must give the same split.
    """
    X, y = _data(5, n=240, d=4)
    est, calls = _counting_jackknife(monkeypatch)
    kw = dict(
        teacher_params={"n_estimators": 10},
        n_repeats=1,
        alpha_selection="holdout",
        alpha_grid=[0.0, 0.2, 0.5, 1.0],
        random_state=1,
    )
    first = ReDTClassifier(**kw).fit(X, y)
    second = ReDTClassifier(**kw).fit(X, y)
    assert len(calls) == 1 and second.fit_info_["soft_labels_cached"]
    assert first.fit_info_ | {
        "soft_labels_cached": True,
        "teacher_seconds": 0,
        "tree_seconds": 0,
    } == (second.fit_info_ | {"teacher_seconds": 0, "tree_seconds": 0})
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))
    other = ReDTClassifier(**kw | {"random_state": 2}).fit(X, y)  # another seed is another key
    assert len(calls) == 2 and not other.fit_info_["soft_labels_cached"]
    ref = first.soft_labels_.copy()
    first.soft_labels_[:] = 0  # the callers' arrays are copies: the memo keeps its own
    second.soft_labels_[:] = 0
    third = ReDTClassifier(**kw).fit(X, y)
    np.testing.assert_array_equal(ref, third.soft_labels_)


def test_a_sweep_with_seeds_innermost_still_hits(monkeypatch):
    """A sweep over alpha x seed, every seed at one alpha before the next, reuses soft labels.

    Each seed's soft labels are reused: the memo holds more entries than a sweep has seeds.
    """
    X, y = _data(6, n=150, d=3)
    est, calls = _counting_jackknife(monkeypatch)
    for alpha in (0.0, 0.5):
        for seed in range(12):
            ReDTClassifier(
                teacher_params={"n_estimators": 5}, n_repeats=1, alpha=alpha, random_state=seed
            ).fit(X, y)
    assert len(calls) == 12
