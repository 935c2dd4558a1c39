"""The shared routing kernel.

Numba and numpy backends agree with scikit-learn and with E2EDT's torch.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.tree import DecisionTreeClassifier

from treebench.methods import _routing as R

BACKENDS = ["numpy"] + (["numba"] if R.HAVE_NUMBA else [])


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X.astype(np.float32), y


@pytest.mark.parametrize("backend", BACKENDS)
def test_axis_matches_sklearn_apply(digits, backend):
    X, y = digits
    est = DecisionTreeClassifier(max_depth=10, random_state=0).fit(X[:1200], y[:1200])
    t = est.tree_
    node, steps = R.route_axis(
        X, t.feature, t.threshold, t.children_left, t.children_right, backend=backend
    )
    np.testing.assert_array_equal(node, est.apply(X))
    depth = est.decision_path(X).sum(1).A1 - 1  # splits on the path
    np.testing.assert_array_equal(steps, depth)


@pytest.mark.parametrize("backend", BACKENDS)
def test_axis_graph_with_shared_child(backend):
    # root splits on x0 <= 0; both children route into the shared node 3 (x1 <= 0 -> 4, else 5)
    feature = [0, 1, 1, 1, -1, -1]
    threshold = [0.0, 5.0, -5.0, 0.0, 0.0, 0.0]
    left = [1, 3, 4, 4, -1, -1]
    right = [2, 5, 3, 5, -1, -1]
    X = np.array([[-1, 0.5], [-1, 9], [1, -9], [1, 1], [1, -1]], dtype=np.float32)
    node, steps = R.route_axis(X, feature, threshold, left, right, backend=backend)
    np.testing.assert_array_equal(node, [5, 5, 4, 5, 4])
    np.testing.assert_array_equal(steps, [3, 2, 2, 3, 3])


def _random_oblique(rs, p, depth, n_trees, k=None):
    """Complete oblique trees in one node array; split ids shuffled (not node order)."""
    per = 2 ** (depth + 1) - 1
    n_inner = 2**depth - 1
    split, left, right, roots = [], [], [], []
    sid = rs.permutation(n_inner * n_trees)
    for t in range(n_trees):
        off = t * per
        roots.append(off)
        for v in range(per):
            inner = v < n_inner
            split.append(sid[t * n_inner + v] if inner else -1)
            left.append(off + 2 * v + 1 if inner else -1)
            right.append(off + 2 * v + 2 if inner else -1)
    S = n_inner * n_trees
    W = rs.randn(S, k or p).astype(np.float32)
    b = rs.randn(S).astype(np.float32)
    feat = None if k is None else np.stack([rs.choice(p, k, replace=False) for _ in range(S)])
    return W, b, np.array(split), np.array(left), np.array(right), np.array(roots), feat


@pytest.mark.parametrize("k", [None, 3])
def test_oblique_backends_agree_with_a_plain_loop(k):
    rs = np.random.RandomState(0)
    X = rs.randn(300, 7).astype(np.float32)
    W, b, split, left, right, roots, feat = _random_oblique(rs, 7, 4, 3, k)
    want = np.empty((len(X), len(roots)), dtype=np.int64)
    for i, x in enumerate(X.astype(np.float64)):
        for t, v in enumerate(roots):
            while split[v] >= 0:
                s = split[v]
                xs = x if feat is None else x[feat[s]]
                v = right[v] if xs @ W[s].astype(np.float64) + b[s] > 0 else left[v]
            want[i, t] = v
    for backend in BACKENDS:
        node, steps = R.route_oblique(
            X, W, b, split, left, right, roots, feat=feat, backend=backend
        )
        np.testing.assert_array_equal(node, want)
        assert (steps == 4).all()


def test_bad_backend():
    with pytest.raises(ValueError, match="backend"):
        R.route_axis(np.zeros((1, 1)), [-1], [0.0], [-1], [-1], backend="gpu")


def test_e2edt_predict_matches_torch_routing(digits):
    pytest.importorskip("torch")
    from treebench.methods.e2edt import E2EDFClassifier, E2EDTClassifier, core

    X, y = digits
    for est in (
        E2EDTClassifier(max_depth=4, epochs=1, finetune_epochs=1, random_state=0),
        E2EDFClassifier(
            n_estimators=2,
            max_depth=3,
            max_features=0.5,
            epochs=1,
            finetune_epochs=0,
            random_state=0,
        ),
    ):
        est.fit(X[:600], y[:600])
        torch, Xt = est._tensor(X)
        ref = core.route_hard_torch(est.bank_, est.struct_, Xt).numpy()
        got = est.apply(X)
        # float64 accumulation vs torch's float32 sum: only a split value within rounding of 0
        # may differ
        assert (got == ref).mean() > 0.999


@pytest.mark.parametrize("depth", [1, 3, 6])
def test_hinge_compiled_route_matches_torch(depth):
    torch = pytest.importorskip("torch")
    from treebench.methods.hinge import net as H

    if H.numba is None:
        pytest.skip("numba not installed")
    g = torch.Generator().manual_seed(0)
    forest = H.HingeForest(7, n_trees=5, depth=depth, n_outputs=3, generator=g)
    z = torch.randn(400, 7, generator=g)
    z[:5] = forest.thresholds.detach()[0, 0]  # exact ties |r| = 0 at the root of tree 0
    forest.train()
    ref = forest.route(z)
    out_ref = forest(z)
    forest.eval()
    got = forest.route(z)
    for a, b in zip(got, ref, strict=True):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(forest(z), out_ref)
