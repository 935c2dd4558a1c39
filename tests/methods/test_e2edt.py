"""Tests of E2EDT / E2EDF (treebench.methods.e2edt and its torch core)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_digits, load_iris  # noqa: E402

from treebench.methods.e2edt import (  # noqa: E402
    E2EDFClassifier,
    E2EDTClassifier,
    core,  # noqa: E402
)

ROOT = Path(__file__).resolve().parents[2]
torch.set_num_threads(1)


# ----------------------------------------------------------------------------- helpers


def random_structure(rng, n_trees=1, max_depth=4, p_split=0.7):
    """Return a random forest topology (unbalanced), nodes created parent-before-child."""
    tree, depth, split, left, right = [], [], [], [], []

    def add(t, d):
        tree.append(t)
        depth.append(d)
        split.append(-1)
        left.append(-1)
        right.append(-1)
        return len(tree) - 1

    frontier = [add(t, 0) for t in range(n_trees)]
    n_split = 0
    while frontier:
        nxt = []
        for n in frontier:
            if depth[n] < max_depth and (depth[n] == 0 or rng.random() < p_split):
                split[n] = n_split
                n_split += 1
                left[n] = add(tree[n], depth[n] + 1)
                right[n] = add(tree[n], depth[n] + 1)
                nxt += [left[n], right[n]]
        frontier = nxt
    # shuffle the split numbering so the canonical renumbering is exercised
    perm = rng.permutation(n_split)
    split = [perm[s] if s >= 0 else -1 for s in split]
    return core.Structure(tree, depth, split, left, right)


def recursive_mu(struct, W, b, gamma, x, hard_root=False):
    """Per-node recursion of the reference: mu_leaf = product of clamped gates on the path."""
    mu = np.zeros(struct.n_leaves)

    def rec(node, prob, depth):
        s = struct.split[node]
        if s < 0:
            mu[struct.leaf[node]] = prob
            return
        g = 1 / (1 + math.exp(-gamma[s] * (W[s] @ x + b[s])))
        g = min(max(g, 1e-5), 1 - 1e-5)
        if hard_root and depth == 0:
            g = float(round(g))
        rec(struct.right[node], prob * g, depth + 1)
        rec(struct.left[node], prob * (1 - g), depth + 1)

    for r in struct.roots:
        rec(r, 1.0, 0)
    return mu


def recursive_leaf(struct, W, b, x, tree):
    node = struct.roots[tree]
    while struct.split[node] >= 0:
        s = struct.split[node]
        node = struct.right[node] if W[s] @ x + b[s] > 0 else struct.left[node]
    return struct.leaf[node]


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    return X.astype(np.float32), y


@pytest.fixture(scope="module")
def fitted_tree(iris):
    X, y = iris
    return E2EDTClassifier(
        max_depth=3, epochs=6, batch_size=64, random_state=0, n_jobs=1, keep_greedy=True
    ).fit(X, y)


# ----------------------------------------------------------------------------- path probabilities


@pytest.mark.parametrize("n_trees", [1, 3])
def test_vectorised_path_probabilities_equal_recursion(n_trees):
    rng = np.random.default_rng(0)
    struct, _ = random_structure(rng, n_trees=n_trees, max_depth=5).canonical()
    S, p = struct.n_splits, 4
    W = rng.normal(size=(S, p)).astype(np.float32)
    b = rng.normal(size=S).astype(np.float32)
    gamma = rng.uniform(0.5, 6, size=S).astype(np.float32)
    X = rng.normal(size=(7, p)).astype(np.float32)
    bank = core.LinearBank(torch.from_numpy(W), torch.from_numpy(b))
    FzT = bank.f_allT(torch.from_numpy(X)) * torch.from_numpy(gamma)[:, None]
    lmu = core.leaf_logprob(FzT, struct).T.numpy()
    anc, dirn = struct.tables()
    lmu_anc = core.leaf_logprob_anc(FzT, anc, dirn).T.numpy()
    for i, x in enumerate(X):
        ref = recursive_mu(struct, W, b, gamma, x)
        np.testing.assert_allclose(np.exp(lmu[i]), ref, rtol=1e-4, atol=1e-7)
        np.testing.assert_allclose(np.exp(lmu_anc[i]), ref, rtol=1e-4, atol=1e-7)
        # every tree's path probabilities sum to ~1
        sums = np.bincount(struct.leaf_tree, weights=ref, minlength=n_trees)
        np.testing.assert_allclose(sums, 1.0, atol=1e-3)
        # root-only-hard (pre-2022 reference evaluation)
        ref_h = recursive_mu(struct, W, b, gamma, x, hard_root=True)
        lmu_h = core.leaf_logprob(FzT[:, i : i + 1], struct, hard_root=True)[:, 0].exp().numpy()
        np.testing.assert_allclose(lmu_h, ref_h, rtol=1e-4, atol=1e-7)


def test_canonical_levels_are_contiguous():
    rng = np.random.default_rng(1)
    struct, perm = random_structure(rng, n_trees=2, max_depth=4).canonical()
    assert sorted(perm.tolist()) == list(range(struct.n_splits))
    nxt = 0
    for _inner, sids, _leaf in struct.levels:
        assert sids.tolist() == list(range(nxt, nxt + len(sids)))
        nxt += len(sids)


# ------------------------------------------------------------------- deterministic inference


def test_deterministic_predict_is_hard_routing(fitted_tree, iris):
    X, _ = iris
    est = fitted_tree
    W, b = (t.numpy() for t in est.bank_.params())
    leaves = est.apply(X)[:, 0]
    ref = np.array([recursive_leaf(est.struct_, W, b, x, 0) for x in X])
    np.testing.assert_array_equal(leaves, ref)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba, est.pi_.numpy()[ref], rtol=1e-6)
    # one path per sample: split evaluations = depth of the leaf reached
    rep = est.size_report(X)
    assert rep["split_evals"] == pytest.approx(est.struct_.leaf_depth[ref].mean())
    assert rep["n_leaves"] == rep["n_splits"] + 1


def test_infinite_steepness_soft_equals_deterministic(fitted_tree, iris):
    X, _ = iris
    est = clone(fitted_tree).set_params(inference="probabilistic")
    for a in ("bank_", "struct_", "pi_", "classes_", "n_features_in_", "scale_mean_", "scale_sd_"):
        setattr(est, a, getattr(fitted_tree, a))
    est.gamma_ = fitted_tree.gamma_ * 1e6
    soft = est.predict_proba(X)
    hard = est.predict_proba(X, inference="deterministic")
    np.testing.assert_allclose(soft, hard, atol=1e-3)


# ----------------------------------------------------------------------------- EM updates


def test_leaf_closed_form_update_and_annealing():
    rng = np.random.default_rng(2)
    struct, _ = random_structure(rng, n_trees=2, max_depth=3).canonical()
    S, p, K, N = struct.n_splits, 3, 3, 40
    W = rng.normal(size=(S, p)).astype(np.float32)
    b = rng.normal(size=S).astype(np.float32)
    gamma = np.full(S, 1.5, dtype=np.float32)
    pi = rng.dirichlet(np.ones(K), size=struct.n_leaves).astype(np.float32)
    X = rng.normal(size=(N, p)).astype(np.float32)
    y = rng.integers(0, K, size=N)
    sw = rng.uniform(0.5, 2, size=N).astype(np.float32)
    # expected leaves from one E-step: h_nl = pi_l[y_n] mu_l(x_n) / sum over the tree's leaves
    mu = np.stack([recursive_mu(struct, W, b, gamma, x) for x in X])
    h = pi[:, y].T * mu
    for t in range(2):
        m = struct.leaf_tree == t
        h[:, m] /= h[:, m].sum(1, keepdims=True)
    cnt = np.stack([(sw[:, None] * h * (y[:, None] == k)).sum(0) for k in range(K)], axis=1)
    expected = cnt / cnt.sum(1, keepdims=True)
    for topk in (None, struct.n_leaves):  # dense and sparse (top-k = all) storage of h
        bank = core.LinearBank(torch.from_numpy(W), torch.from_numpy(b))
        bank2, g2, pi2, _ = core.finetune(
            bank,
            struct,
            torch.from_numpy(gamma),
            torch.from_numpy(pi),
            torch.from_numpy(X),
            torch.from_numpy(y),
            torch.from_numpy(sw),
            K,
            epochs=1,
            dgamma=0.25,
            batch_size=16,
            gen=torch.Generator().manual_seed(0),
            topk=topk,
        )
        np.testing.assert_allclose(pi2.numpy(), expected, rtol=1e-4, atol=1e-6)
        # first epoch is leaves-only: split parameters untouched; gamma annealed once
        np.testing.assert_array_equal(bank2.params()[0].numpy(), W)
        np.testing.assert_allclose(g2.numpy(), gamma + 0.25)


def test_steepness_carried_from_greedy_into_finetune(iris):
    X, y = iris
    e = E2EDTClassifier(
        max_depth=2,
        epochs=4,
        finetune_epochs=3,
        steepness_inc=0.2,
        batch_size=64,
        random_state=0,
        n_jobs=1,
        keep_greedy=True,
    ).fit(X, y)
    np.testing.assert_allclose(e.greedy_[2].numpy(), 1 + 4 * 0.2, rtol=1e-6)
    np.testing.assert_allclose(e.gamma_.numpy(), 1 + (4 + 3) * 0.2, rtol=1e-6)
    e0 = clone(e).set_params(finetune_epochs=0).fit(X, y)
    np.testing.assert_allclose(e0.gamma_.numpy(), 1 + 4 * 0.2, rtol=1e-6)
    assert e0.fit_info_["finetune_epochs"] == 0
    # the forest's finetune defaults to 3 x the greedy epochs
    f = E2EDFClassifier(
        n_estimators=2,
        max_depth=2,
        epochs=2,
        steepness_inc=0.1,
        batch_size=64,
        random_state=0,
        n_jobs=1,
    ).fit(X, y)
    assert f.fit_info_["finetune_epochs"] == 6
    np.testing.assert_allclose(f.gamma_.numpy(), 1 + (2 + 6) * 0.1, rtol=1e-5)


def test_stacked_adam_matches_torch_adam_and_skips_inactive():
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(3, 5, generator=g)
    grads = [torch.randn(3, 5, generator=g) for _ in range(4)]
    w_ref = w0.clone().requires_grad_(True)
    opt_ref = torch.optim.Adam([w_ref], lr=1e-2, weight_decay=0.1)
    w = w0.clone().requires_grad_(True)
    opt = core.StackedAdam([w], lr=1e-2, weight_decay=0.1)
    for gr in grads:
        w_ref.grad = gr.clone()
        opt_ref.step()
        w.grad = gr.clone()
        opt.step()
    torch.testing.assert_close(w.detach(), w_ref.detach())
    # only active rows move, with their own step counts
    w2 = w0.clone().requires_grad_(True)
    opt2 = core.StackedAdam([w2], lr=1e-2)
    w2.grad = grads[0].clone()
    opt2.step(torch.tensor([1]))
    torch.testing.assert_close(w2.detach()[[0, 2]], w0[[0, 2]])
    assert opt2.t.tolist() == [0, 1, 0]


@pytest.mark.parametrize("kernels", [True, False])
def test_stumps_trained_together_equal_stumps_trained_alone(monkeypatch, kernels):
    """A level's stumps trained side by side end where each stump trained alone ends.

    With unequal batch counts and partial last batches; alone means from the same init and the
    same minibatch order.
    """
    monkeypatch.setattr(core, "KERNELS_ENABLED", kernels)
    g = torch.Generator().manual_seed(0)
    sizes = [230, 70, 9]  # 8, 3 and 1 batches of 32 rows per epoch
    X = torch.randn(sum(sizes), 5, generator=g)
    y = torch.randint(0, 3, (sum(sizes),), generator=g)
    sw = torch.ones(len(y))
    n_idx = torch.randperm(len(y), generator=g)
    s_idx = torch.repeat_interleave(torch.arange(3), torch.tensor(sizes))
    bank = core.LinearBank.init(3, 5, g)
    rand, keys = torch.rand, []

    def recording(*a, **kw):  # the per-epoch shuffle keys of the joint run
        out = rand(*a, **kw)
        keys.append(out)
        return out

    def train(bk, rows, stumps, feed):
        monkeypatch.setattr(torch, "rand", feed)
        out = core.train_stumps(bk, X, y, sw, rows, stumps, 3, 4, 1.0, 0.1, 32, torch.Generator())
        monkeypatch.setattr(torch, "rand", rand)
        return out

    joint = train(bank.select([0, 1, 2]), n_idx, s_idx, recording)
    assert len(keys) == 3  # no split step in the first epoch
    for j in range(3):
        m = s_idx == j
        own = iter([k[m] for k in keys])
        alone = train(bank.select([j]), n_idx[m], s_idx[m] * 0, lambda *a, it=own, **kw: next(it))
        torch.testing.assert_close(alone[0].w[0], joint[0].w[j], rtol=0, atol=1e-6)
        torch.testing.assert_close(alone[0].b[0], joint[0].b[j], rtol=0, atol=1e-6)
        for a, b in zip(alone[1:], joint[1:], strict=True):
            torch.testing.assert_close(a[0], b[j], rtol=0, atol=1e-6)
        assert not torch.equal(joint[0].w[j], bank.w[j])


def test_greedy_stumps_split_their_own_subsets(iris):
    X, y = iris
    e = E2EDTClassifier(
        max_depth=3, epochs=8, finetune_epochs=0, batch_size=32, random_state=1, n_jobs=1
    ).fit(X, y)
    leaves = e.apply(X)[:, 0]
    # every leaf of the greedy tree receives training data (a split sending all one way is refused)
    assert set(leaves.tolist()) == set(range(e.struct_.n_leaves))
    assert e.fit_info_["greedy_splits"] == e.struct_.n_splits >= 3
    assert e.score(X, y) > 0.8


def test_best_first_growth_respects_max_leaves():
    X, y = load_digits(return_X_y=True)
    X = (X / 16).astype(np.float32)
    e = E2EDTClassifier(
        max_depth=None, max_leaves=6, epochs=3, finetune_epochs=1, random_state=0, n_jobs=1
    ).fit(X[:600], y[:600])
    assert e.struct_.n_leaves == 6
    assert e.size_report(X[:50])["n_leaves"] == 6


def test_weighted_best_first_gain_is_cart_information_gain():
    """gain='weighted'.

    Node share of the weighted samples x entropy drop of the hard-routed class frequencies; a large
    impure node beats a small one with the same class mix.
    """
    y = torch.tensor([0, 0, 1, 1, 2, 2, 0, 1, 0, 0])
    sw = torch.tensor([1.0, 1, 1, 1, 1, 1, 2, 1, 1, 1])
    g = core.Grower(None, torch.zeros(10, 2), y, sw, 3, max_leaves=4, gain="weighted")

    def ent(c):
        p = np.asarray(c, float) / sum(c)
        p = p[p > 0]
        return -(p * np.log(p)).sum()

    rows, rl, rr = torch.arange(8), torch.tensor([0, 1, 6]), torch.tensor([2, 3, 4, 5, 7])
    # weighted class counts: node (4, 3, 2), left (4, 0, 0), right (0, 3, 2); total weight 11
    want = 9 / 11 * (ent([4, 3, 2]) - (4 * ent([4]) + 5 * ent([3, 2])) / 9)
    assert g._weighted_gain(rows, rl, rr) == pytest.approx(want, rel=1e-6)
    small = g._weighted_gain(torch.tensor([1, 2]), torch.tensor([1]), torch.tensor([2]))
    big = g._weighted_gain(torch.tensor([0, 1, 2, 3]), torch.tensor([0, 1]), torch.tensor([2, 3]))
    assert big > small > 0
    with pytest.raises(ValueError, match="gain"):
        core.Grower(None, torch.zeros(10, 2), y, sw, 3, max_leaves=4, gain="size")


def test_best_first_gain_modes_grow_max_leaves():
    X, y = load_digits(return_X_y=True)
    X = (X / 16).astype(np.float32)
    kw = dict(max_depth=None, max_leaves=5, epochs=2, finetune_epochs=0, random_state=0, n_jobs=1)
    for gain in ("reference", "weighted"):
        e = E2EDTClassifier(best_first_gain=gain, **kw).fit(X[:500], y[:500])
        assert e.struct_.n_leaves == 5
    with pytest.raises(ValueError, match="best_first_gain"):
        E2EDTClassifier(best_first_gain="gini", **kw).fit(X[:500], y[:500])


# ----------------------------------------------------------------------------- forest and CNN


def test_forest_feature_subsets_and_patches():
    X, y = load_digits(return_X_y=True)
    X = (X / 16).astype(np.float32)[:400]
    y = y[:400]
    f = E2EDFClassifier(
        n_estimators=3,
        max_depth=3,
        max_features=5,
        epochs=2,
        finetune_epochs=1,
        random_state=0,
        n_jobs=1,
    ).fit(X, y)
    feat = f.bank_.feat.numpy()
    assert feat.shape == (f.struct_.n_splits, 5)
    assert all(len(set(r)) == 5 for r in feat)
    assert f.size_report(X)["n_trees"] == 3
    # prediction = mean of the trees' leaf distributions
    leaves = f.apply(X)
    np.testing.assert_allclose(f.predict_proba(X), f.pi_.numpy()[leaves].mean(1), rtol=1e-6)
    fp = E2EDFClassifier(
        n_estimators=2,
        max_depth=2,
        patch_size=3,
        image_shape=(8, 8),
        epochs=2,
        finetune_epochs=1,
        random_state=0,
        n_jobs=1,
    ).fit(X, y)
    for r in fp.bank_.feat.numpy():
        rows, cols = np.divmod(r, 8)
        assert rows.max() - rows.min() == 2 and cols.max() - cols.min() == 2 and len(set(r)) == 9
    with pytest.raises(ValueError, match="image_shape"):
        E2EDFClassifier(patch_size=3).fit(X, y)


def test_cnn_fast_paths_equal_plain_convolutions():
    """The split CNNs' grad-mode convolutions give plain grouped F.conv2d's values and gradients.

    The first conv's batch-as-channels weight gradient and the per-split second conv (grad mode)
    against plain grouped F.conv2d (the no-grad path).
    """
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    X = torch.randn(40, 16 * 16, generator=g)
    bank = core.CNNBank.init(3, 256, g, image_shape=(16, 16))
    ps = [p.clone().requires_grad_(True) for p in bank.params()]

    def plain(X, ps):
        c1w, c1b, c2w, c2b, f1w, f1b, w, b = ps
        x = X.reshape(-1, 1, 16, 16)
        z = F.relu(F.max_pool2d(F.conv2d(x, c1w.reshape(9, 1, 5, 5), c1b.reshape(-1)), 2))
        z = F.relu(
            F.max_pool2d(F.conv2d(z, c2w.reshape(18, 3, 5, 5), c2b.reshape(-1), groups=3), 2)
        )
        z = F.relu(torch.einsum("bsi,sji->bsj", z.reshape(40, 3, -1), f1w) + f1b)
        return (z * w).sum(-1) + b

    want = plain(X, ps)
    gw = torch.autograd.grad((want * torch.arange(3.0)).sum(), ps)
    got = bank._forward(X, ps)
    gg = torch.autograd.grad((got * torch.arange(3.0)).sum(), ps)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(gg, gw, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(bank._forward(X, ps), want.detach(), rtol=1e-5, atol=1e-6)


def test_cnn_bank_rows_equal_all():
    g = torch.Generator().manual_seed(0)
    bank = core.CNNBank.init(3, 256, g, image_shape=(16, 16))
    X = torch.randn(5, 256, generator=g)
    full = bank.f_all(X)
    n_idx = torch.tensor([0, 1, 2, 3, 4, 0])
    s_idx = torch.tensor([2, 0, 1, 1, 2, 0])
    torch.testing.assert_close(
        bank.f_rows(X, n_idx, s_idx), full[n_idx, s_idx], rtol=1e-4, atol=1e-5
    )


def test_cnn_tree_fits_images():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 256)).astype(np.float32)
    y = (X.reshape(200, 16, 16)[:, 4:12, 4:12].mean((1, 2)) > 0).astype(int)
    e = E2EDTClassifier(
        max_depth=None,
        max_leaves=3,
        split_features="cnn",
        image_shape=(16, 16),
        epochs=3,
        finetune_epochs=2,
        batch_size=50,
        random_state=0,
        n_jobs=1,
    ).fit(X, y)
    assert e.struct_.n_leaves <= 3
    assert e.predict(X).shape == (200,)


def test_spatial_regulariser_laplacian():
    L = core.grid_laplacian(3, 4)
    assert np.allclose(L, L.T) and np.allclose(L.sum(1), 0)
    assert L[0, 0] == 2 and L[5, 5] == 4
    X, y = load_digits(return_X_y=True)
    X = (X / 16).astype(np.float32)
    e = E2EDTClassifier(
        max_depth=1, epochs=3, spatial_reg=1e-3, image_shape=(8, 8), random_state=0, n_jobs=1
    ).fit(X[:300], y[:300])
    assert e.struct_.n_splits == 1


# ----------------------------------------------------------------------------- sklearn contract


def test_clone_params_and_yaml_defaults():
    from omegaconf import OmegaConf

    from treebench.config import compose

    for cls, name in ((E2EDTClassifier, "e2edt"), (E2EDFClassifier, "e2edf")):
        est = cls(max_depth=5, random_state=3)
        c = clone(est)
        assert c.get_params() == est.get_params()
        c.set_params(**est.get_params())
        conf = compose([f"method={name}"]).method  # the full profile: the paper's settings
        assert conf.name == name
        defaults = cls().get_params()
        defaults.pop("random_state")
        assert OmegaConf.to_container(conf.params, resolve=True) == defaults


def test_param_validation(iris):
    X, y = iris
    with pytest.raises(ValueError, match="max_depth"):
        E2EDTClassifier(max_depth=0).fit(X, y)
    with pytest.raises(ValueError, match="inference"):
        E2EDTClassifier(inference="soft").fit(X, y)
    with pytest.raises(ValueError, match="image_shape"):
        E2EDTClassifier(split_features="cnn").fit(X, y)


def test_auto_batch_size_gives_the_root_64_steps_per_epoch():
    """batch_size="auto".

    Ceil(n / 64) rows within [32, 1000], resolved in fit on the training rows.
    """
    from treebench.methods.e2edt.estimator import auto_batch_size

    assert [auto_batch_size(n) for n in (50, 986, 2048, 2049, 4435, 60000, 10**6)] == [
        32, 32, 32, 33, 70, 938, 1000,
    ]  # fmt: skip
    rng = np.random.RandomState(0)
    X = rng.randn(4000, 3).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    kw = dict(max_depth=1, epochs=2, finetune_epochs=0, random_state=0, n_jobs=1)
    e = E2EDTClassifier(validation_fraction=0.2, **kw).fit(X, y)
    assert e.batch_size == "auto" and e.fit_info_["batch_size"] == 50  # 3200 training rows
    assert E2EDTClassifier(batch_size=100, **kw).fit(X, y).fit_info_["batch_size"] == 100
    with pytest.raises(ValueError, match="batch_size"):
        E2EDTClassifier(batch_size="big", **kw).fit(X, y)


def test_auto_batches_give_every_greedy_stump_about_16_steps(monkeypatch):
    """batch_size="auto".

    A stump on m rows takes batches of ceil(m / 16) within [4, the global batch].
    """
    from treebench.methods.e2edt import estimator as est_mod

    assert (est_mod.AUTO_NODE_STEPS, est_mod.AUTO_MIN_NODE_BATCH) == (16, 4)
    counts = torch.tensor([1000, 120, 30, 3, 0])
    assert core.stump_batch_sizes(counts, 32, 16, 4).tolist() == [32, 8, 4, 4, 4]
    assert core.stump_batch_sizes(counts, 32).tolist() == [32] * 5  # an int batch_size: as given
    seen = []
    grower = core.Grower

    def spy(*args, **kw):
        seen.append((kw["batch_size"], kw["node_steps"]))
        return grower(*args, **kw)

    monkeypatch.setattr(core, "Grower", spy)
    X, y = load_iris(return_X_y=True)
    kw = dict(max_depth=2, epochs=2, random_state=0, n_jobs=1)
    E2EDTClassifier(**kw).fit(X, y)
    E2EDTClassifier(batch_size=64, **kw).fit(X, y)
    assert seen == [(32, 16), (64, None)]


def test_a_batch_of_all_rows_warns(iris):
    X, y = iris
    with pytest.warns(UserWarning, match="one Adam step per epoch"):
        E2EDTClassifier(max_depth=1, epochs=2, batch_size=1000, random_state=0, n_jobs=1).fit(X, y)


def test_sample_weight_bagging_adaboost(iris):
    from sklearn.ensemble import AdaBoostClassifier, BaggingClassifier

    X, y = iris
    base = E2EDTClassifier(max_depth=2, epochs=3, batch_size=64, random_state=0, n_jobs=1)
    AdaBoostClassifier(base, n_estimators=2, random_state=0).fit(X, y)
    BaggingClassifier(base, n_estimators=2, random_state=0).fit(X, y)
    e = clone(base).fit(X, y, sample_weight=np.r_[np.ones(75), 2 * np.ones(75)])
    assert np.isfinite(e.predict_proba(X)).all()


def test_string_labels_and_inference_modes(iris):
    X, y = iris
    labels = np.array(["a", "b", "c"])[y]
    e = E2EDTClassifier(
        max_depth=2, epochs=3, batch_size=64, random_state=0, n_jobs=1, inference="root_hard"
    ).fit(X, labels)
    assert set(e.predict(X)) <= set(labels)
    for mode in ("deterministic", "root_hard", "probabilistic"):
        pr = e.predict_proba(X, inference=mode)
        np.testing.assert_allclose(pr.sum(1), 1, atol=1e-4)
    assert e.size_report(X)["split_evals"] == e.struct_.n_splits


def test_validation_fraction_records_validation_accuracy(iris):
    X, y = iris
    e = E2EDTClassifier(
        max_depth=2, epochs=3, batch_size=64, validation_fraction=0.2, random_state=0, n_jobs=1
    ).fit(X, y)
    info = e.fit_info_
    assert 0 <= info["val_accuracy"] <= 1 and 0 <= info["greedy_val_accuracy"] <= 1
    assert 0 <= info["greedy_train_accuracy"] <= 1
    with pytest.raises(ValueError, match="validation_fraction"):
        E2EDTClassifier(validation_fraction=1.0).fit(X, y)


def test_forest_without_finetune_annealing(iris):
    X, y = iris
    f = E2EDFClassifier(
        n_estimators=2,
        max_depth=2,
        epochs=2,
        steepness_inc=0.1,
        batch_size=64,
        anneal_finetune=False,
        random_state=0,
        n_jobs=1,
    ).fit(X, y)
    np.testing.assert_allclose(f.gamma_.numpy(), 1 + 2 * 0.1, rtol=1e-5)


def test_single_class_and_diagonal_patches():
    X = np.random.default_rng(0).normal(size=(30, 64)).astype(np.float32)
    e = E2EDTClassifier(max_depth=2, epochs=2, random_state=0, n_jobs=1).fit(X, np.zeros(30))
    assert (e.predict(X) == 0).all() and e.size_report(X)["n_splits"] == 0
    y = (X[:, 0] > 0).astype(int)
    f = E2EDFClassifier(
        n_estimators=2,
        max_depth=2,
        patch_size=3,
        diagonal_patch=True,
        image_shape=(8, 8),
        epochs=2,
        finetune_epochs=0,
        random_state=0,
        n_jobs=1,
    ).fit(X, y)
    for r in f.bank_.feat.numpy():
        rows, cols = np.divmod(r, 8)
        assert rows.min() == cols.min() <= 8 - 3 - 1


def test_unit_range_scaling_is_the_references_usps_input():
    """``standardize="unit_range"`` equals fitting the unscaled model on (X - min) / (max - min).

    USPS in the reference: pixels in [0, 1], not standardised; predictions come from raw inputs.
    """
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(120, 16)).astype(np.float32)  # ESL USPS pixels lie in [-1, 1]
    y = (X[:, :4].sum(1) > 0).astype(int) + (X[:, 5] > 0.5)
    kw = dict(n_estimators=2, max_depth=3, max_features=6, epochs=3, batch_size=64, n_jobs=1)
    a = E2EDFClassifier(standardize="unit_range", random_state=0, **kw).fit(X, y)
    lo, hi = X.min(), X.max()
    X01 = ((X - lo) / (hi - lo)).astype(np.float32)
    b = E2EDFClassifier(standardize=False, random_state=0, **kw).fit(X01, y)
    assert float(a.scale_mean_) == lo and float(a.scale_sd_) == hi - lo
    np.testing.assert_allclose(a.bank_.w.numpy(), b.bank_.w.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(a.apply(X), b.apply(X01))
    np.testing.assert_array_equal(a.predict(X), b.predict(X01))
    with pytest.raises(ValueError, match="standardize"):
        E2EDFClassifier(standardize="minmax", **kw).fit(X, y)


def test_module_import_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, treebench.methods.e2edt; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr


# ----------------------------------------------------------------------------- compiled kernels


kn = pytest.importorskip("treebench.methods.e2edt.kernels")


@pytest.fixture
def torch_path():
    """Run a block with the compiled kernels switched off (the torch reference path)."""

    class Switch:
        def __enter__(self):
            core.KERNELS_ENABLED = False

        def __exit__(self, *exc):
            core.KERNELS_ENABLED = True

    return Switch()


@pytest.mark.skipif(not kn.HAVE_NUMBA, reason="needs numba")
def test_compiled_finetune_h_and_gradient_equal_torch():
    """The compiled kernels' E-step and M-step gradient equal the torch level pass + autograd.

    E-step responsibilities and the M-step gradient (w, b), on a random unbalanced 3-tree forest
    with feature subsets.
    """
    rng = np.random.default_rng(0)
    struct, _ = random_structure(rng, n_trees=3, max_depth=5).canonical()
    N, p, K = 300, 12, 4
    g = torch.Generator().manual_seed(0)
    X = torch.randn(N, p, generator=g)
    y = torch.randint(0, K, (N,), generator=g)
    bank = core.LinearBank.init(struct.n_splits, p, g, k=5)
    gamma = 1 + 4 * torch.rand(struct.n_splits, generator=g)
    pi = torch.softmax(torch.randn(struct.n_leaves, K, generator=g), 1)
    pi[0, 0] = 0.0  # a zero class probability
    # torch reference h (per-tree softmax of log mu + log pi[y])
    lh = (core.leaf_logprob(bank.f_allT(X) * gamma[:, None], struct) + pi.log()[:, y]).T
    pad = core.padded_leaf_index(struct)
    padded = lh[:, pad.clamp_min(0)].masked_fill(pad < 0, -math.inf)
    h_ref = (lh - torch.logsumexp(padded, -1)[:, torch.as_tensor(struct.leaf_tree)]).exp()
    bs = kn.bfs_arrays(struct)
    h = np.empty((N, struct.n_leaves), np.float32)
    SG = torch.sigmoid(bank.f_all(X) * gamma).contiguous()
    kn.tree_estep(SG.numpy(), y.numpy(), pi.T.contiguous().numpy(), *bs, struct.leaf_tree, h)
    np.testing.assert_allclose(h, h_ref.numpy(), atol=2e-6)
    # M-step gradient on a minibatch with sample weights
    rows = torch.randperm(N, generator=g)[:100]
    sw = torch.rand(N, generator=g)
    w = bank.w.clone().requires_grad_(True)
    b = bank.b.clone().requires_grad_(True)
    bk = core.LinearBank(w, b, bank.feat)
    lmu = core.leaf_logprob(bk.f_allT(X[rows]) * gamma[:, None], struct)
    lmu = lmu.clamp(core.LOG_LO, core.LOG_HI)
    loss = -(sw[rows] * (torch.from_numpy(h)[rows].T * lmu).sum(0)).sum() / len(rows)
    loss.backward()
    SGr = torch.sigmoid(bank.f_all(X[rows]) * gamma).contiguous()
    dZ = torch.empty_like(SGr)
    r = rows.numpy()
    kn.tree_mstep_grad(SGr.numpy(), h, r, sw.numpy()[r], 1 / len(r), *bs[:4], 3, dZ.numpy())
    bk2 = core.LinearBank(bank.w.clone(), bank.b.clone(), bank.feat)
    core._linear_grads(bk2, X[rows], dZ, gamma, None, 0.0)
    torch.testing.assert_close(bk2.w.grad, w.grad, atol=1e-6, rtol=1e-4)
    torch.testing.assert_close(bk2.b.grad, b.grad, atol=1e-6, rtol=1e-4)


@pytest.mark.skipif(not kn.HAVE_NUMBA, reason="needs numba")
def test_compiled_training_matches_torch_path(torch_path):
    """Greedy + Finetune with the compiled kernels grow the torch path's forest and predictions.

    The same RNG draws, the same forest, the same predictions.
    """
    X, y = load_digits(return_X_y=True)
    kw = dict(n_estimators=2, max_depth=4, max_features=16, epochs=4, finetune_epochs=3)
    fast = E2EDFClassifier(random_state=0, keep_greedy=True, **kw).fit(X, y)
    with torch_path:
        ref = E2EDFClassifier(random_state=0, keep_greedy=True, **kw).fit(X, y)
    np.testing.assert_array_equal(fast.struct_.split, ref.struct_.split)
    np.testing.assert_array_equal(fast.struct_.left, ref.struct_.left)
    assert (fast.greedy_predict(X) == ref.greedy_predict(X)).mean() > 0.99
    torch.testing.assert_close(fast.bank_.w, ref.bank_.w, atol=2e-3, rtol=1e-2)
    assert (fast.predict(X) == ref.predict(X)).mean() > 0.99


def test_compiled_per_node_batches_match_torch_path(torch_path):
    """batch_size="auto" (per-stump batches) grows the same greedy tree on both paths."""
    X, y = load_digits(return_X_y=True)
    kw = dict(max_depth=4, epochs=4, finetune_epochs=0, random_state=0, n_jobs=1)
    fast = E2EDTClassifier(**kw).fit(X, y)
    with torch_path:
        ref = E2EDTClassifier(**kw).fit(X, y)
    assert fast.fit_info_["batch_size"] == ref.fit_info_["batch_size"] == 32
    np.testing.assert_array_equal(fast.struct_.split, ref.struct_.split)
    np.testing.assert_array_equal(fast.struct_.left, ref.struct_.left)
    torch.testing.assert_close(fast.bank_.w, ref.bank_.w, atol=2e-3, rtol=1e-2)
    assert (fast.predict(X) == ref.predict(X)).mean() > 0.99


# ----------------------------------------------------------------------------- compiled Adam


@pytest.mark.skipif(not kn.HAVE_NUMBA, reason="needs numba")
def test_compiled_adam_equals_stacked_adam_bit_for_bit():
    """CompiledAdam gives StackedAdam's (torch's) parameters bit for bit.

    Steps on all rows and on active subsets, gradients over many magnitudes, with and without weight
    decay.
    """
    if kn.torch_sqrt() is None:
        pytest.skip("torch's square root is not one the kernels know (StackedAdam is used)")
    g = torch.Generator().manual_seed(0)
    for S, k, wd in [(1, 1, 0.0), (3, 5, 0.0), (7, 61, 0.0), (40, 61, 0.1), (300, 17, 0.0)]:
        w0, b0 = torch.randn(S, k, generator=g), torch.randn(S, generator=g)
        ref, new = [w0.clone(), b0.clone()], [w0.clone(), b0.clone()]
        opt_ref = core.StackedAdam(ref, lr=1e-3, weight_decay=wd)
        opt_new = core.make_adam(new, True, lr=1e-3, weight_decay=wd)
        assert isinstance(opt_new, core.CompiledAdam)
        for it in range(150):
            act = None if it % 3 == 0 else torch.nonzero(torch.rand(S, generator=g) < 0.5)[:, 0]
            if act is not None and len(act) == 0:
                continue
            scale = 10.0 ** float(torch.randint(-6, 2, (1,), generator=g))
            gw, gb = torch.randn(S, k, generator=g) * scale, torch.randn(S, generator=g)
            for ps, opt in ((ref, opt_ref), (new, opt_new)):
                ps[0].grad, ps[1].grad = gw.clone(), gb.clone()
                opt.step(act)
            assert torch.equal(ref[0], new[0]) and torch.equal(ref[1], new[1]), (S, k, wd, it)
        np.testing.assert_array_equal(opt_ref.t.numpy(), opt_new.t)


@pytest.mark.skipif(not kn.HAVE_NUMBA, reason="needs numba")
def test_compiled_bias_corrections_equal_torch_up_to_two_million_steps():
    """float32(1 - beta**t) from libm's pow equals torch's (vectorised) pow for t <= 2**21."""
    n = 1 << 21
    t = torch.arange(1, n + 1, dtype=torch.float64)
    for beta in (0.9, 0.999):
        bc1, bc2 = np.empty(n, np.float32), np.empty(n, np.float32)
        kn.adam_tick(np.arange(n, dtype=np.float64), np.arange(n), beta, beta, bc1, bc2)
        want = (1 - beta**t).to(torch.float32).numpy()
        np.testing.assert_array_equal(bc1, want)
        tail = torch.cat([(1 - beta ** t[i : i + 3]).to(torch.float32) for i in range(0, 3000, 3)])
        np.testing.assert_array_equal(bc1[:3000], tail.numpy())  # the scalar tail of torch's loop


@pytest.mark.skipif(not kn.HAVE_NUMBA, reason="needs numba")
def test_fused_stump_epoch_equals_batch_by_batch_steps():
    """``stump_msteps`` (an epoch's minibatches in one call) ends where the per-batch path ends.

    The per-batch path: the gradient (``stump_mstep``) followed by ``StackedAdam.step`` on the
    batch's stumps; bit for bit.
    """
    if kn.torch_sqrt() is None:
        pytest.skip("torch's square root is not one the kernels know")
    g = torch.Generator().manual_seed(1)
    sizes = [230, 70, 9]
    S, p, R = len(sizes), 6, sum(sizes)
    X = torch.randn(R, p, generator=g)
    n_idx = torch.randperm(R, generator=g).numpy()
    s_idx = np.repeat(np.arange(S), sizes)
    hr = torch.rand(R, generator=g).numpy()
    hl = 1 - hr
    w_r = torch.rand(R, generator=g).numpy()
    gamma = np.array([1.0, 2.5, 4.0], np.float32)
    bank = core.LinearBank.init(S, p, g)
    order = torch.randperm(R, generator=g).numpy()
    bounds = np.array([0, 40, 41, 120, 200, R])
    feat = np.zeros((0, 0), np.int64)
    ref = [bank.w.clone(), bank.b.clone()]
    opt_ref = core.StackedAdam(ref)
    new = [bank.w.clone(), bank.b.clone()]
    opt_new = core.CompiledAdam(new)
    for _epoch in range(3):
        for q in range(len(bounds) - 1):
            gW, gb = torch.zeros(S, p), torch.zeros(S)
            bsz = kn.stump_mstep(
                X.numpy(), ref[0].numpy(), ref[1].numpy(), feat, gamma, n_idx, s_idx,
                order[bounds[q] : bounds[q + 1]], hr, hl, w_r, S, gW.numpy(), gb.numpy(),
            )  # fmt: skip
            ref[0].grad, ref[1].grad = gW, gb
            opt_ref.step(torch.from_numpy(np.flatnonzero(bsz)))
        gW_np, gb_np = np.zeros((S, p), np.float32), np.zeros(S, np.float32)
        kn.stump_msteps(
            X.numpy(), new[0].numpy(), new[1].numpy(), feat, gamma, n_idx, s_idx, order, bounds,
            hr, hl, w_r, gW_np, gb_np, opt_new.m[0], opt_new.v[0], opt_new.m[1], opt_new.v[1],
            opt_new.t, 1e-3, 0.9, 0.999, 1e-8, 0.0, opt_new.sqrt,
        )  # fmt: skip
        assert torch.equal(ref[0], new[0]) and torch.equal(ref[1], new[1])
        assert not gW_np.any() and not gb_np.any()
    np.testing.assert_array_equal(opt_ref.t.numpy(), opt_new.t)


def _dense_mstep_grad(SG, h, rows, sw, scale, bsplit, bleft, bright, bleaf, n_trees):
    """Return the Finetune M-step gradient visiting every node.

    The kernel before it skipped subtrees.
    """
    lo, hi = np.float32(core.CLAMP_LO), np.float32(core.CLAMP_HI)
    dZ = np.empty(SG.shape, np.float32)
    V = len(bsplit)
    for i in range(SG.shape[0]):
        mu, G = np.ones(V), np.zeros(V)
        c = -scale * float(sw[i])
        for v in range(V):
            s = bsplit[v]
            if s >= 0:
                gt = float(min(max(SG[i, s], lo), hi))
                mu[bleft[v]], mu[bright[v]] = mu[v] * (1.0 - gt), mu[v] * gt
            else:
                m = mu[v]
                G[v] = (
                    c * float(h[rows[i], bleaf[v]]) if core.CLAMP_LO <= m <= core.CLAMP_HI else 0.0
                )
        for v in range(V - 1, -1, -1):
            s = bsplit[v]
            if s >= 0:
                gl, gr = G[bleft[v]], G[bright[v]]
                G[v] = gl + gr
                sg = SG[i, s]
                dZ[i, s] = gr * (1.0 - float(sg)) - gl * float(sg) if lo <= sg <= hi else 0.0
    return dZ


@pytest.mark.skipif(not kn.HAVE_NUMBA, reason="needs numba")
def test_mstep_gradient_skipping_improbable_subtrees_is_exact():
    """``tree_mstep_grad`` equals the every-node gradient bit for bit, skipping improbable subtrees.

    It skips subtrees below a path probability < 1e-5 (steep and soft gates: many subtrees skipped
    and none).
    """
    rng = np.random.default_rng(0)
    struct, _ = random_structure(rng, n_trees=3, max_depth=9, p_split=0.8).canonical()
    bs = kn.bfs_arrays(struct)
    N, S, L = 40, struct.n_splits, struct.n_leaves
    h = rng.random((N, L)).astype(np.float32)
    h[:, ::7] = 0.0  # zero responsibilities (their gradient is -0.0)
    rows = rng.permutation(N)[:30]
    sw = rng.random(30).astype(np.float32)
    for steep in (0.5, 4.0, 40.0):
        SG = (1 / (1 + np.exp(-steep * rng.standard_normal((30, S))))).astype(np.float32)
        SG[0, :] = 1.0  # gates outside the clamp
        want = _dense_mstep_grad(SG, h, rows, sw, 1 / 30, *bs[:4], struct.n_trees)
        got = np.full_like(SG, np.nan)
        kn.tree_mstep_grad(SG, h, rows, sw, 1 / 30, *bs[:4], struct.n_trees, got)
        assert got.tobytes() == want.tobytes(), steep


# Digests of fits made with the code before the compiled Adam (main at 1ccd77c), on the machine
# they were recorded on: torch 2.13.0+cpu with MKL, CPU capability AVX512, an AMD CPU (MKL picks
# its kernels by CPU vendor too: an Intel AVX512 machine rounds differently; other builds and CPUs
# skip the digests; the tests above hold everywhere).
DIGESTS_BEFORE = {
    "e2edt_iris": "8df692f2a7e45472",
    "e2edf_breast_cancer": "b81499d5c4007daa",
    "e2edt_breast_cancer_weight_decay": "f5e4db9d7d429180",
}


def _fit_digest(est, X):
    import hashlib

    h = hashlib.sha256()
    for a in (est.bank_.w, est.bank_.b, est.gamma_, est.pi_, est.predict_proba(X)):
        h.update(np.ascontiguousarray(np.asarray(a)).tobytes())
    return h.hexdigest()[:16]


def _cpu_vendor() -> str:
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return ""
    return next(
        (ln.split(":")[1].strip() for ln in text.splitlines() if ln.startswith("vendor_id")), ""
    )


@pytest.mark.skipif(
    torch.__version__ != "2.13.0+cpu"
    or torch.backends.cpu.get_cpu_capability() != "AVX512"
    or _cpu_vendor() != "AuthenticAMD",
    reason="digests recorded with torch 2.13.0+cpu on an AMD AVX512 CPU",
)
@pytest.mark.parametrize("name", sorted(DIGESTS_BEFORE))
def test_fits_bit_identical_to_before_the_compiled_adam(name):
    from sklearn.datasets import load_breast_cancer

    if name == "e2edt_iris":
        X, y = load_iris(return_X_y=True)
        est = E2EDTClassifier(random_state=0, n_jobs=1)
    elif name == "e2edf_breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        est = E2EDFClassifier(
            n_estimators=3, max_depth=6, epochs=6, max_features=0.5, random_state=0, n_jobs=1
        )
    else:
        X, y = load_breast_cancer(return_X_y=True)
        est = E2EDTClassifier(max_depth=4, epochs=5, weight_decay=0.01, random_state=1, n_jobs=1)
    assert _fit_digest(est.fit(X, y), X) == DIGESTS_BEFORE[name]


def test_tree_em_rows_equals_estep_and_mstep_grad():
    """The fused pass equals tree_estep and tree_mstep_grad bit for bit.

    The pass does the E-step of every row and the M-step gradient of the rows given a batch
    position; the cases: unbalanced trees, saturated gates, zero class probabilities, a row count
    that is not a multiple of the block, rows outside the batch.
    """
    rng = np.random.default_rng(1)
    struct, _ = random_structure(rng, n_trees=4, max_depth=9, p_split=0.8).canonical()
    bs = kn.bfs_arrays(struct)
    N, S, L, K = 53, struct.n_splits, struct.n_leaves, 3
    lt = np.ascontiguousarray(struct.leaf_tree, dtype=np.int64)
    y = rng.integers(0, K, N)
    piT = rng.random((K, L)).astype(np.float32)
    piT[:, ::5] = 0.0
    rows = rng.permutation(N)[:40]
    pos = np.full(N, -1, dtype=np.int64)
    pos[rows] = np.arange(len(rows))
    sw = rng.random(len(rows)).astype(np.float32)
    for steep in (0.5, 4.0, 40.0):
        SG = (1 / (1 + np.exp(-steep * rng.standard_normal((N, S))))).astype(np.float32)
        SG[0, :] = 1.0  # gates outside the clamp
        h_want = np.empty((N, L), np.float32)
        kn.tree_estep(SG, y, piT, *bs, lt, h_want)
        dz_want = np.empty((len(rows), S), np.float32)
        kn.tree_mstep_grad(
            np.ascontiguousarray(SG[rows]), h_want, rows, sw, 1 / 40, *bs[:4], 4, dz_want
        )
        h = np.full((N, L), np.nan, np.float32)
        dz = np.full((len(rows), S), np.nan, np.float32)
        kn.tree_em_rows(SG, y, piT, *bs, lt, h, pos, sw, 1 / 40, dz)
        assert h.tobytes() == h_want.tobytes(), steep
        assert dz.tobytes() == dz_want.tobytes(), steep


@pytest.mark.parametrize("n", [150, 97])
def test_fused_first_batch_equals_unfused_finetune(monkeypatch, n):
    """Fits with the fusion on equal those with it off.

    Both a forest whose minibatch covers every row (the E-step's gates reused, the sigmoid's tail
    rows recomputed) and one of several batches.
    """
    X, y = load_iris(return_X_y=True)
    X, y = X[:n], y[:n]
    fits = []
    for fuse in (True, False):
        monkeypatch.setattr(core, "FUSE_FIRST_BATCH", fuse)
        for bs in (2000, 40):
            est = E2EDFClassifier(
                n_estimators=3, max_depth=5, epochs=4, batch_size=bs, random_state=0, n_jobs=1
            )
            fits.append(_fit_digest(est.fit(X, y), X))
    assert fits[:2] == fits[2:]
