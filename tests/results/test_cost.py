"""The dry run's cost model: core seconds of a method's runs fitted against their training rows."""

from __future__ import annotations

import math

import pytest

from treebench.results.cost import CostModel, method_choice


def _rec(method, n_train, n_features, seconds, tuned=True, choice=None, status="ok"):
    r = {
        "method": method,
        "task": "classification",
        "status": status,
        "n_train": n_train,
        "n_features": n_features,
        "cpu_seconds": seconds,
        "overrides": [f"method={choice or method}", "seed=0"],
    }
    if tuned:
        r["tuning"] = {"strategy": "halving_random"}
    return r


def test_a_power_law_in_rows_and_features_is_recovered():
    # seconds = 0.001 * n^1.5 * d^0.5 on six shapes
    shapes = [(100, 4), (300, 8), (1000, 4), (3000, 16), (10000, 8), (500, 32)]
    recs = [_rec("rf", n, d, 1e-3 * n**1.5 * d**0.5) for n, d in shapes]
    m = CostModel.from_records(recs)
    assert m.predict("rf", "classification", True, 2000, 10) == pytest.approx(
        1e-3 * 2000**1.5 * math.sqrt(10)
    )
    # untuned runs, other tasks and other method configs are their own kinds
    assert m.predict("rf", "classification", False, 2000, 10) is None
    assert m.predict("rf", "regression", True, 2000, 10) is None


def test_few_shapes_give_the_cost_per_training_row():
    recs = [_rec("tnt", 100, 4, 2.0), _rec("tnt", 100, 4, 4.0)]
    recs.append(_rec("tnt", 100, 4, 99.0, status="failed"))  # failed runs do not count
    recs.append(_rec("tnt", 200, 4, 50.0, choice="tnt_finetune"))  # another method config
    m = CostModel.from_records(recs)
    assert m.predict("tnt", "classification", True, 1000, 4) == pytest.approx(
        1000 * math.exp((math.log(0.02) + math.log(0.04)) / 2)
    )
    assert m.predict("tnt_finetune", "classification", True, 400, 4) == pytest.approx(100.0)


def test_method_choice_reads_the_method_override():
    assert method_choice(["dataset=x", "method=tnt_finetune"]) == "tnt_finetune"
    assert method_choice(["++method=cart"]) == "cart"
    assert method_choice(None) is None and method_choice(["seed=1"]) is None
