"""Tuning (``tune=``).

The search-space grammar, tuning on the training part only, the record, run keys with and without
tuning, and the plan-time errors.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from tests.conftest import compose_config, run_cli
from treebench.data import DataContext, load_dataset
from treebench.data.base import Part
from treebench.methods import base as mbase
from treebench.methods.baselines.estimator import CARTClassifier
from treebench.params import ParamError, check_params
from treebench.report.tables import summary_table
from treebench.resources import job_resources
from treebench.results import collect
from treebench.results.store import Store
from treebench.runner import Job, fit_fold, run_job, tune_settings
from treebench.tuning import SearchSpaceError, dimension, fit_equivalents, search_space

# ----------------------------------------------------------------------------- grammar


def _draws(dim, n=400):
    rng = np.random.RandomState(0)
    return [dim.rvs(random_state=rng) for _ in range(n)]


def test_int_range_includes_both_ends_and_draws_python_ints():
    vals = _draws(dimension("k", {"low": 1, "high": 3, "int": True}))
    assert {type(v) for v in vals} == {int}
    assert set(vals) == {1, 2, 3}


def test_log_int_range_favours_small_values():
    vals = np.array(_draws(dimension("k", {"low": 1, "high": 100, "int": True, "log": True})))
    assert vals.min() == 1 and vals.max() <= 100
    assert 0.4 < np.mean(vals < 10) < 0.6  # log-uniform: [1, 10) holds about half the mass


def test_float_ranges_uniform_and_log():
    lin = np.array(_draws(dimension("a", {"low": 0.5, "high": 1.0})))
    assert lin.min() >= 0.5 and lin.max() <= 1.0 and 0.7 < lin.mean() < 0.8
    draws = _draws(dimension("c", {"low": 1e-5, "high": 1e-1, "log": True}))
    assert {type(v) for v in draws} == {float}
    log = np.array(draws)
    assert log.min() >= 1e-5 and log.max() <= 1e-1
    assert 0.2 < np.mean(log < 1e-4) < 0.3  # one decade of four


def test_lists_are_choices_and_null_drops_a_dimension():
    space = search_space({"max_depth": [3, None], "ccp_alpha": None})
    assert space == {"max_depth": [3, None]}


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ([], "empty list"),
        (0.1, "not a dimension"),
        ({"low": 1}, "needs low and high"),
        ({"low": 1, "high": 2, "step": 1}, "takes only"),
        ({"low": 0, "high": 1, "log": True}, "low > 0"),
        ({"low": 2, "high": 1}, "must be below high"),
        ({"low": 1.5, "high": 4, "int": True}, "integer low and high"),
    ],
)
def test_grammar_errors_name_the_dimension(spec, match):
    with pytest.raises(SearchSpaceError, match=match) as exc:
        dimension("ccp_alpha", spec)
    assert "search.ccp_alpha" in str(exc.value)


# ----------------------------------------------------------------------------- never the test part


class _Spy(CARTClassifier):
    """CART asking for the test part (as RHF's selection=test does) and noting what each fit saw."""

    seen: list = []

    def wants_eval_set(self):
        return True

    def fit(self, X, y, sample_weight=None, check_input=True, eval_set=None):
        _Spy.seen.append((np.asarray(X).copy(), eval_set))
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


def _wine_fold(overrides, tmp_path):
    cfg = compose_config(["method=cart", "dataset=wine", "threads=1", *overrides])
    job = Job.from_config(cfg)
    ds = load_dataset(cfg.dataset, DataContext(tmp_path, None, False))
    return job, ds, job.split_fold(ds, 0)


def _poisoned(fold):
    """Return the fold with noise for test features and permuted test labels."""
    rng = np.random.RandomState(1)
    X = np.asarray(fold.test.X, dtype=float)
    noise = rng.normal(size=X.shape) * X.std(axis=0) * 10
    return replace(fold, test=Part(X=noise, y=rng.permutation(fold.test.y)))


def _but_time(tuning: dict) -> dict:
    return {k: v for k, v in tuning.items() if k != "seconds"}


def test_tuning_never_reads_the_test_part(monkeypatch, tmp_path):
    monkeypatch.setitem(
        mbase._REGISTRY, "cart", mbase.MethodEntry("cart", "spy", {"classification": _Spy})
    )
    monkeypatch.setattr(_Spy, "seen", [])
    job, ds, fold = _wine_fold([], tmp_path)
    ff = fit_fold(job, fold, ds, threads=1)
    # untuned, the spy gets the test part (its wants_eval_set)
    assert ff.eval_set_in_fit and _Spy.seen[-1][1] is not None

    job, ds, fold = _wine_fold(["tune=small"], tmp_path)
    _Spy.seen.clear()
    clean = fit_fold(job, fold, ds, threads=1)
    fits = list(_Spy.seen)
    _Spy.seen.clear()
    bad = fit_fold(job, _poisoned(fold), ds, threads=1)

    assert not clean.eval_set_in_fit and all(ev is None for _, ev in fits + _Spy.seen)
    # every row any candidate or the refit saw is a training row
    train_rows = {r.tobytes() for r in np.asarray(clean.X_train)}
    assert all(r.tobytes() in train_rows for X, _ in fits for r in X)
    assert len(fits) == len(_Spy.seen) == 8 * 3 + 3 * 3 + 1  # 8 then 3 candidates x 3 folds, refit
    # the poisoned test part changes nothing the search chose or scored
    assert not np.allclose(clean.X_test, bad.X_test)
    assert _but_time(clean.tuning) == _but_time(bad.tuning)
    assert clean.tuning["candidates"]["mean"] == bad.tuning["candidates"]["mean"]
    np.testing.assert_array_equal(clean.est.predict(clean.X_test), bad.est.predict(clean.X_test))


# ----------------------------------------------------------------------------- the record


def _run(outputs, overrides):
    cfg = compose_config(overrides)
    store = Store(outputs / "store")
    (rec,) = run_job(cfg, store, DataContext(outputs / "data", None, False), log=lambda _: None)
    return rec, store


def test_tuned_run_records_the_search(outputs):
    rec, store = _run(outputs, ["method=cart", "dataset=iris", "tune=small", "threads=1"])
    assert rec["status"] == "ok" and store.get(rec["key"]) == rec
    tun = rec["tuning"]
    assert tun["strategy"] == "halving_random" and tun["search_cv"] == "HalvingRandomSearchCV"
    assert tun["n_candidates"] == 8 and tun["factor"] == 3
    assert tun["cv"] == {
        "splitter": "StratifiedKFold",
        "n_splits": 3,
        "shuffle": True,
        "random_state": rec["method_seed"],
        "on": "training part",
    }
    assert tun["scoring"] == "accuracy" and tun["n_failed"] == 0
    assert set(tun["best_params"]) == {"max_depth", "min_samples_leaf", "ccp_alpha"}
    assert tun["best_params"]["max_depth"] in [3, 4, 6, 8, 12, None]
    assert 1 <= tun["best_params"]["min_samples_leaf"] <= 20
    # the refitted model is the chosen configuration
    for k, v in tun["best_params"].items():
        assert rec["resolved_params"][k] == repr(v)
    cand = tun["candidates"]
    assert len(cand["params"]) == len(cand["mean"]) == len(cand["std"]) == 8 + 3
    assert cand["iter"] == [0] * 8 + [1] * 3
    assert cand["n_resources"][-1] == 3 * cand["n_resources"][0] <= rec["n_train"]
    last = [m for m, i in zip(cand["mean"], cand["iter"], strict=True) if i == 1]
    assert tun["best_score"] == max(last) and 0.8 < tun["best_score"] <= 1.0
    assert cand["params"][cand["mean"].index(max(last), 8)] == tun["best_params"]
    # fit_seconds = the refit of the chosen configuration, within the search's wall time
    assert 0 < rec["fit_seconds"] < tun["seconds"]
    assert rec["eval_set_in_fit"] is False
    # the results table: tuning.* columns, the candidates stay in the record
    (row,) = collect(outputs / "store").to_dict("records")
    assert row["tuning.strategy"] == "halving_random" and row["tuning.n_candidates"] == 8
    assert row["tuning.best_score"] == tun["best_score"] and "tuning.candidates" not in row
    # summaries keep a tuned run apart from the untuned run of the same job
    _run(outputs, ["method=cart", "dataset=iris", "threads=1"])
    table = summary_table(collect(outputs / "store"))
    assert sorted(table["config"]) == ["tune=halving_random(8, cv=3)", "tune=null"]
    assert list(table["n"]) == [1, 1]


def test_regression_tuning_scores_the_first_metric_in_its_own_units(outputs):
    over = ["method=cart", "dataset=diabetes", "tune=small", "threads=1"]
    rec, _ = _run(outputs, [*over, "metrics.regression=[rmse,r2]", "tune.strategy=random"])
    tun = rec["tuning"]
    assert tun["search_cv"] == "RandomizedSearchCV" and tun["factor"] is None
    assert tun["cv"]["splitter"] == "KFold" and tun["scoring"] == "rmse"
    assert len(tun["candidates"]["mean"]) == 8 and "iter" not in tun["candidates"]
    # rmse: positive, and the best is the smallest mean inner rmse
    assert tun["best_score"] == min(tun["candidates"]["mean"]) and 40 < tun["best_score"] < 90


def test_grid_scores_every_combination_of_the_lists(outputs):
    """tune=grid: GridSearchCV over the search: block's lists, the grid's size as the budget."""
    over = ["method=mlp", "dataset=iris", "tune=grid", "threads=1", "method.params.max_iter=30"]
    over += ["method.search.hidden_layer_sizes=[5,10]", "method.search.alpha=[1e-4,1e-2]"]
    rec, _ = _run(outputs, [*over, "~method.search.learning_rate_init"])
    tun = rec["tuning"]
    assert tun["search_cv"] == "GridSearchCV" and tun["n_candidates"] == 4 and tun["factor"] is None
    assert sorted(map(tuple, (sorted(p.items()) for p in tun["candidates"]["params"]))) == [
        (("alpha", a), ("hidden_layer_sizes", h)) for a in (1e-4, 1e-2) for h in (5, 10)
    ]
    assert tun["best_score"] == max(tun["candidates"]["mean"])
    assert rec["resolved_params"]["hidden_layer_sizes"] == repr(
        tun["best_params"]["hidden_layer_sizes"]
    )
    grid = {"strategy": "grid", "cv": 3, "search": {"C": [0.1, 1.0, 10.0]}}
    assert fit_equivalents(grid) == pytest.approx(3 * 3 * 2 / 3 + 1)


def test_cli_tune_small_on_wine_records_choice_and_time(tmp_path):
    out = tmp_path / "out"
    env = {"TREEBENCH_OUTPUTS": str(out), "TREEBENCH_LEDGER": "off"}
    res = run_cli(["run", "method=cart", "dataset=wine", "tune=small", "threads=1"], tmp_path, env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "tuned" in res.stdout and "HalvingRandomSearchCV" in res.stdout
    (path,) = out.glob("store/*/*.json")
    rec = json.loads(path.read_text())
    assert set(rec["tuning"]["best_params"]) == {"max_depth", "min_samples_leaf", "ccp_alpha"}
    assert rec["tuning"]["seconds"] > rec["fit_seconds"] > 0
    assert "tune=small" in rec["overrides"]


# ----------------------------------------------------------------------------- run keys


def _key(*overrides):
    return Job.from_config(compose_config(["method=cart", "dataset=iris", *overrides])).key(0)


def test_key_has_tune_settings_only_when_tuning():
    base = _key()
    assert _key("tune=none") == base
    assert _key("method.search.ccp_alpha=[0.0]") == base  # the search space is unused untuned
    tuned = _key("tune=small")
    assert tuned != base
    assert len({tuned, _key("tune=medium"), _key("tune=small", "tune.strategy=random")}) == 3
    assert _key("tune=small", "method.search.ccp_alpha=[0.0]") != tuned  # another space


def test_cluster_timeout_counts_the_search_fits():
    untuned = job_resources(compose_config(["method=cart", "dataset=iris"]), n_runs=2)
    tuned = job_resources(compose_config(["method=cart", "dataset=iris", "tune=small"]), n_runs=2)
    # small: 8 candidates x 3 folds on 1/3 of the rows (2/3 of it per fold), 3 x 3 on all, a refit
    assert fit_equivalents(tune_settings(compose_config(["tune=small"]))) == pytest.approx(
        8 * 2 / 3 + 6 + 1
    )
    assert tuned["timeout_min"] == math.ceil(untuned["timeout_min"] * (8 * 2 / 3 + 6 + 1))
    assert tuned["mem_gb"] == untuned["mem_gb"]


# ----------------------------------------------------------------------------- errors before work


def _check(*overrides):
    check_params(compose_config(["dataset=iris", *overrides]))


def test_plan_time_errors_name_the_fix():
    _check("method=cart", "tune=small")
    _check("method=cart", "method.search.max_depth=abc")  # unused untuned: not checked
    with pytest.raises(ParamError, match=r"has no search: block.*docs/tuning.md.*without tune="):
        _check("method=cart", "tune=small", "~method.search")
    with pytest.raises(ParamError, match=r"no parameter 'max_dept' to search\. Did you mean"):
        _check("method=cart", "tune=small", "+method.search.max_dept=[2,3]")
    with pytest.raises(ParamError, match=r"search\.ccp_alpha: a log range needs low > 0"):
        _check("method=tnt", "tune=small", "method.search.ccp_alpha={low:0,high:1,log:true}")
    with pytest.raises(ParamError, match=r"search\.max_depth: The 'max_depth' parameter"):
        _check("method=cart", "tune=small", "method.search.max_depth=[-1,3]")
    with pytest.raises(
        ParamError, match=r"search\.min_samples_leaf: tune\.strategy=grid needs a list"
    ):
        _check("method=cart", "tune=grid")  # cart's block has ranges
    _check("method=linear_svm", "tune=grid")
    with pytest.raises(ParamError, match="tuning never sees it"):
        _check("method=hinge_forest", "tune=small", "method.params.selection=test")


def test_cli_fails_before_work_and_suggests_a_budget(tmp_path):
    env = {"TREEBENCH_OUTPUTS": str(tmp_path / "out"), "TREEBENCH_LEDGER": "off"}
    res = run_cli(["run", "method=cart", "dataset=iris", "tune=smal"], tmp_path, env)
    assert res.returncode == 2 and "Unknown tune 'smal'" in res.stdout + res.stderr
    assert "Did you mean 'small'" in res.stdout + res.stderr
    res = run_cli(
        ["run", "method=cart", "dataset=iris", "tune=small", "~method.search"], tmp_path, env
    )
    assert res.returncode == 2 and "has no search: block" in res.stderr
    assert not list((tmp_path / "out").glob("store/*/*.json"))


def test_a_tuned_records_panel_shows_the_fitted_params(capsys):
    from treebench.results.console import print_records

    rec = {
        "method": "cart", "dataset": "iris", "seed": 0, "fold": 0, "status": "ok", "key": "k",
        "params": {"max_depth": None, "ccp_alpha": 0.0},
        "tuning": {"best_params": {"max_depth": 3}, "scoring": "accuracy", "best_score": 0.9,
                   "search_cv": "GridSearchCV", "n_candidates": 4, "seconds": 1.0,
                   "cv": {"n_splits": 3, "splitter": "StratifiedKFold"}},
    }  # fmt: skip
    print_records([rec])
    out = " ".join(capsys.readouterr().out.split())
    assert 'params (tuned) │ {"max_depth": 3, "ccp_alpha": 0.0}' in out
    assert '"max_depth": null' not in out


class _Reporting(CARTClassifier):
    """CART that reports an epoch per fit, as iterative methods do."""

    def fit(self, X, y, **kw):
        from treebench.methods.progress import report

        report("epochs", 1, 1)
        return super().fit(X, y, **kw)


@pytest.mark.parametrize("n_jobs", [1, 2])
@pytest.mark.parametrize("strategy", ["random", "halving_random"])
def test_tuning_progress_counts_candidates_k_of_n(strategy, n_jobs):
    """The bar counts finished candidates of the search (per round for halving).

    From joblib workers too; the candidates' own epochs never reach it.
    """
    from sklearn.datasets import load_iris

    from treebench.methods.progress import reporting
    from treebench.tuning import CandidateProgress, tune_fit

    X, y = load_iris(return_X_y=True)
    tune = {"strategy": strategy, "n_candidates": 6, "cv": 3, "factor": 2}
    tune["search"] = {"max_depth": {"low": 1, "high": 8, "int": True}}
    seen = []
    with reporting(lambda *a: seen.append(a)):
        tune_fit(
            _Reporting(), X, y, tune, task="classification", metric="accuracy",
            random_state=0, n_jobs=n_jobs,
        )  # fmt: skip
    refit = [CandidateProgress.REFIT, "refit epochs"]
    phases = [p for p in dict.fromkeys(p for p, _, _ in seen) if p not in refit]
    if strategy == "random":
        assert phases == ["candidates"]
    else:  # 6 candidates, then 3, then 2 (min_resources="exhaust")
        assert phases == ["round 1 candidates", "round 2 candidates", "round 3 candidates"]
    for phase in phases:
        got = [(k, n) for p, k, n in seen if p == phase]
        n = got[0][1]
        assert len(got) == 3 * n  # one report per finished inner fit
        assert [k for k, _ in got] == sorted(k for k, _ in got) and got[-1] == (n, n)
        assert {m for _, m in got} == {n}
    # the candidates' own epochs never reach the bar; the final refit's do, after its own line
    assert [r for r in seen if r[0] == "epochs"] == []
    after = seen[seen.index((CandidateProgress.REFIT, 0, 1)) :]
    assert after == [(CandidateProgress.REFIT, 0, 1), ("refit epochs", 1, 1)] + [
        (CandidateProgress.REFIT, 1, 1)
    ]
