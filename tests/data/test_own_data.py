"""A user's own table through ``dataset=csv``.

Loaded, keyed by content, and bad settings refused early.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from treebench.config import compose
from treebench.data import DataContext, load_dataset
from treebench.params import ParamError, check_params
from treebench.runner import job_keys


@pytest.fixture
def flowers(tmp_path):
    from sklearn.datasets import load_iris

    df = load_iris(as_frame=True).frame.rename(columns={"target": "species"})
    df["species"] = df["species"].map({0: "setosa", 1: "versicolor", 2: "virginica"})
    df["colour"] = np.where(df.index % 2 == 0, "red", "blue")  # a text feature
    df["row_id"] = np.arange(len(df))
    path = tmp_path / "flowers.csv"
    df.to_csv(path, index=False)
    return path


def _cfg(*overrides):
    return compose(["method=cart", "dataset=csv", *overrides])


def test_csv_loads_with_names_classes_and_categoricals(flowers, tmp_path):
    cfg = _cfg(f"dataset.path={flowers}", "dataset.target=species", "dataset.drop=[row_id]")
    check_params(cfg)
    assert cfg.dataset.name == "flowers"
    ds = load_dataset(cfg.dataset, DataContext(tmp_path / "data", None))
    part = ds.part("all")
    assert part.X.shape == (150, 5) and "row_id" not in part.X.columns
    assert ds.meta["classes"] == ["setosa", "versicolor", "virginica"]
    assert sorted(np.unique(part.y)) == [0, 1, 2]
    assert ds.categorical == ["colour"]
    assert ds.meta["feature_names"][:2] == ["sepal length (cm)", "sepal width (cm)"]


def test_parquet_and_regression(flowers, tmp_path):
    pq = tmp_path / "flowers.parquet"
    pd.read_csv(flowers).to_parquet(pq)
    cfg = _cfg(f"dataset.path={pq}", "dataset.target='petal width (cm)'", "dataset.task=regression")
    ds = load_dataset(cfg.dataset, DataContext(tmp_path / "data", None))
    assert ds.task == "regression" and ds.part("all").y.dtype == np.float64


def test_run_key_follows_the_file_content(flowers):
    args = (f"dataset.path={flowers}", "dataset.target=species")
    before = job_keys(_cfg(*args))
    assert job_keys(_cfg(*args)) == before
    flowers.write_text(flowers.read_text().replace("setosa", "Setosa"))
    assert job_keys(_cfg(*args)) != before  # edited data is a new job, never "done"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ((), "needs dataset.path=… dataset.target=…"),
        (("dataset.path=/nonexistent/x.csv", "dataset.target=y"), "no file /nonexistent/x.csv"),
    ],
)
def test_bad_settings_fail_while_planning(overrides, message):
    with pytest.raises(ParamError, match=message):
        check_params(_cfg(*overrides))


def test_wrong_target_column_suggests_the_close_name(flowers, tmp_path):
    from treebench.data.base import DataError

    cfg = _cfg(f"dataset.path={flowers}", "dataset.target=specis")
    with pytest.raises(DataError, match="Did you mean 'species'"):
        load_dataset(cfg.dataset, DataContext(tmp_path / "data", None))


def test_verify_leaves_out_the_own_data_configs():
    from treebench.catalog import needs_settings

    assert needs_settings("csv") and needs_settings("openml")
    assert not needs_settings("iris") and not needs_settings("isolet_openml")
