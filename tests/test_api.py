"""The script API: folds identical to the runner's, estimators from method YAMLs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import compose_config
from treebench import runner
from treebench.api import load_fold, make_estimator
from treebench.data import DataContext
from treebench.results.store import Store


def test_fold_is_the_runners_fold(tmp_path, outputs):
    cfg = compose_config(["method=cart", "dataset=wine", "seed=3"])
    (rec,) = runner.run_job(
        cfg, Store(tmp_path / "s"), DataContext(tmp_path, None, False), log=lambda *_: None
    )
    f = load_fold("wine", seed=3)
    assert f.split_id == rec["split_id"]
    assert (len(f.y_train), len(f.y_test)) == (rec["n_train"], rec["n_test"])
    est = make_estimator("cart", random_state=rec["method_seed"]).fit(f.X_train, f.y_train)
    assert np.isclose(est.score(f.X_test, f.y_test), rec["metrics"]["test_accuracy"])


def test_other_seed_other_split_and_overrides_apply(outputs):
    a, b = load_fold("iris", seed=0), load_fold("iris", seed=1)
    assert a.split_id != b.split_id
    std = load_fold("iris", overrides=["++dataset.preprocess.scale=standard"])
    assert np.allclose(std.X_train.mean(0), 0, atol=1e-9)


def test_estimator_takes_yaml_params_then_overrides():
    est = make_estimator("tnt_finetune", params={"N1": 1}, random_state=7)
    assert est.finetune_passes > 0 and est.N1 == 1 and est.random_state == 7


def test_make_estimator_takes_keyword_parameters():
    est = make_estimator("tnt", ccp_alpha=1e-3)
    assert est.get_params()["ccp_alpha"] == 1e-3
    assert make_estimator("cart", params={"max_depth": 3}, max_depth=4).max_depth == 4
    with pytest.raises(TypeError, match="Did you mean 'ccp_alpha'"):
        make_estimator("tnt", ccp_alpa=1e-3)


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return max(p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas")


def test_fit_from_python_runs_under_the_estimators_thread_limit(monkeypatch):
    """An estimator fitted outside the runner limits BLAS as a runner job of ``threads=n_jobs``.

    One thread without ``n_jobs``; the process's limit is back afterwards.
    """
    import sklearn.neural_network as nn
    from sklearn.base import BaseEstimator
    from threadpoolctl import threadpool_limits

    from treebench.methods._threads import limited

    seen = []
    fit = nn.MLPClassifier.fit
    monkeypatch.setattr(
        nn.MLPClassifier, "fit", lambda s, *a, **k: seen.append(_blas_threads()) or fit(s, *a, **k)
    )

    @limited
    class Threaded(BaseEstimator):
        def __init__(self, n_jobs=None):
            self.n_jobs = n_jobs

        def fit(self, X, y):
            seen.append(_blas_threads())
            return self

    X, y = np.random.default_rng(0).normal(size=(60, 3)), np.arange(60) % 2
    with threadpool_limits(limits=2):  # a busy process's limit, not the estimator's
        make_estimator("mlp", max_iter=2).fit(X, y)
        assert _blas_threads() == 2
    with threadpool_limits(limits=1):
        Threaded(n_jobs=2).fit(X, y)
        Threaded().fit(X, y)
        assert _blas_threads() == 1
    assert seen == [1, 2, 1]
