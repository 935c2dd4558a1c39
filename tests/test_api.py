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
