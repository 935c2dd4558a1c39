"""Decision-graph export: JSON round trip for every method, DOT, rules, importances, CLI show."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import load_digits

from tests.conftest import run_cli
from tests.methods.test_contract import CASES, smoke_estimator
from treebench.inspect import GraphEnsemble, export_graph, load_graph
from treebench.inspect.explain import feature_importances, rules_text
from treebench.inspect.render import dot_binary, draw_matplotlib, render, to_dot
from treebench.methods.base import discover

# the tree methods (the others say why they have no graph: ``no_graph``)
TREE_CASES = [(n, t) for n, t in CASES if not discover()[n].classes[t].no_graph]

# Fast settings on top of each method's smoke_params: the round trip checks the export, not the fit.
FAST = {
    "rf": {"n_estimators": 5},
    "bagged_cart": {"n_estimators": 4},
    "gbdt": {"n_estimators": 10},
    "adaboost": {"n_estimators": 10},
    "tnt": {"N2": 2},
    "tnt_bagging": {"n_estimators": 3, "N2": 2},
    "tnt_adaboost": {"n_estimators": 3, "N2": 2},
    "redt": {
        "n_repeats": 1,
        "alpha": 0.5,
        "teacher_params": {"n_estimators": 10},
        "backend": "numpy",
    },
    "e2edt": {"max_depth": 3, "epochs": 3},
    "e2edf": {"n_estimators": 2, "max_depth": 3, "epochs": 2, "max_features": 2},
    "onestage": {"max_depth": 3, "max_epochs": 5},
    "onestage_joint": {"max_depth": 3, "max_epochs": 5},
    "onestage_gumbel": {"max_depth": 3, "max_epochs": 5},
    "sdt": {"max_depth": 3, "max_epochs": 5},
    "hinge_forest": {"n_iterations": 200},
    "hinge_fern": {"n_iterations": 200},
}


def fast_estimator(name, task, **extra):
    """Return the contract test's smoke estimator, with FAST's settings on top."""
    return smoke_estimator(name, task, **{**FAST.get(name, {}), **extra})


def test_every_method_exports():
    """Every tree method exports its graph; a model that is not a tree says so in ``no_graph``."""
    for name, entry in discover().items():
        for cls in entry.classes.values():
            assert callable(getattr(cls, "to_graph", None)) != bool(cls.no_graph), (
                f"{name}: {cls.__name__} needs to_graph or (not a tree) a no_graph reason"
            )


@pytest.mark.parametrize(("name", "task"), TREE_CASES)
def test_json_round_trip_predicts_identically(name, task, data):
    X, y = data[task]
    est = fast_estimator(name, task).fit(X, y)
    text = export_graph(est, X, y).to_json()
    json.loads(text)  # plain JSON
    model = GraphEnsemble.from_json(text)
    assert model.to_json() == text  # stable serialisation
    if task == "classification":
        np.testing.assert_array_equal(model.predict(X), est.predict(X))
        np.testing.assert_allclose(
            model.predict_proba(X), est.predict_proba(X), rtol=1e-5, atol=1e-6
        )
    else:
        np.testing.assert_allclose(model.predict(X), est.predict(X), rtol=1e-5, atol=1e-4)
    imp, names = feature_importances(model)
    assert len(imp) == len(names)
    if imp.sum() > 0:
        assert imp.sum() == pytest.approx(1.0) and (imp >= 0).all()


def test_string_labels_round_trip(data):
    X, y = data["classification"]
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    for name in ("adaboost", "tnt_adaboost", "cart"):
        est = fast_estimator(name, "classification").fit(X, labels)
        model = GraphEnsemble.from_json(est.to_graph().to_json())
        np.testing.assert_array_equal(model.predict(X), est.predict(X))


def test_gz_save_load(tmp_path, data):
    X, y = data["classification"]
    est = fast_estimator("rf", "classification").fit(X, y)
    p = export_graph(est, X, y).save(tmp_path / "m.json.gz")
    np.testing.assert_array_equal(load_graph(p).predict(X), est.predict(X))


def test_importances_match_sklearn(data):
    X, y = data["classification"]
    for name in ("cart", "rf", "gbdt", "adaboost"):
        est = fast_estimator(name, "classification").fit(X, y)
        imp, _ = feature_importances(est.to_graph())
        np.testing.assert_allclose(imp, est.feature_importances_, atol=1e-12)


def test_annotated_gain_equals_tree_statistics(data):
    for task in ("classification", "regression"):
        X, y = data[task]
        est = fast_estimator("cart", task, max_depth=4).fit(X, y)
        model = est.to_graph()
        g = model.graphs[0]
        want = g.gain.copy()
        g.n_samples = g.gain = None
        model.annotate(X, y)
        np.testing.assert_allclose(g.gain, want, rtol=1e-9, atol=1e-9)


def test_onestage_importance_weights_by_abs_omega(data):
    X, y = data["classification"]
    X = np.column_stack([X, np.full(len(X), 3.0)])  # a constant column gets no importance
    est = fast_estimator("onestage", "classification").fit(X, y)
    model = export_graph(est, X, y)
    g = model.graphs[0]
    inner = np.flatnonzero(g.left >= 0)
    assert len(inner) >= 1
    want = np.zeros(X.shape[1])
    for i in inner:
        a = np.abs(g.weight[i].astype(float))
        a[-1] = 0.0
        want += g.gain[i] * a / a.sum()
    imp, _ = feature_importances(model)
    np.testing.assert_allclose(imp, want / want.sum(), rtol=1e-9)
    assert imp[-1] == 0.0


@pytest.fixture(scope="module")
def tnt_dag(data):
    X, y = data["classification"]
    for c in (0.01, 0.003, 0.03, 1e-3):
        est = fast_estimator("tnt", "classification", ccp_alpha=c).fit(X, y)
        model = export_graph(est, X, y)
        if (model.graphs[0].parents() > 1).any():
            return model
    pytest.skip("no TnT graph with a shared child on iris")


def test_dot_draws_shared_children_once(tnt_dag):
    g = tnt_dag.graphs[0]
    dot = to_dot(tnt_dag)
    shared = np.flatnonzero(g.parents() > 1)
    for s in shared:
        assert dot.count(f"  n{s} [") == 1  # one node statement
        assert dot.count(f"-> n{s} ") == g.parents()[s]  # one edge per parent
    assert dot.startswith("digraph") and dot.rstrip().endswith("}")
    assert "penwidth" in dot and "fillcolor" in dot


def test_rules_text(data):
    X, y = data["classification"]
    est = fast_estimator("cart", "classification", max_depth=2).fit(X, y)
    text = rules_text(export_graph(est, X, y))
    rules = [ln for ln in text.splitlines() if ln.startswith("if ")]
    assert len(rules) == est.get_n_leaves()
    assert rules[0].startswith("if x3 <= 0.8 then class 0 (n=50")
    assert all(" then class " in r for r in rules)
    # merged bounds: one feature appears at most twice (> and <=) per rule
    for r in rules:
        cond = r.split(" then ")[0]
        assert cond.count("x3 >") <= 1 and cond.count("x3 <=") <= 1


def test_oblique_rules_read_in_input_units(data):
    X, y = data["classification"]
    est = fast_estimator("e2edt", "classification").fit(X, y)
    model = export_graph(est, X, y)
    g = model.graphs[0]
    from treebench.inspect.explain import oblique_terms

    i = int(np.flatnonzero(g.left >= 0)[0])
    w, b = oblique_terms(model, g, i)
    Z = model.transform_X(X)
    model_side = g._split_value(Z, np.arange(len(X)), np.full(len(X), i)) > 0
    raw_side = X @ w + b > 0
    assert np.mean(model_side == raw_side) > 0.99


def test_render_matplotlib_and_images(tmp_path):
    X, y = load_digits(return_X_y=True)
    X, y = X[:300], y[:300]
    est = fast_estimator("e2edt", "classification", max_depth=2, epochs=2, image_shape=(8, 8)).fit(
        X, y
    )
    model = export_graph(est, X, y)
    res = render(model, tmp_path, name="e2edt", engine="matplotlib")
    assert res["engine"] == "matplotlib" and res["images"][0].stat().st_size > 1000
    weights = sorted((tmp_path / "e2edt_0_weights").glob("*.png"))
    assert len(weights) == int((model.graphs[0].left >= 0).sum())
    assert 'image="e2edt_0_weights/' in res["dot"][0].read_text()
    out = draw_matplotlib(model, tmp_path / "x.svg")
    assert out.read_text().lstrip().startswith("<?xml")


def test_cli_show_end_to_end(tmp_path):
    out = tmp_path / "outputs"
    env = {"TREEBENCH_OUTPUTS": str(out)}
    r = run_cli(
        [
            "run",
            "method=cart",
            "dataset=iris",
            "method.params.max_depth=3",
            "threads=1",
            "save_model=true",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    models = list((out / "store").glob("*/*.model.json.gz"))
    assert len(models) == 1
    key = models[0].name.split(".")[0]
    rec = json.loads((models[0].parent / f"{key}.json").read_text())
    assert rec["status"] == "ok" and rec["model_path"] == str(models[0])
    r = run_cli(["show", key[:8]], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    dest = out / "inspect" / key
    for f in ("model.json", "rules.txt", "importances.csv", "importances.png", "graph_0.dot"):
        assert (dest / f).exists(), f
    r = run_cli(["show", key, "--refit", "-o", str(tmp_path / "refit")], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "record test_accuracy" in r.stdout
    a = (dest / "rules.txt").read_text()
    assert a == (tmp_path / "refit" / "rules.txt").read_text()  # saved == refitted model
    r = run_cli(["export", key, "-o", str(tmp_path / "m.json")], cwd=tmp_path, env=env)
    assert r.returncode == 0 and load_graph(tmp_path / "m.json").graphs


def test_inspect_import_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys, treebench.inspect, treebench.methods.baselines; print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_batched_routing_matches_per_graph(data):
    X, y = data["classification"]
    model = fast_estimator("rf", "classification").fit(X, y).to_graph()
    Z = model.transform_X(X)
    per = np.stack([g.apply(Z) for g in model.graphs], axis=1)
    np.testing.assert_array_equal(model._batched_leaves(Z, max_entries=64), per)


@pytest.mark.skipif(dot_binary() is None, reason="Graphviz's dot program is not installed")
def test_render_with_graphviz(tmp_path, data):
    X, y = data["classification"]
    model = export_graph(fast_estimator("cart", "classification", max_depth=2).fit(X, y), X, y)
    res = render(model, tmp_path, engine="dot", formats=("svg",))
    assert res["engine"] == "dot" and "<svg" in res["images"][0].read_text()


def test_save_model_hook_never_fails_the_run(tmp_path, data):
    from treebench.graph.saved import model_path, save_fitted_model

    X, y = data["classification"]
    assert "model_error" in save_fitted_model(tmp_path, "ab" * 12, object(), X, y)
    est = fast_estimator("cart", "classification").fit(X, y)
    out = save_fitted_model(tmp_path, "cd" * 12, est, X, y)
    assert out["model_path"] == str(model_path(tmp_path, "cd" * 12))
    np.testing.assert_array_equal(load_graph(out["model_path"]).predict(X), est.predict(X))


@pytest.mark.parametrize("with_package", [True, False])
def test_render_calls_dot_in_the_dot_files_folder(tmp_path, monkeypatch, data, with_package):
    """Plumbing with a stand-in ``dot`` (real Graphviz is optional).

    It must run where the DOT file is, so the relative weight-image paths resolve, and write the
    requested output.
    """
    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    fake.write_text(
        "#!/bin/sh\n"
        'out=""; prev=""\n'
        'for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done\n'
        'for f in "$@"; do case "$f" in *.dot) test -f "$f" || exit 3;; esac; done\n'
        'echo "<svg>$(pwd)</svg>" > "$out"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    if not with_package:  # the plain subprocess path
        monkeypatch.setitem(__import__("sys").modules, "graphviz", None)
    X, y = data["classification"]
    model = export_graph(fast_estimator("cart", "classification", max_depth=2).fit(X, y), X, y)
    res = render(model, tmp_path / "out", engine="auto", formats=("svg",))
    assert res["engine"] == "dot" and res["hint"] is None
    assert res["images"][0].read_text().strip() == f"<svg>{tmp_path / 'out'}</svg>"


def test_cnn_split_tree_is_not_exportable():
    from types import SimpleNamespace

    from treebench.graph.export import NotExportableError
    from treebench.methods.e2edt.export import e2edt_graph

    est = SimpleNamespace(struct_=None, bank_=SimpleNamespace(kind="cnn"), n_features_in_=4)
    with pytest.raises(NotExportableError, match="split_features='linear'"):
        e2edt_graph(est)


def test_refit_passes_the_test_part_to_a_method_that_asks_for_it(tmp_path):
    # RHF's labelled paper protocol (selection=test) needs fit(..., eval_set=test part), as in a run
    out = tmp_path / "out"
    env = {"TREEBENCH_OUTPUTS": str(out)}
    args = ["run", "method=hinge_forest", "dataset=iris", "threads=1"]
    small = ["n_estimators=3", "max_depth=2", "n_iterations=60", "snapshot_every=20"]
    args += [f"method.params.{p}" for p in small] + ["method.params.selection=test"]
    r = run_cli(args, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    (p,) = list((out / "store").glob("*/[!.]*.json"))
    rec = json.loads(p.read_text())
    assert rec["status"] == "ok" and rec["eval_set_in_fit"] is True
    r = run_cli(
        ["show", rec["key"], "--refit", "-o", str(tmp_path / "refit")], cwd=tmp_path, env=env
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "record test_accuracy" in r.stdout


def _dag_with_a_contradiction() -> GraphEnsemble:
    """x0 <= 3.5 at the root, both branches into one node x0 <= 2.5.

    The root's right branch (x0 > 3.5) then that node's left (x0 <= 2.5) is a path no input follows.
    """
    from treebench.graph.model import DecisionGraph

    g = DecisionGraph(
        left=np.array([1, 2, -1, -1]),
        right=np.array([1, 3, -1, -1]),
        value=np.array([[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]),
        feature=np.array([0, 0, -1, -1]),
        threshold=np.array([3.5, 2.5, 0.0, 0.0]),
    )
    return GraphEnsemble(graphs=[g], task="classification", n_features=1, classes=[0, 1])


def _bounds_ok(rule: str) -> bool:
    """Whether a rule's merged bounds on each feature leave a value (lo < hi)."""
    import re

    lo, hi = {}, {}
    for name, op, v in re.findall(r"(\w+) (>|<=) (-?[\d.e+-]+)", rule.split(" then ")[0]):
        (lo if op == ">" else hi)[name] = float(v)
    return all(lo[n] < hi[n] for n in lo.keys() & hi.keys())


def test_rules_list_satisfiable_paths_only_and_count_the_rest(data):
    text = rules_text(_dag_with_a_contradiction())
    rules = [ln for ln in text.splitlines() if ln.startswith("if ")]
    assert rules == [
        "if x0 <= 2.5 then class 0",
        "if x0 > 2.5 and x0 <= 3.5 then class 1",
        "if x0 > 3.5 then class 1",
    ]
    assert "# 1 of 4 root-to-leaf paths left out" in text
    # a real decision graph (TnT shares nodes between branches): no listed rule contradicts itself
    X, y = load_digits(return_X_y=True)
    est = fast_estimator("tnt", "classification", N1=2, N2=5, ccp_alpha=0.0).fit(X, y)
    model = export_graph(est, X, y)
    lines = [ln for ln in rules_text(model).splitlines() if ln.startswith("if ")]
    assert lines and all(_bounds_ok(r) for r in lines)


def test_drawings_of_large_models_are_cut_readably_and_refused_past_the_memory_limit(tmp_path):
    from treebench.inspect.render import READABLE_NODES, DrawingTooLarge, figure_dpi, visible_nodes

    X, y = load_digits(return_X_y=True)
    est = fast_estimator("cart", "classification").fit(X, y)  # ~300 nodes, depth ~15
    model = export_graph(est, X, y)
    g = model.graphs[0]
    dot = to_dot(model, max_depth="auto")
    import re

    def nodes(text):
        return len(re.findall(r"^  n\d+ \[label=", text, flags=re.M))

    shown = nodes(dot)
    assert shown <= READABLE_NODES < int(g.reachable().sum())
    assert f"of {g.depth()}: {shown:,} of {int(g.reachable().sum()):,} nodes" in dot
    assert "--full" in dot
    assert nodes(to_dot(model)) == int(g.reachable().sum())  # None: every node
    res = render(model, tmp_path, max_depth="auto", engine="matplotlib")
    assert res["cut"] and res["images"][0].exists()
    assert len(visible_nodes(g, 2)[0]) <= 7
    assert figure_dpi(10, 10, 5) == 110  # small: full resolution
    assert 24 <= figure_dpi(400, 100, 500) < 110  # large: downsized before drawing
    with pytest.raises(DrawingTooLarge, match="--max-depth"):
        figure_dpi(2000, 100, 3000)
