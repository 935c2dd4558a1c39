"""Table 3 of the RHF paper on Letter / USPS / MNIST with the mirror files read directly.

Trains one hinge forest or fern (100 trees x depth 10, K-vector leaves summed, Adam lr 0.005) on
the full training set and reports the test error
  * at the last state ("last", honest),
  * best over snapshots on the test set ("test-selected", the paper's optimistic protocol).

A diagnosis tool: runs for REPRODUCTION.md go through the CLI, ``treebench run experiment=rhf_table3``,
which records both numbers too (selection=test: metrics = best test state, info.eval_last_error = last).

Usage: python scripts/rhf_table3_hinge.py letter forest --iterations 40000 --seed 0
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's treebench


def load(name):
    """(X_train, y_train, X_test, y_test, image_shape, batch, head, epochs) via treebench's loaders."""
    from treebench.api import load_fold

    if name == "letter":  # UCI file order 16000/4000, raw integer features
        f = load_fold("letter")
        return f.X_train, f.y_train, f.X_test, f.y_test, None, 53, "linear", 100
    if name == "usps":  # ESL zip.train / zip.test, pixels in [-1, 1]
        f = load_fold("usps")
        return (
            f.X_train,
            f.y_train.astype(int),
            f.X_test,
            f.y_test.astype(int),
            (16, 16),
            29,
            "linear",
            100,
        )
    if name == "mnist":  # pixels / 255
        f = load_fold("mnist")
        return f.X_train / 255, f.y_train, f.X_test / 255, f.y_test, (28, 28), 53, "conv", 80
    raise ValueError(name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", choices=["letter", "usps", "mnist"])
    ap.add_argument("kind", choices=["forest", "fern"])
    ap.add_argument("--iterations", type=int, default=40000)
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--snapshot", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="append a JSON line here")
    ap.add_argument("--verbose", type=int, default=1)
    a = ap.parse_args()
    from treebench.methods.hinge import HingeFernClassifier, HingeForestClassifier

    Xtr, ytr, Xte, yte, shape, bs, feats, nf = load(a.dataset)
    cls = HingeForestClassifier if a.kind == "forest" else HingeFernClassifier
    est = cls(
        n_estimators=a.trees,
        max_depth=a.depth,
        features=feats,
        n_features=nf,
        aggregation="sum",
        optimizer="adam",
        learning_rate=0.005,
        n_iterations=a.iterations,
        batch_size=bs,
        snapshot_every=a.snapshot,
        selection="last",
        validation_fraction=0.0,
        image_shape=shape,
        random_state=a.seed,
        n_jobs=a.threads,
        verbose=a.verbose,
    )
    t0 = time.perf_counter()
    est.fit(Xtr, ytr, eval_set=(Xte, yte))
    wall = time.perf_counter() - t0
    info = est.fit_info_
    best_it = min(est.eval_curve_, key=lambda c: c[1])[0]
    row = {
        "dataset": a.dataset,
        "kind": a.kind,
        "trees": a.trees,
        "depth": a.depth,
        "iterations": a.iterations,
        "seed": a.seed,
        "threads": a.threads,
        "test_error_last_pct": 100 * info["eval_last_error"],
        "test_error_test_selected_pct": 100 * info["eval_best_error"],
        "test_selected_iteration": int(best_it),
        "train_seconds": info["train_seconds"],
        "wall_seconds": wall,
        "seconds_per_1000_iterations": info["seconds_per_1000_iterations"],
        "n_parameters": info["n_parameters"],
    }
    print(json.dumps(row), flush=True)
    if a.out:
        with open(a.out, "a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
