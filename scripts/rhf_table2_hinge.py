"""One cell of RHF Table 2 (Lay et al. 2018) on the mirror, loaded through treebench.api (no runner).

  python scripts/rhf_table2_hinge.py iris forest --trees 10 --depth 5 --runs 15 --iterations 40000
  python scripts/rhf_table2_hinge.py abalone rf --runs 10

Protocols (from the method notes / the authors' bleak configs):
  iris        5 shuffles x 3 folds of 50, rotating train / validation / test (15 runs)
  abalone     file order: first 3133 rows = train+validation (1044 held out inside fit), last 1044 test;
              sex -> ordinal 0/1/2; rings 1-8 / 9-10 / >= 11 -> 3 classes
  abalone_reg same, target = rings, metric R^2
  madelon     train file (2000; 500 held out for validation), test = the UCI validation file (600)
Hinge models: 100 inner-product features, scalar leaves -> linear layer, AdaGrad with the bleak rate,
snapshot every 500 minibatches of 53, the snapshot with the lowest validation loss. The validation part is
a seeded random holdout of the training rows (the authors used a fixed file-order part).
``rf``: scikit-learn RandomForest with 100 trees of depth 10 trained on train+validation.
Prints one JSON line per run and a summary line: mean (sample sd) test error % or R^2.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

LR = {"iris": 0.05, "abalone": 0.05, "abalone_reg": 0.05, "madelon": 0.01}
VAL = {"iris": 0.5, "abalone": 1044 / 3133, "abalone_reg": 1044 / 3133, "madelon": 0.25}


def splits(name, runs):
    """Yield (X_trainval, y_trainval, X_test, y_test) for each run."""
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        for s in range(5):
            perm = np.random.default_rng(1000 + s).permutation(150)
            parts = [perm[i::3] for i in range(3)]
            for k in range(3):
                if s * 3 + k >= runs:
                    return
                tr = np.concatenate([parts[k], parts[(k + 1) % 3]])
                te = parts[(k + 2) % 3]
                yield X[tr], y[tr], X[te], y[te]
        return
    if name.startswith("abalone") or name == "madelon":  # treebench's loaders and given splits
        from treebench.api import load_fold

        f = load_fold(name, overrides=["++dataset.preprocess.categorical=ordinal"])
        data = f.X_train.astype(np.float32), f.y_train, f.X_test.astype(np.float32), f.y_test
    else:
        raise ValueError(name)
    for _ in range(runs):
        yield data


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", choices=list(LR))
    ap.add_argument("model", choices=["forest", "fern", "rf"])
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--depth", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=40000)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    from treebench.methods import hinge

    reg = a.dataset == "abalone_reg"
    scores = []
    for run, (Xtr, ytr, Xte, yte) in enumerate(splits(a.dataset, a.runs)):
        t0 = time.perf_counter()
        if a.model == "rf":
            cls = RandomForestRegressor if reg else RandomForestClassifier
            est = cls(n_estimators=100, max_depth=10, random_state=run, n_jobs=1).fit(Xtr, ytr)
            info = {}
        else:
            name = ("HingeForest" if a.model == "forest" else "HingeFern") + (
                "Regressor" if reg else "Classifier"
            )
            est = getattr(hinge, name)(
                n_estimators=a.trees,
                max_depth=a.depth,
                learning_rate=LR[a.dataset],
                n_iterations=a.iterations,
                validation_fraction=VAL[a.dataset],
                random_state=run,
                n_jobs=1,
            ).fit(Xtr, ytr)
            info = est.fit_info_
        score = est.score(Xte, yte) if reg else 100 * (1 - est.score(Xte, yte))
        scores.append(score)
        row = {
            "dataset": a.dataset,
            "model": a.model,
            "trees": a.trees,
            "depth": a.depth,
            "iterations": a.iterations,
            "run": run,
            "score": score,
            "metric": "r2" if reg else "error_pct",
            "seconds": time.perf_counter() - t0,
            "best_iteration": info.get("best_iteration"),
        }
        print(json.dumps(row), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    cfg = "RF 100/10" if a.model == "rf" else f"{a.model} {a.trees}/{a.depth} it={a.iterations}"
    print(
        f"SUMMARY {a.dataset} {cfg}: {'R2' if reg else 'error %'} "
        f"{np.mean(scores):.4g} ({np.std(scores, ddof=1) if len(scores) > 1 else 0:.3g}) "
        f"over {len(scores)} runs",
        flush=True,
    )


if __name__ == "__main__":
    main()
