"""Refitting a stored run (``show``/``export``) from its record's overrides, checked by run key."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from tests.conftest import REPO, compose_config, run_cli
from tests.data.tb_data_helpers import MIRROR
from treebench.api import load_fold
from treebench.inspect import load_graph
from treebench.inspect.explain import rules_text
from treebench.inspect.show import RefitError, record_job, refit_overrides, refit_record
from treebench.runner import Job

_CRX = None if MIRROR is None else MIRROR / "uci" / "crx" / "crx.data"
needs_crx = pytest.mark.skipif(
    _CRX is None or not _CRX.is_file(), reason="crx is not in the data mirror (TREEBENCH_MIRROR)"
)

# the refit's own line: "exported graph test_accuracy=0.8333, record test_accuracy=0.8333"
_ACC = re.compile(r"exported graph test_accuracy=([0-9.]+), record test_accuracy=([0-9.]+)")


def _records(out) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "store").glob("*/[!.]*.json"))]


def _refit_accuracy(stdout: str) -> tuple[float, float]:
    """(refitted, recorded) test accuracy printed by ``show``/``export``."""
    m = _ACC.search(" ".join(stdout.split()))  # rich may wrap the line
    assert m, stdout
    return float(m.group(1)), float(m.group(2))


@pytest.fixture(scope="module")
def crx_ordinal(tmp_path_factory):
    """Return a CART run on crx with ordinal categoricals.

    15 features; the config's one-hot gives 46.
    """
    tmp = tmp_path_factory.mktemp("crx")
    env = {"TREEBENCH_OUTPUTS": str(tmp / "outputs"), "TREEBENCH_MIRROR": str(MIRROR)}
    args = ["run", "method=cart", "dataset=crx", "dataset.preprocess.categorical=ordinal"]
    # seed 0: a refit with the config's one-hot encoding also scores differently (0.826, not 0.833)
    r = run_cli([*args, "method.params.max_depth=4", "seed=0", "threads=1"], cwd=tmp, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    (rec,) = _records(tmp / "outputs")
    assert rec["status"] == "ok"
    return tmp, env, rec


@needs_crx
def test_export_refits_a_dataset_override(crx_ordinal):
    tmp, env, rec = crx_ordinal
    assert "dataset.preprocess.categorical=ordinal" in rec["overrides"]
    assert rec["n_features"] == 15
    r = run_cli(["export", rec["key"], "-o", str(tmp / "m.json")], cwd=tmp, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got, want = _refit_accuracy(r.stdout)
    assert want == pytest.approx(rec["metrics"]["test_accuracy"], abs=5e-5)
    assert got == want
    assert load_graph(tmp / "m.json").n_features == 15


@needs_crx
def test_refit_record_reproduces_the_run_in_process(crx_ordinal, monkeypatch):
    _, env, rec = crx_ordinal
    monkeypatch.setenv("TREEBENCH_MIRROR", env["TREEBENCH_MIRROR"])
    assert load_fold("crx", seed=0).X_train.shape[1] == 46  # the config's one-hot encoding
    fit = refit_record(rec)
    est, X_tr, y_tr, X_te, y_te = fit.est, fit.X_train, fit.y_train, fit.X_test, fit.y_test
    assert X_tr.shape == (rec["n_train"], 15) and len(y_te) == rec["n_test"]
    assert float(est.score(X_te, y_te)) == rec["metrics"]["test_accuracy"]
    assert float(est.score(X_tr, y_tr)) == rec["metrics"]["train_accuracy"]
    assert est.random_state == rec["method_seed"]
    assert len(fit.feature_names) == 15


@needs_crx
def test_record_without_overrides_refuses_when_its_key_differs(crx_ordinal):
    tmp, env, rec = crx_ordinal
    old = {k: v for k, v in rec.items() if k != "overrides"}  # as written before this field
    (tmp / "old.json").write_text(json.dumps(old))
    r = run_cli(["export", str(tmp / "old.json"), "-o", str(tmp / "old_m.json")], cwd=tmp, env=env)
    assert r.returncode == 1
    msg = " ".join(r.stderr.split())
    assert f"record {rec['key']} predates stored overrides" in msg
    assert "'categorical': 'onehot'" in msg  # what the fallback would have used
    assert "treebench run method=cart dataset=crx seed=0 fold=0 save_model=true" in msg
    assert not (tmp / "old_m.json").exists()


def test_record_without_overrides_refits_when_its_key_matches(tmp_path, outputs):
    r = run_cli(["run", "method=cart", "dataset=iris", "seed=1", "threads=1"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    (rec,) = _records(outputs)
    del rec["overrides"]
    fit = refit_record(rec)
    assert float(fit.est.score(fit.X_test, fit.y_test)) == rec["metrics"]["test_accuracy"]
    assert fit.feature_names[2] == "petal length (cm)"  # the dataset's own names
    assert fit.class_names == ["setosa", "versicolor", "virginica"]


def _fake_record(overrides: list[str], with_overrides: bool = True) -> dict:
    """Return a record of the job composed from ``overrides``.

    No fit: the key check comes first.
    """
    import treebench

    job = Job.from_config(compose_config(overrides))
    rec = {
        "key": job.key(0),
        "method": job.method,
        "params": job.params,
        "dataset": job.dataset,
        "task": job.cfg.dataset.task,
        "seed": job.seed,
        "fold": 0,
        "split": str(job.split),
        "experiment": "adhoc",
        "profile": "full",
        "provenance": {"treebench_version": treebench.__version__},
    }
    if with_overrides:
        rec["overrides"] = list(overrides)
    return rec


def test_old_record_refusal_names_the_difference():
    rec = _fake_record(["dataset=iris", "+dataset.preprocess.scale=standard"], False)
    with pytest.raises(RefitError, match="predates stored overrides") as exc:
        record_job(rec)
    assert "preprocess = {'_target_': 'treebench.data.preprocess.Preprocessor'}" in str(exc.value)
    rec["provenance"]["treebench_version"] = "0.0.1"
    with pytest.raises(RefitError, match=r"treebench version: run '0.0.1'"):
        record_job(rec)


def test_overrides_that_compose_another_job_are_refused():
    rec = _fake_record(["dataset=iris", "method=cart", "method.params.max_depth=3"])
    assert record_job(rec).key(0) == rec["key"]
    rec["overrides"] = ["dataset=iris", "method=cart", "method.params.max_depth=4"]
    with pytest.raises(RefitError, match=r"not the record's .*params: run .*'max_depth': 3"):
        record_job(rec)
    rec["overrides"] = ["dataset=iris", "method=no_such_method"]
    with pytest.raises(RefitError, match="do not compose"):
        record_job(rec)


def test_refit_overrides_keep_the_job_and_drop_hydra_and_environment():
    given = [
        "dataset=crx",
        "dataset.preprocess.categorical=ordinal",
        "seeds=[0,1,2]",
        "+method.params.selection=test",
        "split.test_size=0.25",
        "experiment=redt_alpha",
        "profile=reduced",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "threads=1",
        "save_model=true",
        "paths.data=/elsewhere",
        "data.mirror=/mirror",
        "seed=4",
        "fold=0",
    ]
    assert refit_overrides(given) == [
        "dataset=crx",
        "dataset.preprocess.categorical=ordinal",
        "+method.params.selection=test",
        "split.test_size=0.25",
        "experiment=redt_alpha",
        "profile=reduced",
    ]


# An experiment with explicit rows crossed with params: a dataset override and a seeds list in one
# row, a split override in the other, and the experiment's own split.
_EXPERIMENT = """# @package _global_
# refit test: rows x params
experiment_name: refit_probe
profile: reduced
split:
  _target_: treebench.data.splits.Holdout
  test_size: 0.25
hydra:
  mode: MULTIRUN
  sweeper:
    rows:
      - dataset=crx dataset.preprocess.categorical=ordinal seeds=[0,1]
      - dataset=iris split.test_size=0.5
    params:
      method: cart
      method.params.max_depth: 2,4
"""


@needs_crx
def test_experiment_rows_and_params_refit(tmp_path):
    conf = tmp_path / "conf"
    shutil.copytree(REPO / "treebench" / "conf", conf)
    (conf / "experiment" / "refit_probe.yaml").write_text(_EXPERIMENT)
    out = tmp_path / "outputs"
    env = {
        "TREEBENCH_OUTPUTS": str(out),
        "TREEBENCH_CONF_DIR": str(conf),
        "TREEBENCH_MIRROR": str(MIRROR),
    }
    r = run_cli(["run", "experiment=refit_probe", "threads=1"], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    recs = _records(out)
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)

    def pick(dataset, seed, depth):
        (rec,) = [
            r
            for r in recs
            if (r["dataset"], r["seed"], r["params"]["max_depth"]) == (dataset, seed, depth)
        ]
        return rec

    crx = pick("crx", 1, 4)  # second seed of a seeds=[0,1] row
    assert "seeds=[0,1]" in crx["overrides"] and "experiment=refit_probe" in crx["overrides"]
    r = run_cli(["show", crx["key"], "-o", str(tmp_path / "crx")], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got, want = _refit_accuracy(r.stdout)
    assert got == want and want == pytest.approx(crx["metrics"]["test_accuracy"], abs=5e-5)
    assert load_graph(tmp_path / "crx" / "model.json").n_features == crx["n_features"] == 15

    iris = pick("iris", 0, 2)
    assert iris["n_test"] == 75  # split.test_size=0.5 of the row over the experiment's 0.25
    r = run_cli(["export", iris["key"], "-o", str(tmp_path / "iris.json")], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    got, want = _refit_accuracy(r.stdout)
    assert got == want and want == pytest.approx(iris["metrics"]["test_accuracy"], abs=5e-5)
    assert load_graph(tmp_path / "iris.json").n_features == 4


def test_saved_and_refitted_models_use_the_dataset_names(tmp_path, outputs):
    from treebench.graph.model import GraphEnsemble

    r = run_cli(
        ["run", "method=cart", "dataset=iris", "save_model=true", "threads=1"], cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr[-2000:]
    (rec,) = _records(outputs)
    saved = GraphEnsemble.load(rec["model_path"])
    assert saved.feature_names[3] == "petal width (cm)"
    assert saved.class_names == ["setosa", "versicolor", "virginica"]
    assert saved.classes == [0, 1, 2]  # predictions keep the labels the records are scored on
    assert "then class setosa" in rules_text(saved)
