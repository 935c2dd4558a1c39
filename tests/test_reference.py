"""The size-matched reference fit (``reference=``).

Fitted on the method's fold with the method's size, recorded beside it, in the key only when set,
and its errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from tests.conftest import compose_config
from treebench.data import DataContext, load_dataset
from treebench.results import collect
from treebench.results.store import Store
from treebench.runner import Job, fit_fold, run_job

SAME_SIZE_CART = "reference={method: cart, match: {max_leaf_nodes: n_leaves}}"


def _run(outputs, overrides):
    cfg = compose_config(["threads=1", *overrides])
    store = Store(outputs / "store")
    (rec,) = run_job(cfg, store, DataContext(outputs / "data", None, False), log=lambda _: None)
    return rec


def test_reference_is_best_first_cart_with_the_models_leaves(outputs):
    rec = _run(
        outputs, ["method=tnt", "dataset=wine", "method.params.ccp_alpha=1e-2", SAME_SIZE_CART]
    )
    assert rec["status"] == "ok"
    ref = rec["reference"]
    leaves = rec["size"]["n_leaves"]
    assert ref["method"] == "cart" and ref["match"] == {"max_leaf_nodes": "n_leaves"}
    assert ref["params"] == {"max_leaf_nodes": leaves}
    assert ref["size"]["n_leaves"] == leaves  # best-first CART reaches the budget on wine

    # the same numbers as scikit-learn's tree fitted by hand on the method's fold
    job = Job.from_config(compose_config(["method=tnt", "dataset=wine", SAME_SIZE_CART]))
    ds = load_dataset(job.cfg.dataset, DataContext(outputs / "data", None, False))
    ff = fit_fold(job, job.split_fold(ds, 0), ds, threads=1)
    tree = DecisionTreeClassifier(max_leaf_nodes=leaves, random_state=rec["method_seed"])
    tree.fit(ff.X_train, ff.y_train)
    assert ref["metrics"]["test_accuracy"] == pytest.approx(
        np.mean(tree.predict(ff.X_test) == ff.y_test)
    )


def test_reference_is_in_the_key_only_when_set():
    def key(*o):
        return Job.from_config(compose_config(["method=cart", "dataset=iris", *o])).key(0)

    assert key("reference=null") == key()
    assert key(SAME_SIZE_CART) != key()


def test_reference_is_its_own_configuration_in_tables(outputs):
    _run(outputs, ["method=cart", "dataset=iris", "method.params.max_depth=2", SAME_SIZE_CART])
    _run(outputs, ["method=cart", "dataset=iris", "method.params.max_depth=2"])
    df = collect(outputs / "store")
    assert sorted(df["reference"].fillna("none")) == ["cart(max_leaf_nodes=n_leaves)", "none"]
    row = df[df["reference"].notna()].iloc[0]
    assert row["reference.n_leaves"] == row["n_leaves"] == 3  # one depth-2 branch is pure
    assert row["reference.test_accuracy"] == row["test_accuracy"]  # the same tree, grown best-first


def test_unknown_reference_method_names_the_choices():
    with pytest.raises(Exception, match="carts"):
        Job.from_config(
            compose_config(
                [
                    "method=cart",
                    "dataset=iris",
                    "reference={method: carts, match: {max_leaf_nodes: n_leaves}}",
                ]
            )
        )


def test_reference_match_on_a_missing_size_field_says_which(outputs):
    rec = _run(
        outputs,
        [
            "method=cart",
            "dataset=iris",
            "reference={method: cart, match: {max_leaf_nodes: leaves}}",
        ],
    )
    assert rec["status"] == "failed"
    assert "size fields ['leaves']" in rec["error"] and "n_leaves" in rec["error"]


GROWN = (
    "reference={method: cart, grow: {n_leaves: {max_leaf_nodes: n_leaves}, "
    "n_splits: {max_leaf_nodes: n_splits + 1}}}"
)


def test_grow_matches_each_method_by_its_own_size_measure(outputs):
    # a decision graph (size_measure n_splits) gets CART of as many split nodes, not leaves
    graph = _run(outputs, ["method=tnt", "dataset=wine", "method.params.ccp_alpha=1e-3", GROWN])
    ref = graph["reference"]
    assert ref["measure"] == "n_splits" and ref["match"] == {"max_leaf_nodes": "n_splits + 1"}
    assert ref["params"] == {"max_leaf_nodes": graph["size"]["n_splits"] + 1}
    assert ref["size"]["n_splits"] == graph["size"]["n_splits"]
    # a tree (n_leaves) keeps the leaf match
    tree = _run(outputs, ["method=cart", "dataset=wine", "method.params.max_depth=3", GROWN])
    assert tree["reference"]["measure"] == "n_leaves"
    assert tree["reference"]["size"]["n_leaves"] == tree["size"]["n_leaves"]
    # an ensemble (size_measure null) gets no same-size reference, and its key says so
    forest = _run(outputs, ["method=rf", "dataset=wine", "method.params.n_estimators=5", GROWN])
    assert "reference" not in forest
    plain = Job.from_config(compose_config(["method=rf", "dataset=wine"]))
    assert Job.from_config(compose_config(["method=rf", "dataset=wine", GROWN])).key(
        0
    ) == plain.key(0)


def test_grow_without_the_methods_measure_says_what_to_add():
    with pytest.raises(ValueError, match="size_measure 'n_splits' is not in reference.grow"):
        Job.from_config(
            compose_config(
                [
                    "method=tnt",
                    "reference={method: cart, grow: {n_leaves: {max_leaf_nodes: n_leaves}}}",
                ]
            )
        )
