"""Render one small example model per method on a bundled dataset into docs/inspect/.

Usage: python scripts/make_inspect_docs.py [--out docs/inspect] [--only cart,tnt] [--engine auto]

For every registered method: fit a small model (settings below, chosen for readable figures, not for
accuracy), export its decision graph, check that the exported graph predicts like the estimator,
and write ``<method>/graph_<m>.dot`` plus a drawing (Graphviz SVG if ``dot`` is installed, else a
matplotlib PNG), ``rules.txt`` and ``importances.csv``; then ``README.md`` with all of them.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes, load_digits, load_iris
from sklearn.model_selection import train_test_split

from treebench.inspect import export_graph
from treebench.inspect.explain import feature_importances, rules_text
from treebench.inspect.render import render
from treebench.methods.base import discover

IRIS_NAMES = ["sepal_len", "sepal_wid", "petal_len", "petal_wid"]

# method -> (dataset, constructor parameters, graphs to draw, levels to draw, note)
EXAMPLES = {
    "cart": ("iris", {"max_depth": 3}, 1, None, ""),
    "rf": ("iris", {"n_estimators": 3, "max_depth": 3}, 2, None, "first 2 of 3 trees"),
    "bagged_cart": ("iris", {"n_estimators": 3}, 2, None, "first 2 of 3 bagged CARTs"),
    "gbdt": (
        "iris",
        {"n_estimators": 3, "max_depth": 2},
        3,
        None,
        "stage 1: one regression tree per class (raw scores x learning rate)",
    ),
    "adaboost": ("iris", {"n_estimators": 5}, 3, None, "first 3 of 5 SAMME stumps"),
    "tnt": ("iris", {"ccp_alpha": 0.01}, 1, None, "a decision graph: nodes may have 2 parents"),
    "tnt_bagging": ("iris", {"n_estimators": 3, "ccp_alpha": 0.01}, 2, None, ""),
    "tnt_adaboost": ("iris", {"n_estimators": 3, "ccp_alpha": 0.01}, 2, None, ""),
    "ndg": ("iris", {"C": 0.01}, 1, None, "naive decision graph (greedy split/merge)"),
    "redt": (
        "iris",
        {"alpha": 0.5, "k": 10, "n_repeats": 1, "backend": "numpy"},
        1,
        None,
        "soft-label CART distilled from an RF",
    ),
    "e2edt": (
        "digits",
        {"max_depth": 3, "epochs": 10},
        1,
        None,
        "oblique splits on 8x8 digits: weights drawn as images (red +, blue -)",
    ),
    "e2edf": (
        "digits",
        {"n_estimators": 3, "max_depth": 2, "epochs": 5, "patch_size": 4},
        2,
        None,
        "each split sees one random 4x4 patch",
    ),
    "onestage": (
        "iris",
        {"max_depth": 3},
        1,
        None,
        "pruned oblique tree; importances weight the impurity decrease by |w|",
    ),
    "onestage_joint": ("iris", {"max_depth": 3}, 1, None, "Joint Tree ablation"),
    "onestage_gumbel": ("iris", {"max_depth": 3}, 1, None, "Gumbel Tree ablation"),
    "hinge_forest": (
        "iris",
        {"n_estimators": 3, "max_depth": 2, "features": "none", "n_iterations": 1000},
        2,
        None,
        "hinge trees on batch-normalised inputs (tests shown in input units)",
    ),
    "hinge_fern": (
        "iris",
        {"n_estimators": 3, "max_depth": 2, "features": "none", "n_iterations": 1000},
        2,
        None,
        "a fern: one test per level",
    ),
    "sdt": (
        "iris",
        {"max_depth": 2, "max_epochs": 100, "learning_rate": 0.01},
        1,
        None,
        "soft routing: every path weighted by sigmoid(test) probabilities",
    ),
}
REGRESSION_EXAMPLES = {"cart": ({"max_depth": 3}, "CART regression tree on diabetes")}


def load(name):
    """Return ``(X, y, feature names, image shape)`` of bundled dataset ``name``."""
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        return X, y, IRIS_NAMES, None
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X, y, None, (8, 8)
    X, y = load_diabetes(return_X_y=True)
    return X, y, list(load_diabetes().feature_names), None


def fit(name, task, dataset, params, seed=0):
    """Fit method ``name`` on 70 % of ``dataset`` and export it.

    Returns the exported model, whether it predicts as the estimator does on the other 30 %, its
    test score as text and the fit seconds.
    """
    X, y, names, shape = load(dataset)
    strat = y if task == "classification" else None
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=0.3, random_state=seed, stratify=strat
    )
    est = discover()[name].classes[task](**params)
    extra = {"random_state": seed, "n_jobs": 1}
    if shape is not None:
        extra["image_shape"] = shape
    est.set_params(**{k: v for k, v in extra.items() if k in est.get_params()})
    t0 = time.perf_counter()
    est.fit(X_tr, y_tr)
    secs = time.perf_counter() - t0
    model = export_graph(est, X_tr, y_tr)
    model.feature_names = names
    model.image_shape = None if shape is None else list(shape)
    same = (
        np.array_equal(model.predict(X_te), est.predict(X_te))
        if task == "classification"
        else bool(np.allclose(model.predict(X_te), est.predict(X_te), rtol=1e-5, atol=1e-4))
    )
    if task == "classification":
        score = f"test accuracy {np.mean(model.predict(X_te) == y_te):.3f}"
    else:
        from sklearn.metrics import r2_score

        score = f"test R2 {r2_score(y_te, model.predict(X_te)):.3f}"
    return model, same, score, secs


def write(out, key, model, n_graphs, max_depth, engine):
    """Write model ``key``'s drawings, rules and importances into ``out/key``.

    Returns the render result and the three largest importances as text.
    """
    d = out / key
    for old in d.glob("**/*"):
        if old.is_file():
            old.unlink()
    res = render(model, d, name="graph", max_graphs=n_graphs, max_depth=max_depth, engine=engine)
    (d / "rules.txt").write_text(rules_text(model, max_graphs=n_graphs))
    imp, names = feature_importances(model)
    order = np.argsort(-imp, kind="stable")
    (d / "importances.csv").write_text(
        "feature,importance\n" + "".join(f"{names[j]},{imp[j]:.6f}\n" for j in order)
    )
    top = ", ".join(f"{names[j]} {imp[j]:.2f}" for j in order[:3])
    return res, top


def main():
    """Parse the command line and regenerate ``docs/inspect``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/inspect")
    ap.add_argument("--only", default=None, help="comma-separated method names")
    ap.add_argument("--engine", default="auto", choices=("auto", "dot", "matplotlib"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    missing = sorted(set(discover()) - set(EXAMPLES))
    if missing:
        print(f"no example settings for: {', '.join(missing)}")
    rows = []
    jobs = [(n, "classification", *EXAMPLES[n]) for n in EXAMPLES]
    jobs += [
        (n, "regression", "diabetes", p, 1, None, note)
        for n, (p, note) in REGRESSION_EXAMPLES.items()
    ]
    for name, task, dataset, params, n_graphs, max_depth, note in jobs:
        if only and name not in only:
            continue
        key = name if task == "classification" else f"{name}_regression"
        model, same, score, secs = fit(name, task, dataset, params)
        res, top = write(out, key, model, n_graphs, max_depth, args.engine)
        imgs = [p.relative_to(out) for p in res["images"]]
        rows.append((key, dataset, params, note, score, same, top, imgs, len(model.graphs)))
        print(
            f"{key:20s} {dataset:8s} {score}  export==estimator: {same}  fit {secs:.1f}s  "
            f"{len(model.graphs)} graph(s) -> {', '.join(map(str, imgs))}",
            flush=True,
        )
        if not same:
            raise SystemExit(f"{key}: the exported graph does not predict like the estimator")
    if only is None:
        write_readme(out, rows, res["engine"])


def write_readme(out, rows, engine):
    """Write ``docs/inspect/README.md``: the index of the exported models."""
    lines = [
        "# Inspecting trained models",
        "",
        "Every treebench method exports its fitted model as a decision graph "
        "(`treebench.inspect`): nodes with axis-aligned or oblique tests, shared children for TnT "
        "graphs, leaf distributions/values and training-sample counts, plus the rule that combines "
        "the graphs of an ensemble. The JSON export round-trips: the loaded graph predicts exactly "
        "like the estimator (tested for every method).",
        "",
        "```bash",
        "treebench run method=tnt dataset=iris save_model=true   # writes <key>.model.json.gz",
        "treebench show <run key or prefix>    # DOT + drawing, rules.txt, importances.csv, "
        "model.json",
        "treebench export <run key> -o tnt.json   # the JSON only (refits when no model was saved)",
        "```",
        "",
        "```python",
        "from treebench.inspect import export_graph, load_graph",
        "",
        "model = export_graph(est, X_train, y_train)  # statistics from the training data",
        'model.save("m.json.gz")',
        'load_graph("m.json.gz").predict(X)',
        "```",
        "",
        "Drawings: node colour = dominant training class (shade = purity), edge width = training "
        'samples on the edge, "yes" = the test shown in the node holds. Oblique tests on image '
        "data are drawn as weight images (red positive, blue negative). Feature importance = "
        "impurity decrease weighted by samples (scikit-learn's definition; equal to "
        "`feature_importances_` for CART/RF/GBDT/AdaBoost), oblique splits spread it by |w_j| as "
        "the One-Stage paper does. "
        + (
            "Rendered with Graphviz."
            if engine == "dot"
            else "The images below were drawn with matplotlib because Graphviz's `dot` was not "
            "installed; each folder also holds the `.dot` files (`dot -Tsvg graph_0.dot -o "
            "graph_0.svg`)."
        ),
        "",
        "Regenerate: `python scripts/make_inspect_docs.py` (examples on bundled datasets, small "
        "settings chosen for readable figures, seed 0, 70/30 split).",
        "",
    ]
    for key, dataset, params, note, score, _same, top, imgs, n_graphs in rows:
        p = ", ".join(f"{k}={v}" for k, v in params.items())
        lines += [
            f"## {key}",
            "",
            f"{dataset}, `{p}`; {score}; {n_graphs} graph(s). {note}".rstrip(),
            "",
            f"Top features: {top}. [rules]({key}/rules.txt), [importances]({key}/importances.csv)",
            "",
        ]
        lines += [f"![{key} graph {m}]({img})" for m, img in enumerate(imgs)]
        lines.append("")
    (out / "README.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
