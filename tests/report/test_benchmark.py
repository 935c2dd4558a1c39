"""The benchmark page's tables on synthetic records with known answers; its determinism.

The tables are treebench/report/benchmark.py's.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.report.records import frame, make_record
from treebench.report import benchmark as bm
from treebench.report import stats as st

DATASETS = ["d1", "d2", "d3", "d4", "d5", "d6"]
SEEDS = [0, 1, 2, 3, 4]
# accuracy per method: rf best, tnt a bit above its same-size CART, cart equal to its reference
BASE = {"rf": 0.90, "gbdt": 0.88, "tnt": 0.85, "cart": 0.80}
PLAN = {"suites": {"toy": DATASETS}, "methods": list(BASE), "seeds": SEEDS}


def _rec(method, ds, seed, acc, ref_acc=None, splits=10):
    trees = 1 if method in ("cart", "tnt") else 20
    r = make_record(
        method=method,
        dataset=ds,
        seed=seed,
        experiment="benchmark",
        acc=acc,
        n_splits=splits,
        n_trees=trees,
    )
    r["overrides"] = [f"method={method}", f"dataset={ds}", f"seed={seed}"]
    r["cpu_seconds"] = 36.0
    if ref_acc is not None:
        measure = "n_splits" if method == "tnt" else "n_leaves"
        r["reference"] = {
            "method": "cart",
            "measure": measure,
            "match": {"max_leaf_nodes": "n_splits + 1" if method == "tnt" else "n_leaves"},
            "metrics": {"test_accuracy": ref_acc, "train_accuracy": 1.0},
            "size": {"n_leaves": r["size"]["n_leaves"], "n_splits": splits},
            "fit_seconds": 0.01,
        }
    # 4 tuning candidates scored 0.70, 0.80, 0.75, 0.90 in the first halving round
    r["tuning"] = {
        "strategy": "halving_random",
        "n_candidates": 4,
        "cv": {"n_splits": 3},
        "candidates": {"mean": [0.7, 0.8, 0.75, 0.9, 0.92], "iter": [0, 0, 0, 0, 1]},
    }
    return r


def _records():
    rng = np.random.default_rng(0)
    out = []
    for i, ds in enumerate(DATASETS):
        for s in SEEDS:
            noise = 0.002 * rng.standard_normal(4)
            out.append(_rec("rf", ds, s, BASE["rf"] + i * 0.01 + noise[0], splits=4000))
            out.append(_rec("gbdt", ds, s, BASE["gbdt"] + i * 0.01 + noise[1], splits=700))
            acc = BASE["tnt"] + i * 0.01 + noise[2]
            out.append(_rec("tnt", ds, s, acc, ref_acc=acc - 0.05 + 0.001 * s, splits=12))
            acc = BASE["cart"] + i * 0.01 + noise[3]
            out.append(_rec("cart", ds, s, acc, ref_acc=acc + 0.0005 * (s - 2), splits=30))
    out.append(
        make_record(method="tnt", dataset="d6", seed=9, experiment="benchmark", status="failed")
    )
    return out


@pytest.fixture(scope="module")
def ev():
    recs = _records()
    return bm.evaluate(frame(recs), recs, PLAN)


def test_rows_take_each_methods_own_size_measure_and_family(ev):
    rows = ev["rows"]
    tnt = rows[(rows["method"] == "tnt") & (rows["status"] == "ok")].iloc[0]
    cart = rows[rows["method"] == "cart"].iloc[0]
    rf = rows[rows["method"] == "rf"].iloc[0]
    assert (tnt["measure"], tnt["size"], tnt["family"]) == ("n_splits", 12, "graph")
    assert (cart["measure"], cart["size"], cart["family"]) == ("n_leaves", 31, "greedy_tree")
    assert (
        not isinstance(rf["measure"], str) and np.isnan(rf["size"]) and rf["family"] == "ensemble"
    )


def test_vs_reference_is_the_corrected_t_test_with_holm(ev):
    vs = ev["vs_reference"]
    assert set(vs["method"]) == {"cart", "tnt"}  # ensembles get no same-size claim
    tnt = vs[vs["method"] == "tnt"]
    assert (tnt["outcome"] == bm.WIN).all() and len(tnt) == 6
    # d1's test by hand: differences 0.05 - 0.001 s over 5 seeds of 100 train / 50 test rows
    d = 0.05 - 0.001 * np.array(SEEDS)
    one = st.corrected_ttest(d, 100, 50)
    row = tnt[tnt["dataset"] == "d1"].iloc[0]
    assert row["t"] == pytest.approx(one["t"]) and row["p"] == pytest.approx(one["p"])
    assert row["p_holm"] == pytest.approx(st.holm(tnt["p"].to_numpy())[0])
    assert (vs[vs["method"] == "cart"]["outcome"] == bm.TIE).all()


def test_across_datasets_ranks_and_tests(ev):
    toy = ev["suites"]["toy"]
    assert toy["covered"] == 6 and toy["planned"] == 6 and len(toy["table"]) == 6
    tests = toy["tests"]
    assert tests["ranks"].to_dict() == {"rf": 1.0, "gbdt": 2.0, "tnt": 3.0, "cart": 4.0}
    fr = st.iman_davenport(toy["table"])
    assert tests["friedman"]["F"] == fr["F"] and fr["chi2"] == pytest.approx(18.0)
    pairs = tests["pairs"]
    assert len(pairs) == 6
    rf_cart = pairs[(pairs["a"] == "cart") & (pairs["b"] == "rf")].iloc[0]
    assert rf_cart["r"] == -1.0 and rf_cart["p_worse"] > 0.99
    assert rf_cart["mean_diff"] == pytest.approx(-0.10, abs=0.005)


def test_summary_per_method(ev):
    s = ev["summary"].set_index("method")
    assert s.loc["tnt", "N"] == 6 and s.loc["tnt", bm.WIN] == 6
    assert s.loc["tnt", "p_better"] > 0.95  # 5 points above its CART on every dataset
    assert s.loc["cart", "p_equiv"] > 0.95  # within the 1-point ROPE of its own reference
    assert s.loc["rf", "mean_rank"] == 1.0 and np.isnan(s.loc["rf", "p_better"])
    assert s.loc["rf", "cpu_hours"] == pytest.approx(6 * 5 * 36 / 3600)


def test_ensembles_against_rf(ev):
    e = ev["suites"]["toy"]["ensembles"]
    assert e["method"].tolist() == ["gbdt"]
    assert e["mean_diff"].iloc[0] == pytest.approx(-0.02, abs=0.003)
    assert e["n_splits"].iloc[0] == 700 and e["p_worse"].iloc[0] > 0.9


def test_pareto_front_frequency(ev):
    freq = ev["pareto"].set_index("method")
    # tnt (12 splits) is the smallest; rf (4000) the best; cart (30) is dominated by tnt
    assert freq.loc["tnt", "share"] == 1.0 and freq.loc["rf", "share"] == 1.0
    assert freq.loc["cart", "on_front"] == 0 and freq.loc["gbdt", "N"] == 6


def test_expected_best_of_k_is_the_mean_over_search_orders():
    import itertools

    scores = [0.7, 0.8, 0.75, 0.9]
    for k in range(1, 5):
        by_hand = np.mean([max(c) for c in itertools.combinations(scores, k)])
        assert bm.expected_best(scores, k) == pytest.approx(by_hand)
    with pytest.raises(ValueError):
        bm.expected_best(scores, 5)


def test_budget_curves_read_the_first_halving_round(ev):
    b = ev["budget"][ev["budget"]["method"] == "rf"].set_index("k")
    assert b["runs"].iloc[0] == 30 and list(b.index) == [1, 2, 3, 4]
    assert b.loc[1, "regret"] == pytest.approx(0.9 - np.mean([0.7, 0.8, 0.75, 0.9]))
    assert b.loc[4, "regret"] == pytest.approx(0.0)


def test_page_is_deterministic_and_labels_coverage(ev, tmp_path):
    a = bm.benchmark_markdown(ev, "test records", figures_dir=tmp_path / "a")
    b = bm.benchmark_markdown(ev, "test records", figures_dir=tmp_path / "b")
    assert a == b
    main = a["benchmark.md"]
    for part in (
        "from test records",
        "**6 of 6 datasets**",
        "6 have every\nmethod at every seed",
        "Iman–Davenport F_F",
        "![critical-difference diagram](benchmark/cd_toy.png)",
        "### Decision graphs",
        "### Ensembles against RF",
        "| 6/0/0 ",  # tnt's wins over its same-size CART
        "| 0/6/0 ",  # cart ties its own
        "RuntimeError: boom",
        "## Cells that failed",
    ):
        assert part in main, part
    assert "## d1 (classification)" in a["benchmark/datasets.md"]
    png = "cd_toy.png"
    assert (tmp_path / "a" / png).read_bytes() == (tmp_path / "b" / png).read_bytes()


def test_an_empty_ledger_gives_a_page_that_says_so():
    ev = bm.evaluate(frame([]), [], PLAN)
    page = bm.benchmark_markdown(ev, "nothing")["benchmark.md"]
    assert "**0 of 6 datasets**" in page and "no records yet" in page
