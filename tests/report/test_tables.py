"""Summary tables: one row per (dataset, method, configuration), each run key counted once."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import run_cli
from tests.report.records import frame, make_record
from treebench.report.console import summarize_sweep
from treebench.report.tables import config_columns, summary_table
from treebench.results import Store, collect

CART = {"max_depth": None, "min_samples_leaf": 1}


def _demo_records():
    """Return the demo's shape: cart and rf on digits, seeds 0-2, experiment ``demo``."""
    return [
        make_record(m, "digits", seed=s, experiment="demo", params=p, acc=a + 0.01 * s)
        for m, p, a in (("cart", CART, 0.80), ("rf", {"n_estimators": 100}, 0.95))
        for s in range(3)
    ]


def _rows(table):
    """Return ``(method, config) -> n`` of a summary table."""
    return {(r.method, r.config): r.n for r in table.itertuples()}


def test_a_record_tagged_by_two_experiments_counts_once(store_with):
    recs = _demo_records()
    out = store_with(recs)
    store = Store(out / "store")
    before = summary_table(collect(out / "store"))
    # `treebench run method=cart dataset=digits` finds seed 0's key done and only tags it
    assert store.add_experiment(recs[0]["key"], "adhoc")
    df = collect(out / "store")
    assert len(df) == 7  # the results table lists the shared fit under both experiments
    after = summary_table(df)
    assert _rows(after) == {("cart", ""): 3, ("rf", ""): 3}
    pd.testing.assert_frame_equal(after, before)
    pd.testing.assert_frame_equal(summary_table(collect(out / "store", experiment="demo")), before)
    adhoc = summary_table(collect(out / "store", experiment="adhoc"))
    assert _rows(adhoc) == {("cart", ""): 1}


def test_two_configs_of_one_method_are_two_rows():
    recs = _demo_records() + [
        make_record("cart", "digits", seed=s, params={**CART, "max_depth": 3}, acc=0.5)
        for s in range(2)
    ]
    table = summary_table(frame(recs))
    assert table.columns[:4].tolist() == ["dataset", "method", "config", "n"]
    # null sorts first; min_samples_leaf is the same in every cart run, so it is not shown
    assert table[["method", "config", "n"]].values.tolist() == [
        ["cart", "max_depth=null", 3],
        ["cart", "max_depth=3", 2],
        ["rf", "", 3],
    ]
    assert table["mean"].round(4).tolist() == [0.81, 0.5, 0.96]


def test_config_shows_every_differing_param_in_value_order():
    recs = [
        make_record(
            "rf", "d1", seed=s, params={"max_depth": d, "n_estimators": n, "bootstrap": True}
        )
        for d in (10, 3)
        for n in (50, 200)
        for s in range(2)
    ]
    recs.append(make_record("rf", "d2", params={"max_depth": 10, "n_estimators": 50}))
    table = summary_table(frame(recs))
    d1 = table[table["dataset"] == "d1"]
    assert d1["config"].tolist() == [  # numbers by value, not as text (3 before 10)
        "max_depth=3, n_estimators=50",
        "max_depth=3, n_estimators=200",
        "max_depth=10, n_estimators=50",
        "max_depth=10, n_estimators=200",
    ]
    assert d1["n"].tolist() == [2, 2, 2, 2]
    # one config on d2: nothing to tell apart there
    assert table[table["dataset"] == "d2"][["config", "n"]].values.tolist() == [["", 1]]


def test_status_counts_are_per_config():
    recs = [make_record("cart", "d", seed=s, params={"max_depth": 2}) for s in range(3)]
    recs += [make_record("cart", "d", seed=s, params={"max_depth": 4}) for s in range(2)]
    recs.append(make_record("cart", "d", seed=5, params={"max_depth": 4}, status="failed"))
    recs.append(make_record("cart", "d", seed=6, params={"max_depth": 2}, status="skipped"))
    df = pd.concat([frame(recs), frame(recs[:2])])  # repeated rows: counted once
    table = summary_table(df)
    assert table[["config", "n", "failed", "skipped"]].values.tolist() == [
        ["max_depth=2", 3, 0, 1],
        ["max_depth=4", 2, 1, 0],
    ]


def test_config_values_are_normalised_and_unhashables_allowed():
    df = pd.DataFrame(
        {
            "key": ["a", "b", "c", "d"],
            "dataset": "d",
            "method": "m",
            "param.depth": [3, 3.0, "3", None],
            "param.widths": [[1, 2], [1, 2], [1, 2], {"x": 1}],
        }
    )
    cfg = config_columns(df)
    assert cfg["config"].tolist() == [
        "depth=3, widths=[1, 2]",
        "depth=3, widths=[1, 2]",
        "depth=3, widths=[1, 2]",
        "depth=null, widths={'x': 1}",
    ]
    assert cfg["config_rank"].nunique() == 2


def test_sweep_summary_counts_its_own_keys_once(store_with, tmp_path):
    recs = _demo_records()
    other = make_record("cart", "digits", params={**CART, "max_depth": 3}, experiment="other")
    out = store_with([*recs, other])
    Store(out / "store").add_experiment(recs[0]["key"], "adhoc")
    sweep = tmp_path / "multirun" / "s1"
    for i, part in enumerate((recs[:3], recs[3:])):
        (sweep / f"{i}_job").mkdir(parents=True)
        (sweep / f"{i}_job" / "keys.json").write_text(json.dumps([r["key"] for r in part]))
    # a job listing a key another job also lists
    (sweep / "2_job").mkdir()
    (sweep / "2_job" / "keys.json").write_text(json.dumps([recs[0]["key"]]))
    summarize_sweep(sweep, out / "store")
    table = pd.read_csv(sweep / "summary.csv", keep_default_na=False)
    assert table[["method", "config", "n"]].values.tolist() == [["cart", "", 3], ["rf", "", 3]]
    results = pd.read_csv(sweep / "results.csv")
    assert len(results) == 6 and results["key"].is_unique


@pytest.mark.slow
def test_adhoc_runs_after_the_demo_leave_its_counts(tmp_path):
    """The issue's acceptance, on the demo restricted to cart and rf (gbdt alone takes ~30 s)."""
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out")}
    demo = [
        "run",
        "experiment=demo",
        "hydra.sweeper.params={method:'cart,rf',dataset:digits,seed:'0,1,2'}",
    ]
    res = run_cli(demo, tmp_path, env)
    assert res.returncode == 0, res.stderr[-2000:]
    store = tmp_path / "out" / "store"
    before = summary_table(collect(store))
    assert _rows(before) == {("cart", ""): 3, ("rf", ""): 3}
    for args in (["method.params.max_depth=3"], []):  # a second config, then the demo's own
        res = run_cli(["run", "method=cart", "dataset=digits", *args], tmp_path, env)
        assert res.returncode == 0, res.stderr[-2000:]
    after = summary_table(collect(store))
    assert _rows(after) == {
        ("cart", "max_depth=null"): 3,
        ("cart", "max_depth=3"): 1,
        ("rf", ""): 3,
    }
    same = after[after["config"] != "max_depth=3"].reset_index(drop=True)
    pd.testing.assert_series_equal(same["mean"], before["mean"])
    pd.testing.assert_frame_equal(summary_table(collect(store, experiment="demo")), before)
    res = run_cli(demo, tmp_path, env)  # nothing to launch; its summary lists the demo's keys
    assert res.returncode == 0, res.stderr[-2000:]
    last = sorted((tmp_path / "out" / "multirun").iterdir())[-1]
    table = pd.read_csv(last / "summary.csv", keep_default_na=False)
    assert table[["method", "config", "n"]].values.tolist() == [["cart", "", 3], ["rf", "", 3]]
