"""Checkpoints of long fits.

An interrupted fit resumed from its checkpoint equals an uninterrupted one.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_iris, make_classification

from treebench.methods.checkpoint import Checkpoint, checkpointing, current
from treebench.methods.progress import reporting

pytest.importorskip("torch")

#: fit_info_ fields that are wall times (differ between any two fits)
TIMES = ("train_seconds", "seconds_per_1000_iterations")


class Interrupt(KeyboardInterrupt):
    pass


def _stop_at(phase, k):
    def cb(p, done, total):
        if p == phase and done >= k:
            raise Interrupt(f"{p} {done}")

    return cb


def _data():
    X, y = load_iris(return_X_y=True)
    return X.astype(np.float32), y


def _same_fit(a, b, X):
    ia = {k: v for k, v in a.fit_info_.items() if k not in TIMES}
    ib = {k: v for k, v in b.fit_info_.items() if k not in TIMES}
    assert ia == ib
    assert a.eval_curve_ == b.eval_curve_
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    for (na, ta), (nb, tb) in zip(
        a.net_.state_dict().items(), b.net_.state_dict().items(), strict=True
    ):
        assert na == nb
        assert ta.equal(tb), na


def test_outside_a_context_there_is_no_checkpoint():
    assert current() is None
    with checkpointing(None):
        assert current() is None


def test_the_seconds_of_every_attempt_add_up_across_resumes(tmp_path):
    """Each save stores the attempt's seconds plus those of the attempts before it.

    So after two interruptions the third attempt knows what both spent up to their last saves.
    """
    ident = {"est": "x"}
    path = tmp_path / "k.pt"
    first = Checkpoint(path, every=0, spent=lambda: {"cpu_seconds": 3.0, "wall_seconds": 4.0})
    assert first.load(ident) is None and first.earlier == {}
    first.save({"it": 1}, ident)
    second = Checkpoint(path, every=0, spent=lambda: {"cpu_seconds": 1.5, "wall_seconds": 2.0})
    assert second.load(ident) == {"it": 1}
    assert second.earlier == {"cpu_seconds": 3.0, "wall_seconds": 4.0}
    second.save({"it": 2}, ident)
    third = Checkpoint(path, every=0)
    assert third.load(ident) == {"it": 2}
    assert third.earlier == {"cpu_seconds": 4.5, "wall_seconds": 6.0}
    assert Checkpoint(path).load({"est": "other"}) is None  # another fit's seconds are not read


@pytest.mark.parametrize(
    "params",
    [
        {"optimizer": "adagrad"},  # the compiled UCI step (AdaGrad accumulators in the trainer)
        {"optimizer": "adam", "selection": "test"},  # torch path, HingeAdam state, eval curve
        {"optimizer": "adagrad", "_compiled_training": False},  # torch Adagrad
    ],
    ids=["compiled", "adam-test", "torch-adagrad"],
)
def test_hinge_resumes_bit_identical(tmp_path, params):
    from treebench.methods.hinge.estimator import HingeForestClassifier

    X, y = _data()
    params = dict(params)
    compiled = params.pop("_compiled_training", True)

    def make():
        est = HingeForestClassifier(
            n_estimators=4,
            max_depth=3,
            n_features=8,
            n_iterations=120,
            snapshot_every=20,
            batch_size=16,
            random_state=3,
            **params,
        )
        est._compiled_training = compiled
        return est

    fit_kw = {"eval_set": (X, y)} if params.get("selection") == "test" else {}
    ref = make().fit(X, y, **fit_kw)

    ck = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck), reporting(_stop_at("iterations", 80)):
        with pytest.raises(Interrupt):
            make().fit(X, y, **fit_kw)
    assert ck.n_saves == 3 and ck.path.exists()  # at 20, 40, 60; stopped before saving at 80

    ck2 = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck2):
        resumed = make().fit(X, y, **fit_kw)
    assert ck2.resumed_from == {"iterations": 60}
    _same_fit(ref, resumed, X)


def test_hinge_ignores_a_checkpoint_of_other_params_or_data(tmp_path):
    from treebench.methods.hinge.estimator import HingeForestClassifier

    X, y = _data()
    kw = dict(n_estimators=3, max_depth=3, n_features=4, n_iterations=60, snapshot_every=20)
    ck = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck), reporting(_stop_at("iterations", 40)):
        with pytest.raises(Interrupt):
            HingeForestClassifier(random_state=0, **kw).fit(X, y)
    for est, Xf in [
        (HingeForestClassifier(random_state=1, **kw), X),  # other params
        (HingeForestClassifier(random_state=0, **kw), X + 1),  # other data
    ]:
        ck2 = Checkpoint(tmp_path / "k.pt", every=0)
        with checkpointing(ck2):
            est.fit(Xf, y)
        assert ck2.resumed_from is None


def test_rate_limit(tmp_path):
    ck = Checkpoint(tmp_path / "k.pt", every=3600)
    assert not ck.due()
    assert Checkpoint(tmp_path / "k.pt", every=0).due()


@pytest.mark.parametrize(
    "name,task",
    [
        ("OneStageClassifier", "classification"),
        ("OneStageGumbelClassifier", "classification"),  # architecture noise per epoch
        ("OneStageRegressor", "regression"),
    ],
)
def test_onestage_resumes_bit_identical(tmp_path, name, task):
    from treebench.methods.onestage import estimator as mod

    # data on which every epoch still moves the losses (on iris the classifier plateaus at once)
    X, y = make_classification(
        n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    if task == "regression":
        X, y = X[:, 1:], X[:, 0]

    def make():
        # verbose: history_ holds every epoch's losses, so a resumed run that diverges after the
        # best epoch is caught too
        return getattr(mod, name)(
            max_depth=3, max_epochs=8, patience=100, random_state=5, verbose=1
        )

    ref = make().fit(X, y)
    ck = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck), reporting(_stop_at("epochs", 5)):
        with pytest.raises(Interrupt):
            make().fit(X, y)
    assert ck.n_saves == 4
    ck2 = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck2):
        resumed = make().fit(X, y)
    assert ck2.resumed_from == {"epochs": 4}
    assert ref.fit_info_ == resumed.fit_info_
    assert ref.history_ == resumed.history_ and len(ref.history_) == 8
    for attr in ("W_", "gamma_", "values_", "keep_"):
        np.testing.assert_array_equal(getattr(ref, attr), getattr(resumed, attr))
    np.testing.assert_array_equal(ref.predict(X), resumed.predict(X))


def test_runner_resumes_a_killed_run_and_records_it(tmp_path, monkeypatch):
    """Through the runner.

    A run interrupted after a checkpoint is resumed by the rerun, which records ``resumed`` and the
    metrics and fit_info of an uninterrupted run; the checkpoint goes once the record is written.
    """
    from tests.conftest import compose_config
    from treebench.data import DataContext
    from treebench.results.store import Store
    from treebench.runner import run_job

    monkeypatch.setenv("TREEBENCH_OUTPUTS", str(tmp_path))
    ov = [
        "method=hinge_forest",  # the Table 3 setting: Adam, summed trees, last state
        "method.params.optimizer=adam",
        "method.params.aggregation=sum",
        "method.params.learning_rate=0.005",
        "method.params.selection=last",
        "method.params.validation_fraction=0.0",
        "dataset=iris",
        "method.params.n_estimators=5",
        "method.params.max_depth=3",
        "method.params.n_iterations=200",
        "method.params.snapshot_every=50",
    ]
    ctx = DataContext(tmp_path / "data", None, False)

    def run(store, extra=(), cb=None):
        cfg = compose_config([*ov, *extra])
        with reporting(cb):
            return run_job(cfg, store, ctx, log=lambda s: 0)

    (ref,) = run(Store(tmp_path / "ref"))
    assert "resumed" not in ref and "checkpoints" not in ref  # 120 s: no save in a short fit

    store = Store(tmp_path / "store")
    with pytest.raises(Interrupt):
        run(store, ["checkpoint_every=0"], _stop_at("iterations", 150))
    (ck_file,) = (store.root / "_checkpoints").glob("*.pt")
    assert ck_file.stem == ref["key"]
    (rec,) = run(store, ["checkpoint_every=0"])
    assert rec["resumed"]["from"] == {"iterations": 100}
    # the killed attempt's seconds up to its save at 100 count in the record's times
    earlier = rec["resumed"]["earlier"]
    assert set(earlier) == {"cpu_seconds", "wall_seconds"} and earlier["wall_seconds"] > 0
    assert rec["wall_seconds"] > earlier["wall_seconds"]
    assert rec["cpu_seconds"] >= earlier["cpu_seconds"]
    assert rec["checkpoints"]["saves"] == 1  # at 150 (none at the end)
    assert not ck_file.exists()
    assert rec["metrics"] == ref["metrics"]
    times = ("train_seconds", "seconds_per_1000_iterations")
    assert {k: v for k, v in rec["info"].items() if k not in times} == {
        k: v for k, v in ref["info"].items() if k not in times
    }

    # checkpoint_every=null: no checkpoint, a killed run starts over
    store2 = Store(tmp_path / "store2")
    with pytest.raises(Interrupt):
        run(store2, ["checkpoint_every=null"], _stop_at("iterations", 150))
    assert not (store2.root / "_checkpoints").exists()


def _count_to(phase, k):
    """Return a progress callback raising :class:`Interrupt` at the ``k``-th report of ``phase``."""
    seen = [0]

    def cb(p, done, total):
        if p == phase:
            seen[0] += 1
            if seen[0] >= k:
                raise Interrupt(f"{p} call {seen[0]}")

    return cb


def _same_e2ed(a, b, X):
    skip = ("greedy_seconds", "finetune_seconds")
    assert {k: v for k, v in a.fit_info_.items() if k not in skip} == {
        k: v for k, v in b.fit_info_.items() if k not in skip
    }
    for pa, pb in zip(a.bank_.params(), b.bank_.params(), strict=True):
        assert pa.equal(pb)
    assert a.gamma_.equal(b.gamma_) and a.pi_.equal(b.pi_)
    np.testing.assert_array_equal(a.apply(X), b.apply(X))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


@pytest.mark.parametrize(
    "name,params,phase,k,saves,at",
    [
        # level-wise: saved after levels 1 and 2, stopped in level 3's report
        ("E2EDTClassifier", {"max_depth": 4}, "greedy levels", 3, 2, {"greedy_splits": 3}),
        # best-first to 6 leaves: saved after each round of splits
        (
            "E2EDTClassifier",
            {"max_depth": None, "max_leaves": 6},
            "greedy leaves",
            3,
            2,
            {"greedy_splits": 2},
        ),
        # a forest finetuned one tree per group: saved after 2 greedy levels and the first tree
        (
            "E2EDFClassifier",
            {"n_estimators": 3, "max_depth": 2, "max_features": 3},
            "finetune epochs",
            9,
            3,
            {"finetune_groups": 1},
        ),
    ],
    ids=["levels", "best-first", "forest-finetune"],
)
def test_e2ed_resumes_bit_identical(tmp_path, monkeypatch, name, params, phase, k, saves, at):
    from treebench.methods.e2edt import estimator as mod

    monkeypatch.setattr(mod, "_GROUP_CELLS", 1)  # one tree per Finetune group
    X, y = make_classification(
        n_samples=240, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    X = X.astype(np.float32)

    def make():
        return getattr(mod, name)(epochs=2, batch_size=32, random_state=4, **params)

    ref = make().fit(X, y)
    ck = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck), reporting(_count_to(phase, k)):
        with pytest.raises(Interrupt):
            make().fit(X, y)
    assert ck.n_saves == saves
    ck2 = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck2):
        resumed = make().fit(X, y)
    assert ck2.resumed_from == at
    _same_e2ed(ref, resumed, X)
    # another random_state is another fit: the checkpoint is ignored
    ck3 = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck3):
        getattr(mod, name)(epochs=2, batch_size=32, random_state=5, **params).fit(X, y)
    assert ck3.resumed_from is None


@pytest.mark.parametrize(
    "params,phase,k,computed",
    [
        # forest teacher, alpha by CV: stopped after 2 of 10 fold-pair teachers (25 jackknife fits
        # and 2 pair fits saved), resumed with the 8 other pairs only
        ({"teacher": "rf", "n_repeats": 5}, "teacher fits (fold pairs)", 2, 8),
        # DNN teacher: all 6 teachers saved, stopped after 3 of 5 alpha-CV folds; resumed with
        # the 2 other folds' trees only (no teacher refitted)
        (
            {"teacher": "mlp", "teacher_params": {"epochs": 2, "milestones": [1]}},
            "alpha folds",
            3,
            0,
        ),
        # holdout alpha selection: stopped after 4 of the grid's candidates
        ({"teacher": "rf", "alpha_selection": "holdout"}, "alpha candidates", 4, 0),
    ],
    ids=["forest-pairs", "dnn-alpha-folds", "holdout"],
)
def test_redt_resumes_bit_identical(tmp_path, monkeypatch, params, phase, k, computed):
    from sklearn.datasets import load_digits

    from treebench.methods.redt import estimator as mod

    X, y = load_digits(return_X_y=True)
    X, y = X[:400].astype(np.float32), y[:400]
    params = {"teacher_params": {"n_estimators": 5}, "random_state": 3, **params}

    def make():
        return mod.ReDTClassifier(**params)

    ref = make().fit(X, y)
    mod._memo_clear()  # forest soft labels are memoised per process: make the fits recompute
    ck = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck), reporting(_count_to(phase, k)):
        with pytest.raises(Interrupt):
            make().fit(X, y)
    assert ck.n_saves > 0
    mod._memo_clear()
    fits = []
    real = mod._fit_proba
    monkeypatch.setattr(mod, "_fit_proba", lambda *a: fits.append(1) or real(*a))
    ck2 = Checkpoint(tmp_path / "k.pt", every=0)
    with checkpointing(ck2):
        resumed = make().fit(X, y)
    assert ck2.resumed_from == {"units": ck.n_saves}
    assert len(fits) == computed
    assert resumed.alpha_ == ref.alpha_ and resumed.n_nodes_ == ref.n_nodes_
    assert getattr(resumed, "alpha_scores_", None) == getattr(ref, "alpha_scores_", None)
    np.testing.assert_array_equal(resumed.soft_labels_, ref.soft_labels_)
    np.testing.assert_array_equal(resumed.predict_proba(X), ref.predict_proba(X))
