"""Random Hinge Forest / Ferns.

Exact paper gradients, fern == tree at depth 1, deterministic inference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_digits, load_iris

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

from treebench.methods.base import InvalidParameterError  # noqa: E402
from treebench.methods.hinge import (  # noqa: E402
    HingeFernClassifier,
    HingeFernRegressor,
    HingeForestClassifier,
    HingeForestRegressor,
)
from treebench.methods.hinge.net import HingeForest, HingeNet, RunningBatchNorm  # noqa: E402

CONF = Path(__file__).resolve().parents[2] / "treebench" / "conf" / "method"


def _reference(forest: HingeForest, z: np.ndarray):
    """Alg. 3 with the notes' fix (x_{f_v}), per sample and tree, plus Eqs. 11-12 closed forms."""
    f = forest.features.numpy()
    t = forest.thresholds.detach().numpy().astype(np.float64)
    w = forest.weights.detach().numpy().astype(np.float64)
    B, (M, D) = z.shape[0], (forest.n_trees, forest.depth)
    out = np.zeros((B, M, w.shape[2]))
    info = np.zeros((B, M, 3))  # leaf, v*, r*
    for b in range(B):
        for m in range(M):
            leaf, v = 0, 0
            rstar, vstar = np.inf, 0
            for d in range(D):
                node = v if forest.kind == "tree" else d
                r = z[b, f[m, node]] - t[m, node]
                if abs(r) < abs(rstar):
                    rstar, vstar = r, node
                leaf = 2 * leaf + int(r > 0)
                v = 2 * v + 1 + int(r > 0)
            out[b, m] = w[m, leaf] * abs(rstar)
            info[b, m] = leaf, vstar, rstar
    return out, info


def _closed_form_grads(forest, z, info, G):
    """dL/dz, dL/dt, dL/dw for L = sum(G * h) from the paper's sparse derivatives."""
    f = forest.features.numpy()
    w = forest.weights.detach().numpy().astype(np.float64)
    gz, gt, gw = np.zeros(z.shape), np.zeros(forest.thresholds.shape), np.zeros(w.shape)
    for b in range(z.shape[0]):
        for m in range(forest.n_trees):
            leaf, v, r = int(info[b, m, 0]), int(info[b, m, 1]), info[b, m, 2]
            gw[m, leaf] += G[b, m] * abs(r)  # Eq. 12: |r*|
            s = float(G[b, m] @ w[m, leaf]) * np.sign(r)
            gt[m, v] += -s  # -sgn(r*) w_leaf
            gz[b, f[m, v]] += s  # Eq. 11: +sgn(r*) w_leaf
    return gz, gt, gw


@pytest.mark.parametrize("kind", ["tree", "fern"])
@pytest.mark.parametrize("depth", [1, 3, 6])
def test_gradients_equal_paper_closed_form(kind, depth):
    g = torch.Generator().manual_seed(depth)
    forest = HingeForest(7, 5, depth, 3, kind, leaf_std=1.0, generator=g).double()
    z_np = np.random.default_rng(depth).normal(size=(40, 7))
    z = torch.tensor(z_np, requires_grad=True)
    G = np.random.default_rng(100 + depth).normal(size=(40, 5, 3))
    out = forest(z)
    ref_out, info = _reference(forest, z_np)
    np.testing.assert_allclose(out.detach().numpy(), ref_out, rtol=1e-12, atol=1e-12)
    (out * torch.tensor(G)).sum().backward()
    gz, gt, gw = _closed_form_grads(forest, z_np, info, G)
    np.testing.assert_allclose(z.grad.numpy(), gz, atol=1e-12)
    np.testing.assert_allclose(forest.thresholds.grad.numpy(), gt, atol=1e-12)
    np.testing.assert_allclose(forest.weights.grad.numpy(), gw, atol=1e-12)
    # sparsity: per sample and tree one threshold and one leaf
    leaf, vstar = forest.route(z.detach())
    assert leaf.shape == vstar.shape == (40, 5)
    assert int(leaf.max()) < 2**depth and int(vstar.max()) < forest.n_decisions


def test_ties_take_the_shallower_node_and_zero_goes_left():
    forest = HingeForest(1, 1, 2, 1, "tree", generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        forest.features.zero_()
        forest.thresholds.copy_(torch.tensor([[0.0, -1.0, 1.0]]))
    z = torch.tensor([[0.0], [1.0], [-1.0], [-0.5]])
    leaf, vstar = forest.route(z)
    # z=0: r=0 at the root goes left (right iff r > 0); z=1: right, then r=0 at node 2 goes left;
    # z=-0.5: |r| = 0.5 at the root and at node 1: the tie goes to the shallower root
    assert leaf[:, 0].tolist() == [1, 2, 0, 1]
    assert vstar[:, 0].tolist() == [0, 2, 1, 0]


def test_fern_depth1_equals_tree_depth1():
    a = HingeForest(6, 8, 1, 4, "tree", leaf_std=1.0, generator=torch.Generator().manual_seed(3))
    b = HingeForest(6, 8, 1, 4, "fern", leaf_std=1.0, generator=torch.Generator().manual_seed(3))
    z = torch.randn(30, 6, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(a(z), b(z), rtol=0, atol=0)
    X, y = load_iris(return_X_y=True)
    kw = dict(
        n_estimators=10, max_depth=1, n_iterations=150, snapshot_every=50, random_state=0, n_jobs=1
    )
    pa = HingeForestClassifier(**kw).fit(X, y).predict_proba(X)
    pb = HingeFernClassifier(**kw).fit(X, y).predict_proba(X)
    np.testing.assert_array_equal(pa, pb)


def test_running_batchnorm():
    bn = RunningBatchNorm(3)
    x = torch.randn(50, 3, generator=torch.Generator().manual_seed(0)) * 4 + 2
    y0 = bn(x)  # forward uses the initial statistics mean 0, var 1
    torch.testing.assert_close(y0, x / (1 + 1e-7) ** 0.5)
    bn.update()  # first update: alpha = 0 -> the batch statistics (unbiased variance)
    torch.testing.assert_close(bn.running_mean, x.mean(0))
    torch.testing.assert_close(bn.running_var, x.var(0, unbiased=True))
    x2 = torch.randn(50, 3, generator=torch.Generator().manual_seed(1))
    bn(x2)
    bn.update()  # alpha = 1/2: cumulative average
    torch.testing.assert_close(bn.running_mean, (x.mean(0) + x2.mean(0)) / 2)
    # gradient treats the statistics as constants
    xg = x.clone().requires_grad_(True)
    bn(xg).sum().backward()
    torch.testing.assert_close(xg.grad, (1 / (bn.running_var + 1e-7).sqrt()).expand(50, 3))


def test_deterministic_inference_train_equals_eval():
    X, y = load_iris(return_X_y=True)
    est = HingeForestClassifier(
        n_estimators=10, max_depth=3, n_iterations=200, snapshot_every=100, random_state=1, n_jobs=1
    ).fit(X, y)
    net = est.net_
    Xt = torch.tensor(X, dtype=torch.float32)
    with torch.no_grad():
        net.eval()
        a = net(Xt)
        net.train()
        b = net(Xt)
        net.eval()
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    np.testing.assert_array_equal(est.predict_proba(X), est.predict_proba(X))
    # same seed -> same model
    est2 = clone(est).fit(X, y)
    np.testing.assert_array_equal(est.predict_proba(X), est2.predict_proba(X))


def test_conv_pool_and_sum_aggregation_shapes():
    net = HingeNet(
        28 * 28,
        10,
        4,
        3,
        "tree",
        pool="conv",
        n_features=80,
        aggregation="sum",
        image_shape=(28, 28),
        generator=torch.Generator().manual_seed(0),
    )
    assert net.n_pool == 80 * 8 * 8
    assert net(torch.randn(5, 784)).shape == (5, 10)


def test_bleak_init_and_per_position_conv_bn():
    """weight_init="bleak" = the authors' N(0, 1) pool/head weights and zero head bias.

    Conv_bn="position" keeps one running statistic per flattened conv output (bleak's MNIST graph)
    and normalises each of them with its own statistics.
    """
    g = torch.Generator().manual_seed(0)
    lin = HingeNet(256, 10, 50, 3, "tree", n_features=100, weight_init="bleak", generator=g)
    w = lin.pool.weight.detach()
    assert abs(float(w.std()) - 1.0) < 0.02 and abs(float(w.mean())) < 0.02
    assert float(lin.head.weight.detach().abs().max()) > 2.0  # Kaiming bound would be 1/sqrt(50)
    assert float(lin.head.bias.detach().abs().max()) == 0.0
    torch_lin = HingeNet(256, 10, 50, 3, "tree", n_features=100, generator=g)
    assert float(torch_lin.pool.weight.detach().abs().max()) <= 1 / 16  # Kaiming-uniform bound
    net = HingeNet(
        28 * 28, 10, 4, 3, "tree", pool="conv", n_features=6, aggregation="sum",
        image_shape=(28, 28), weight_init="bleak", conv_bn="position", generator=g,
    )  # fmt: skip
    assert net.bn.running_mean.shape == (6 * 8 * 8,)
    x = torch.randn(40, 784, generator=g) * 50 + 3
    net.train()
    net(x)
    net.bn.update()  # the first update replaces the initial 0/1 statistics by the batch's
    flat = net.pool(x.view(40, 1, 28, 28)).flatten(1)
    want = (flat - flat.mean(0)) / (flat.var(0, unbiased=True) + net.bn.eps).sqrt()
    torch.testing.assert_close(net.features(x), want, rtol=1e-4, atol=1e-4)
    with pytest.raises(InvalidParameterError, match="conv_bn"):
        HingeForestClassifier(conv_bn="pixel").fit(np.zeros((4, 4)), [0, 1, 0, 1])
    with pytest.raises(InvalidParameterError, match="weight_init"):
        HingeForestClassifier(weight_init="xavier").fit(np.zeros((4, 4)), [0, 1, 0, 1])


@pytest.mark.parametrize("cls", [HingeForestClassifier, HingeFernClassifier])
def test_sklearn_contract_and_iris(cls):
    est = cls(n_estimators=10, max_depth=3, n_iterations=600, random_state=0, n_jobs=1)
    c = clone(est)
    assert c.get_params() == est.get_params()
    c.set_params(max_depth=4)
    assert c.get_params()["max_depth"] == 4
    X, y = load_iris(return_X_y=True)
    est.set_params(snapshot_every=100).fit(X, y)
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1, rtol=1e-6)
    assert est.score(X, y) > 0.9
    rep = est.size_report(X)
    n_dec = 7 if cls is HingeForestClassifier else 3
    assert rep["n_splits"] == 10 * n_dec and rep["n_leaves"] == 80 and rep["split_evals"] == 30
    with pytest.raises(ValueError, match="max_depth"):
        clone(est).set_params(max_depth=0).fit(X, y)
    with pytest.raises(ValueError, match="eval_set"):
        clone(est).set_params(selection="test").fit(X, y)


@pytest.mark.parametrize("pool", ["linear", "conv"])
def test_rowwise_inference_matches_batch_forward(pool):
    """Predictions are per row and equal those of the batched forward pass.

    The float32 BLAS sums of the pool and head depend on the batch size; they are accumulated in
    float64 at inference. Equal means the same classes, probabilities within float32 rounding.
    """
    X, y = load_digits(return_X_y=True)
    X, y = X[:400], y[:400]
    kw = {"features": "conv", "n_features": 6, "image_shape": (8, 8)} if pool == "conv" else {}
    est = HingeForestClassifier(
        n_estimators=10, max_depth=3, n_iterations=300, snapshot_every=100, random_state=0, **kw
    ).fit(X, y)
    with torch.no_grad():
        batch = est.net_(torch.from_numpy(X.astype(np.float32))).numpy()
    z = est.decision_function(X)
    np.testing.assert_array_equal(z.argmax(1), batch.argmax(1))
    np.testing.assert_allclose(z, batch, rtol=1e-5, atol=1e-5)
    one_by_one = np.concatenate([est.decision_function(X[i : i + 1]) for i in range(40)])
    np.testing.assert_array_equal(one_by_one, z[:40])


def test_binary_decision_function_is_one_score():
    """Two classes: one score per row, positive where predict gives classes_[1] (scikit-learn)."""
    X, y = load_iris(return_X_y=True)
    X, y = X[y > 0], np.where(y[y > 0] == 1, "a", "b")
    est = HingeFernClassifier(
        n_estimators=4, max_depth=2, n_iterations=200, snapshot_every=100, random_state=0
    ).fit(X, y)
    d = est.decision_function(X)
    assert d.shape == (len(y),)
    np.testing.assert_array_equal(est.classes_[(d > 0).astype(int)], est.predict(X))


def test_test_selection_is_labelled():
    X, y = load_iris(return_X_y=True)
    est = HingeFernClassifier(
        n_estimators=5,
        max_depth=2,
        n_iterations=200,
        snapshot_every=50,
        selection="test",
        validation_fraction=0,
        random_state=0,
        n_jobs=1,
    )
    assert est.wants_eval_set() and not clone(est).set_params(selection="last").wants_eval_set()
    est.fit(X[::2], y[::2], eval_set=(X[1::2], y[1::2]))
    info = est.fit_info_
    assert info["selection"] == "test" and "best test error" in info["protocol"]
    assert info["eval_selected_error"] == info["eval_best_error"]
    assert np.isclose(1 - est.score(X[1::2], y[1::2]), info["eval_best_error"])
    # the honest last-state number of the same run = what selection="last" keeps (same trajectory)
    last = clone(est).set_params(selection="last").fit(X[::2], y[::2])
    assert last.fit_info_["protocol"] == "last model state"
    assert np.isclose(1 - last.score(X[1::2], y[1::2]), info["eval_last_error"])
    assert info["eval_best_error"] == min(e for _, e in est.eval_curve_)


def test_runner_passes_test_part_only_for_test_selection(tmp_path, monkeypatch):
    """Through the runner.

    Selection=test gets the test part in fit and is labelled in the record.
    """
    from tests.conftest import compose_config
    from treebench.data import DataContext
    from treebench.results.store import Store
    from treebench.runner import run_job

    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(tmp_path))
    small = [
        "method.params.n_estimators=5",
        "method.params.max_depth=3",
        "method.params.n_iterations=200",
        "method.params.snapshot_every=50",
    ]
    recs = {}
    for sel in ("test", "last"):
        cfg = compose_config(
            ["experiment=rhf_table3", "method=hinge_forest", "dataset=iris"]
            + [f"method.params.selection={sel}", *small]
        )
        store = Store(tmp_path / "store")
        (rec,) = run_job(cfg, store, DataContext(tmp_path / "data", None, False), log=lambda s: 0)
        assert rec["status"] == "ok", rec.get("traceback")
        recs[sel] = rec
    t, last = recs["test"], recs["last"]
    assert t["eval_set_in_fit"] and not last["eval_set_in_fit"]
    assert t["info"]["selection"] == "test" and "paper protocol" in t["info"]["protocol"]
    assert np.isclose(1 - t["metrics"]["test_accuracy"], t["info"]["eval_best_error"])
    # same seed and data: the last state of the test-selected run is the selection=last model
    assert np.isclose(t["info"]["eval_last_error"], 1 - last["metrics"]["test_accuracy"])
    assert "eval_best_error" not in last["info"]


@pytest.mark.parametrize("cls", [HingeForestRegressor, HingeFernRegressor])
def test_regression_diabetes(cls):
    X, y = load_diabetes(return_X_y=True)
    est = cls(
        n_estimators=50,
        max_depth=1,
        n_iterations=1500,
        snapshot_every=100,
        random_state=0,
        n_jobs=1,
    ).fit(X[:330], y[:330])
    assert est.predict(X[330:]).shape == (112,)
    assert est.score(X[330:], y[330:]) > 0.3


@pytest.mark.parametrize("name", ["hinge_forest", "hinge_fern"])
def test_yaml_defaults_match_constructor(name):
    from omegaconf import OmegaConf

    from treebench.schema import register_schema

    register_schema()  # the resolvers method files use (n_iterations: ${paper_default:...})
    raw = yaml.safe_load((CONF / f"{name}.yaml").read_text())
    cfg = OmegaConf.to_container(OmegaConf.create(raw), resolve=True)
    assert cfg["name"] == name
    est = {"hinge_forest": HingeForestClassifier, "hinge_fern": HingeFernClassifier}[name]()
    params = est.get_params()
    params.pop("random_state")
    assert cfg["params"] == params


def test_auto_iterations_budget_by_task():
    from treebench.methods.hinge import estimator as hinge

    assert (hinge.AUTO_PATIENCE_SNAPSHOTS, hinge.AUTO_MAX_ITERATIONS) == (10, 40000)
    assert (hinge.AUTO_PATIENCE_SNAPSHOTS_REGRESSION, hinge.AUTO_MAX_ITERATIONS_REGRESSION) == (
        40,
        160000,
    )
    # classification snapshots at most 10 passes over the training rows apart (batch 53)
    assert hinge.AUTO_SNAPSHOT_EPOCHS == 10
    assert HingeForestClassifier()._budget(600) == (40000, 10, 113)  # german's training part
    assert HingeFernClassifier()._budget(75) == (40000, 10, 14)  # iris'
    assert HingeFernClassifier()._budget(30) == (40000, 10, 10)  # one batch of 30 is an epoch
    assert HingeForestClassifier()._budget(2650) == HingeForestClassifier()._budget(10**5)
    assert HingeForestClassifier()._budget(10**5) == (40000, 10, 500)
    assert HingeForestClassifier(snapshot_every=50)._budget(600) == (40000, 10, 50)
    assert HingeFernRegressor()._budget(600) == (160000, 40, 500)
    assert HingeForestClassifier(n_iterations=300)._budget(600) == (300, None, 500)
    X, y = load_iris(return_X_y=True)
    with pytest.raises(InvalidParameterError, match="n_iterations='auto'"):
        HingeForestClassifier(selection="last").fit(X, y)
    with pytest.raises(InvalidParameterError, match="n_iterations"):
        HingeForestClassifier(n_iterations="long").fit(X, y)


def test_auto_iterations_stop_early_and_restore_the_best_snapshot():
    """Random labels: the validation loss is lowest early.

    The fit stops 10 snapshots later and keeps the best snapshot, i.e. the model of a fit stopped at
    the best iteration (same seed).
    """
    rng = np.random.RandomState(0)
    X, y = rng.randn(300, 5), rng.randint(0, 2, 300)
    kw = dict(n_estimators=5, max_depth=3, snapshot_every=20, random_state=0, n_jobs=1)
    est = HingeForestClassifier(**kw).fit(X, y)
    info = est.fit_info_
    best = info["best_iteration"]
    assert info["stopped_early"] and info["max_iterations"] == 40000
    assert info["n_iterations"] == best + 10 * 20 < 40000
    curve = dict(tuple(map(float, c.split(":"))) for c in info["validation_loss_curve"].split())
    assert len(curve) == info["n_iterations"] // 20
    assert min(curve, key=curve.get) == best
    assert np.isclose(curve[best], info["best_validation_loss"], rtol=1e-3)
    ref = HingeForestClassifier(n_iterations=best, **kw).fit(X, y)
    assert ref.fit_info_["best_iteration"] == best and not ref.fit_info_["stopped_early"]
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", ["hinge_forest", "hinge_fern"])
def test_paper_experiments_keep_the_papers_40000_steps(method):
    """The auto budget is the default; the paper experiments state the paper's fixed 40 000."""
    from tests.conftest import compose_config

    assert compose_config([f"method={method}"]).method.params.n_iterations == "auto"
    for exp in ("rhf_table2", "rhf_table3"):
        cfg = compose_config([f"experiment={exp}", f"method={method}"])
        assert cfg.method.params.n_iterations == 40000, exp


def test_auto_iterations_snapshot_on_the_epoch_grid():
    """The auto budget follows the data: 600 training rows snapshot every 113 steps.

    A classifier on 600 training rows (800 given, a quarter held out) snapshots every 113 steps (10
    epochs of batches of 53) and stops 10 snapshots after its best, 1 243 steps at the earliest;
    random labels, so the best comes early.
    """
    rng = np.random.RandomState(1)
    X, y = rng.randn(800, 4), rng.randint(0, 2, 800)
    est = HingeFernClassifier(n_estimators=4, max_depth=2, random_state=0, n_jobs=1).fit(X, y)
    info = est.fit_info_
    assert (info["n_train_used"], info["snapshot_every"]) == (600, 113)
    steps = [int(c.split(":")[0]) for c in info["validation_loss_curve"].split()]
    assert steps == list(range(113, info["n_iterations"] + 1, 113))
    assert info["stopped_early"] and info["n_iterations"] == info["best_iteration"] + 10 * 113
    assert info["n_iterations"] >= 1243


def test_auto_iterations_end_at_the_budget(monkeypatch):
    from treebench.methods.hinge import estimator as hinge

    monkeypatch.setattr(hinge, "AUTO_MAX_ITERATIONS", 200)
    X, y = load_iris(return_X_y=True)
    kw = dict(n_estimators=5, max_depth=2, snapshot_every=50, random_state=0, n_jobs=1)
    info = HingeForestClassifier(**kw).fit(X, y).fit_info_
    assert info["n_iterations"] == info["max_iterations"] == 200 and not info["stopped_early"]


def test_bagging_and_adaboost_accept_it():
    from sklearn.ensemble import AdaBoostClassifier, BaggingClassifier

    X, y = load_iris(return_X_y=True)
    base = HingeFernClassifier(
        n_estimators=4, max_depth=2, n_iterations=60, snapshot_every=30, random_state=0, n_jobs=1
    )
    bag = BaggingClassifier(base, n_estimators=2, random_state=0).fit(X, y)
    ada = AdaBoostClassifier(base, n_estimators=2, random_state=0).fit(X, y)
    assert bag.predict(X).shape == ada.predict(X).shape == (150,)
    # sample weights change the fit
    w = np.where(y == 0, 10.0, 0.1)
    a = clone(base).fit(X, y).predict_proba(X)
    b = clone(base).fit(X, y, sample_weight=w).predict_proba(X)
    assert not np.allclose(a, b)


@pytest.mark.parametrize("kind", ["tree", "fern"])
def test_compiled_path_equals_gather_path(kind):
    """The numba forward/backward equal the autograd-through-gathers path.

    Dense and sparse leaf gradients, per-tree and summed outputs.
    """
    f = HingeForest(9, 6, 5, 4, kind, leaf_std=1.0, generator=torch.Generator().manual_seed(7))
    f = f.double()
    z = torch.randn(33, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    G = torch.randn(33, 6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))

    def grads(fn, reduce, sparse):
        zz = z.clone().requires_grad_(True)
        f.zero_grad(set_to_none=True)
        f.sparse_grad = sparse
        out = fn(zz)
        loss = (out * (G.sum(1) if reduce else G)).sum()
        loss.backward()
        gw = f.weights.grad.to_dense() if f.weights.grad.is_sparse else f.weights.grad
        return out.detach(), zz.grad, f.thresholds.grad.clone(), gw.clone()

    ref = grads(f.forward_torch, False, False)
    got = grads(f, False, False)
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-13)
    ref_sum = grads(lambda x: f.forward_torch(x).sum(1), True, False)
    for sparse in (False, True):
        got = grads(lambda x: f(x, reduce=True), True, sparse)
        for a, b in zip(got, ref_sum, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-13)
    f.sparse_grad = True
    f.zero_grad(set_to_none=True)
    f(z.requires_grad_(True), reduce=True).sum().backward()
    g = f.weights.grad
    rows = (g._indices()[0] * 32 + g._indices()[1]).numpy()
    assert g.is_sparse and g._nnz() <= 33 * 6
    assert (np.diff(rows) > 0).all()  # sorted and unique (what HingeAdam consumes)


@pytest.mark.parametrize("kind", ["tree", "fern"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_forward_is_bitwise_the_papers_walk(kind, dtype):
    """The compiled forward gives exactly the bits of the paper's walk written out per sample.

    Ferns: level-wise on z transposed, branch-free. The leaf, v*, r* and output bits of Alg. 3
    (right iff r > 0, strict < keeps the shallower decision), ties and zero margins included.
    """
    from treebench.methods.hinge.net import _kernels

    if _kernels is None:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(5)
    B, F, M, D, K = 37, 7, 9, 6, 3
    N = 2**D - 1 if kind == "tree" else D
    z = rng.normal(size=(B, F)).astype(dtype)
    feats = rng.integers(0, F, (M, N))
    thr = rng.normal(size=(M, N)).astype(dtype)
    thr[:, 1::3] = z[0, feats[:, 1::3]]  # zero margins for sample 0
    z[1] = z[1, 0]  # equal margins at nodes with equal thresholds
    thr[:, ::4] = thr[:, :1]
    w = rng.normal(size=(M, 2**D, K)).astype(dtype)
    for reduce in (False, True):
        got = [np.empty((B, M), np.int64), np.empty((B, M), np.int64), np.empty((B, M), dtype)]
        out = np.zeros((B, 1, K) if reduce else (B, M, K), dtype)
        _kernels.forest_forward(z, feats, thr, w, D, kind == "fern", reduce, *got, out)
        ref = np.zeros_like(out)
        for b in range(B):
            for t in range(M):
                g, node, best, rbest, vbest = 0, 0, np.inf, None, 0
                for d in range(D):
                    node = d if kind == "fern" else g
                    r = z[b, feats[t, node]] - thr[t, node]
                    if rbest is None or abs(r) < best:
                        best, rbest, vbest = abs(r), r, node
                    g = 2 * g + 1 + int(r > 0)
                leaf = g - (2**D - 1)
                assert (got[0][b, t], got[1][b, t]) == (leaf, vbest)
                assert got[2][b, t].tobytes() == rbest.tobytes()
                if reduce:
                    ref[b, 0] += w[t, leaf] * abs(rbest)
                else:
                    ref[b, t] = w[t, leaf] * abs(rbest)
        assert out.tobytes() == ref.tobytes()


def _leaf_step_grads(gen, step: int, n_rows: int):
    """One step's gradients of a [6, 8, 3] leaf tensor and a [17] dense one.

    A sparse COO gradient on a few unique (tree, leaf) rows among the first ``n_rows`` of 48, and a
    dense one.
    """
    rows = torch.randperm(n_rows, generator=gen)[: 1 + step % 7].sort().values
    idx = torch.stack([rows // 8, rows % 8])
    vals = torch.randn(len(rows), 3, generator=gen)
    sp = torch.sparse_coo_tensor(idx, vals, (6, 8, 3), check_invariants=True).coalesce()
    return rows, sp, torch.randn(17, generator=gen)


def test_hinge_adam_equals_torch_adam():
    """HingeAdam == torch.optim.Adam fed the same gradients densely.

    HingeAdam is numba's, consuming sparse leaf rows without materialising zeros; over steps where
    many entries get no gradient.
    """
    from treebench.methods.hinge.net import HingeAdam

    gen = torch.Generator().manual_seed(0)
    p0 = [torch.randn(6, 8, 3, generator=gen), torch.randn(17, generator=gen)]
    ours = [torch.nn.Parameter(p.clone()) for p in p0]
    ref = [torch.nn.Parameter(p.clone()) for p in p0]
    opt_a = HingeAdam(ours, lr=0.01, betas=(0.9, 0.999), eps=1e-8)
    opt_b = torch.optim.Adam(ref, lr=0.01, betas=(0.9, 0.999), eps=1e-8, foreach=False)
    for step in range(60):
        rows, sp, dense = _leaf_step_grads(gen, step, 48)
        ours[0].grad, ours[1].grad = sp, dense.clone()
        ref[0].grad, ref[1].grad = sp.to_dense(), dense.clone()
        opt_a.step()
        opt_b.step()
        for a, b in zip(ours, ref, strict=True):
            torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-6, atol=1e-7)
    for a, b in zip(ours, ref, strict=True):
        sa, sb = opt_a.state[a], opt_b.state[b]
        torch.testing.assert_close(sa["exp_avg"], sb["exp_avg"], rtol=1e-6, atol=1e-9)
        torch.testing.assert_close(sa["exp_avg_sq"], sb["exp_avg_sq"], rtol=1e-6, atol=1e-12)


def test_lazy_hinge_adam_equals_torch_sparse_adam():
    """HingeAdam(lazy=True) moves only the leaf rows a step touches, as torch.optim.SparseAdam.

    The same up to where Adam and SparseAdam put eps; dense gradients keep dense Adam.
    """
    from treebench.methods.hinge.net import HingeAdam

    gen = torch.Generator().manual_seed(1)
    p0 = [torch.randn(6, 8, 3, generator=gen), torch.randn(17, generator=gen)]
    ours = [torch.nn.Parameter(p.clone()) for p in p0]
    ref = [torch.nn.Parameter(p.clone()) for p in p0]
    opt_a = HingeAdam(ours, lr=0.01, lazy=True)
    sparse_ref = torch.optim.SparseAdam([ref[0]], lr=0.01)
    dense_ref = torch.optim.Adam([ref[1]], lr=0.01, foreach=False)
    untouched = torch.ones(48, dtype=torch.bool)
    for step in range(60):
        rows, sp, dense = _leaf_step_grads(gen, step, 40)  # rows 40-47 never get a gradient
        untouched[rows] = False
        ours[0].grad, ours[1].grad = sp, dense.clone()
        ref[0].grad, ref[1].grad = sp.clone(), dense.clone()
        opt_a.step()
        sparse_ref.step()
        dense_ref.step()
        for a, b in zip(ours, ref, strict=True):
            torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-5, atol=1e-6)
    still = untouched.reshape(6, 8)
    assert still.sum() >= 8  # rows 40-47 at least: never reached, never moved
    torch.testing.assert_close(ours[0].detach()[still], p0[0][still], rtol=0, atol=0)


@pytest.mark.parametrize(
    ("kind", "depth", "k"), [("tree", 5, 1), ("tree", 10, 1), ("fern", 10, 1), ("tree", 5, 3)]
)
def test_hinge_adagrad_rows_equal_dense_adagrad_bitwise(kind, depth, k):
    """Adagrad on the forest's gradient rows lands on torch's dense fused Adagrad bit for bit.

    HingeAdagrad: sparse threshold and leaf gradients, only the touched entries stepped, against
    torch.optim.Adagrad(fused=True): parameters, accumulators and predictions.
    """
    import copy

    from treebench.methods.hinge.net import HingeAdagrad, _kernels, torch_train_steps

    if _kernels is None:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(depth)
    X = torch.from_numpy(rng.normal(size=(300, 70)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, 300))
    net = HingeNet(
        70, 3, 12, depth, kind, aggregation="sum" if k > 1 else "linear",
        generator=torch.Generator().manual_seed(depth),
    )  # fmt: skip
    dense, rows = net, copy.deepcopy(net)
    dense.forest.sparse_grad = dense.forest.sparse_thresholds = False
    rows.forest.sparse_grad = rows.forest.sparse_thresholds = True
    opt_d = torch.optim.Adagrad(list(dense.parameters()), lr=0.05, fused=True)
    opt_r = HingeAdagrad(list(rows.parameters()), lr=0.05)
    batches = rng.integers(0, 300, (80, 16))

    def loss_fn(out, yb, wb):
        return torch.nn.functional.cross_entropy(out, yb)

    for net_, opt in ((dense, opt_d), (rows, opt_r)):
        net_.train()
        torch_train_steps(net_, opt, X, y, None, batches, loss_fn)
    assert rows.forest.thresholds.grad.is_sparse and rows.forest.weights.grad.is_sparse
    assert rows.forest.thresholds.grad._nnz() <= 16 * 12
    for (name, a), b in zip(dense.state_dict().items(), rows.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    for a, b in zip(dense.parameters(), rows.parameters(), strict=True):
        assert torch.equal(opt_d.state[a]["sum"], opt_r.state[b]["sum"])
        assert torch.equal(opt_d.state[a]["step"], opt_r.state[b]["step"])
    dense.eval(), rows.eval()
    with torch.no_grad():
        assert torch.equal(dense(X), rows(X))
    assert opt_r.state_dict()["state"].keys() == opt_d.state_dict()["state"].keys()


@pytest.mark.parametrize("depth", [5, 10])
def test_estimator_adagrad_rows_path_is_bit_identical(depth, monkeypatch):
    """The torch-path fit predicts the same bits with dense or row-wise AdaGrad gradients.

    Here 72 inputs, so not the compiled UCI step; densely is a small forest's default, as rows a
    large forest's (forced here at depths 5 and 10).
    """
    import treebench.methods.hinge.net as hnet

    X, y = load_digits(return_X_y=True)
    X = np.hstack([X, np.random.default_rng(0).normal(size=(len(X), 8))])
    kw = dict(n_estimators=10, max_depth=depth, n_iterations=300, snapshot_every=100)
    dense = HingeForestClassifier(**kw, selection="last", random_state=0, n_jobs=1).fit(X, y)
    assert not dense.fit_info_["compiled_training"] and not dense.net_.forest.sparse_thresholds
    monkeypatch.setattr(hnet, "SPARSE_ADAGRAD_MIN_ENTRIES", 0)
    rows = HingeForestClassifier(**kw, selection="last", random_state=0, n_jobs=1).fit(X, y)
    assert rows.net_.forest.sparse_thresholds
    np.testing.assert_array_equal(dense.predict_proba(X), rows.predict_proba(X))
    for k, v in dense.net_.state_dict().items():
        assert torch.equal(v, rows.net_.state_dict()[k]), k


@pytest.mark.parametrize("kind", ["tree", "fern"])
@pytest.mark.parametrize("task", ["classification", "regression", "weighted"])
def test_compiled_uci_training_equals_torch_path(kind, task):
    """The one-kernel UCI training step gives the torch path's parameters, statistics and losses.

    Pool, BN, forest, head, loss, backward, AdaGrad, BN update; float64, 150 steps.
    """
    import copy

    from treebench.methods.hinge.net import (
        CompiledUCITrainer,
        _kernels,
        make_optimizer,
        torch_train_steps,
    )

    if _kernels is None:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(1)
    n, P, K = 70, 7, 3 if task != "regression" else 1
    X = rng.normal(size=(n, P)) * rng.uniform(0.5, 3, P) + rng.normal(size=P)
    y = rng.integers(0, K, n).astype(float) if K > 1 else rng.normal(size=n)
    sw = rng.uniform(0.3, 2.0, n) if task == "weighted" else np.ones(n)
    net = HingeNet(
        P, K, 6, 4, kind, pool="linear", n_features=12, aggregation="linear",
        generator=torch.Generator().manual_seed(3),
    ).double()  # fmt: skip
    net2 = copy.deepcopy(net)
    batches = np.concatenate([rng.permutation(n)[:64].reshape(4, 16) for _ in range(38)])[:150]

    def loss_fn(out, yb, wb):
        if K > 1:
            per = torch.nn.functional.cross_entropy(out, yb, reduction="none")
        else:
            per = (out.squeeze(-1) - yb) ** 2
        return per.mean() if wb is None else (per * wb).mean()

    Yt = torch.from_numpy(y.astype(np.int64) if K > 1 else y)
    Wt = torch.from_numpy(sw) if task == "weighted" else None
    opt = make_optimizer("adagrad", net, 0.05)
    loss_t = torch_train_steps(net, opt, torch.from_numpy(X), Yt, Wt, batches, loss_fn)
    assert CompiledUCITrainer.applies(net2, "adagrad", np.float64)
    assert not CompiledUCITrainer.applies(net2, "adam", np.float64)
    loss_c = CompiledUCITrainer(net2, X, y, sw, K > 1, 0.05).run(batches)
    np.testing.assert_allclose(loss_c, loss_t, rtol=1e-10)
    sd_t, sd_c = net.state_dict(), net2.state_dict()
    for k in sd_t:
        np.testing.assert_allclose(sd_c[k].numpy(), sd_t[k].numpy(), rtol=1e-9, atol=1e-12)
    assert int(sd_c["bn.n_updates"]) == 150
    ref = HingeNet(
        P, K, 6, 4, kind, pool="linear", n_features=12, aggregation="linear",
        generator=torch.Generator().manual_seed(3),
    ).double()  # fmt: skip
    assert not np.allclose(ref.forest.thresholds.detach(), net2.forest.thresholds.detach())


@pytest.mark.parametrize("cls", [HingeForestClassifier, HingeFernRegressor])
def test_estimator_compiled_training_matches_torch_training(cls, monkeypatch):
    """The estimator's UCI fit takes the compiled step and lands where the torch path does."""
    X, y = (load_iris if cls is HingeForestClassifier else load_diabetes)(return_X_y=True)
    kw = dict(n_estimators=8, max_depth=3, n_iterations=400, snapshot_every=100, random_state=0)
    fast = cls(**kw, n_jobs=1).fit(X, y)
    assert fast.fit_info_["compiled_training"]
    monkeypatch.setattr(cls, "_compiled_training", False)
    slow = cls(**kw, n_jobs=1).fit(X, y)
    assert not slow.fit_info_["compiled_training"]
    assert fast.fit_info_["best_iteration"] == slow.fit_info_["best_iteration"]
    a, b = fast._raw(X), slow._raw(X)  # float32: rounding differs, the trajectory does not
    np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * np.abs(b).max())
