"""The runner end to end on bundled data: records, skip-done, failures, skips, seeds."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from tests.conftest import compose_config
from treebench.data import DataContext
from treebench.methods import base as mbase
from treebench.results.store import Store
from treebench.runner import Job, derive_seed, run_job


def _run(outputs, overrides, log=None):
    cfg = compose_config(overrides)
    store = Store(outputs / "store")
    ctx = DataContext(outputs / "data", None, False)
    lines = []
    recs = run_job(cfg, store, ctx, log=log or lines.append)
    return recs, lines, store


def test_record_fields(outputs):
    (rec,), _, store = _run(outputs, ["method=cart", "dataset=digits"])
    assert rec["status"] == "ok"
    assert 0.7 < rec["metrics"]["test_accuracy"] <= 1.0
    assert rec["metrics"]["train_accuracy"] == 1.0
    assert rec["n_train"] + rec["n_test"] == 1797 and rec["n_features"] == 64
    assert rec["size"]["n_splits"] == rec["size"]["n_leaves"] - 1
    assert rec["fit_seconds"] > 0 and rec["predict_seconds"] > 0
    assert 0 < rec["cpu_seconds"] < rec["wall_seconds"] * 4  # used by the run: at most its cores
    prov = rec["provenance"]
    assert prov["treebench_version"] and prov["packages"]["scikit-learn"] and prov["host"]
    assert rec["split_id"].startswith("holdout")
    assert store.get(rec["key"]) == rec | {}  # stored as returned


def test_rerun_skips_done(outputs):
    recs, _, _ = _run(outputs, ["method=cart", "dataset=iris"])
    assert len(recs) == 1
    recs2, lines, _ = _run(outputs, ["method=cart", "dataset=iris"])
    assert recs2 == [] and "skipped, done" in lines[0]


def test_fit_shared_by_two_experiments_counts_in_both(outputs):
    from treebench.results import collect

    (rec,), _, store = _run(outputs, ["method=cart", "dataset=iris", "experiment_name=first"])
    again, lines, _ = _run(outputs, ["method=cart", "dataset=iris", "experiment_name=second"])
    assert again == [] and "skipped, done" in lines[0]  # same run key: not fitted twice
    assert store.get(rec["key"])["also_experiments"] == ["second"]
    for name in ("first", "second"):
        (row,) = collect(outputs / "store", experiment=name).to_dict("records")
        assert row["key"] == rec["key"]


def test_a_full_sweep_counts_a_reduced_run_of_the_same_job_as_full(outputs):
    from treebench.results import collect

    base = ["method=cart", "dataset=iris", "experiment_name=exp"]
    (rec,), _, store = _run(outputs, [*base, "profile=reduced"])
    assert rec["profile"] == "reduced"
    assert collect(outputs / "store")["profile"].tolist() == ["reduced"]
    again, lines, _ = _run(outputs, [*base, "profile=full"])
    assert again == [] and "skipped, done" in lines[0]  # the same key: not fitted again
    assert store.get(rec["key"])["full_plan_of"] == ["exp"]
    assert collect(outputs / "store")["profile"].tolist() == ["full"]


def test_same_command_same_numbers(tmp_path):
    a, _, _ = _run(tmp_path / "a", ["method=rf", "dataset=wine", "seed=3"])
    b, _, _ = _run(tmp_path / "b", ["method=rf", "dataset=wine", "seed=3"])
    assert a[0]["metrics"] == b[0]["metrics"] and a[0]["split_id"] == b[0]["split_id"]
    c, _, _ = _run(tmp_path / "c", ["method=rf", "dataset=wine", "seed=4"])
    assert c[0]["split_id"] != a[0]["split_id"]


def test_split_does_not_depend_on_method(outputs):
    (a,), _, _ = _run(outputs, ["method=cart", "dataset=wine"])
    (b,), _, _ = _run(outputs, ["method=gbdt", "dataset=wine"])
    assert a["split_id"] == b["split_id"] and a["method_seed"] != b["method_seed"]


def test_failure_record_is_not_done(outputs):
    (rec,), _, store = _run(outputs, ["method=cart", "dataset=iris", "method.params.max_depth=-1"])
    assert rec["status"] == "failed" and "max_depth" in rec["error"] and rec["traceback"]
    assert not store.is_done(rec["key"])
    (again,), _, _ = _run(outputs, ["method=cart", "dataset=iris", "method.params.max_depth=-1"])
    assert again["status"] == "failed"  # retried, not skipped


def test_kfold_runs_every_fold(outputs):
    recs, _, _ = _run(outputs, ["method=cart", "dataset=iris", "split=kfold5"])
    assert [r["fold"] for r in recs] == [0, 1, 2, 3, 4]
    assert len({r["split_id"] for r in recs}) == 5 and all(r["n_test"] == 30 for r in recs)
    recs, _, _ = _run(outputs, ["method=cart", "dataset=iris", "split=kfold5", "fold=2"])
    assert recs == []  # fold 2 is done already


class _ClassifierOnly(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.full(len(X), self.classes_[0])


def test_wrong_task_is_a_recorded_skip(outputs, monkeypatch):
    entry = mbase.MethodEntry("cart", "test", {"classification": _ClassifierOnly})
    monkeypatch.setitem(mbase._REGISTRY, "cart", entry)
    (rec,), _, store = _run(outputs, ["method=cart", "dataset=diabetes"])
    assert rec["status"] == "skipped" and "does not support regression" in rec["reason"]
    assert store.is_done(rec["key"])


def test_regression_metrics(outputs):
    (rec,), _, _ = _run(outputs, ["method=gbdt", "dataset=diabetes"])
    assert set(rec["metrics"]) == {"train_r2", "test_r2", "train_rmse", "test_rmse"}
    assert 0.1 < rec["metrics"]["test_r2"] < 0.8


def test_unknown_method_name_lists_choices():
    with pytest.raises(KeyError, match="Choices: .*cart"):
        mbase.get_entry("cartt")


def test_derive_seed_is_stable():
    assert derive_seed(0, "iris", 0, "cart") == derive_seed(0, "iris", 0, "cart")
    assert derive_seed(0, "iris", 0, "cart") != derive_seed(0, "iris", 1, "cart")
    assert derive_seed(1, "iris") != derive_seed(0, "iris")


def test_run_key_depends_on_params_not_on_order():
    k1 = Job.from_config(compose_config(["method.params.max_depth=3"])).key(0)
    k2 = Job.from_config(compose_config(["method.params.max_depth=4"])).key(0)
    assert k1 != k2
