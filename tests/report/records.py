"""Synthetic result records with the runner's real schema.

See treebench.runner.base_record/run_fold.
"""

from __future__ import annotations

import itertools

from treebench.results.store import run_key
from treebench.results.table import to_frame

_counter = itertools.count()


def make_record(
    method="cart",
    dataset="digits",
    seed=0,
    fold=0,
    experiment="exp",
    profile="full",
    status="ok",
    params=None,
    acc=0.9,
    r2=None,
    n_splits=10,
    n_leaves=None,
    n_trees=1,
    mean_depth=3.0,
    split_evals=3.0,
    error=None,
    reason=None,
    train_acc=None,
) -> dict:
    params = dict(params or {})
    key = run_key(
        {
            "method": method,
            "params": params,
            "dataset": dataset,
            "seed": seed,
            "fold": fold,
            "experiment": experiment,
            "profile": profile,
            "n": next(_counter),
        }
    )
    rec = {
        "key": key,
        "experiment": experiment,
        "profile": profile,
        "method": method,
        "dataset": dataset,
        "task": "regression" if r2 is not None else "classification",
        "seed": seed,
        "fold": fold,
        "params": params,
        "split": "{'_target_': 'treebench.data.splits.Holdout'}",
        "provenance": {
            "treebench_version": "0.1.0",
            "git_sha": "abc",
            "host": "h",
            "python": "3.11",
            "packages": {"numpy": "2"},
            "started_at": "2026-01-01T00:00:00+00:00",
        },
        "status": status,
        "wall_seconds": 0.1,
    }
    if status == "failed":
        rec.update(error=error or "RuntimeError: boom", traceback="Traceback ...")
        return rec
    if status == "skipped":
        rec.update(reason=reason or "wrong task")
        return rec
    metrics = (
        {"train_r2": r2 + 0.1, "test_r2": r2, "train_rmse": 1.0, "test_rmse": 1.2}
        if r2 is not None
        else {
            "train_accuracy": train_acc if train_acc is not None else min(1.0, acc + 0.05),
            "test_accuracy": acc,
        }
    )
    rec.update(
        {
            "split_id": "holdout-abc",
            "n_train": 100,
            "n_test": 50,
            "n_features": 8,
            "n_classes": 3,
            "fit_seconds": 0.01,
            "predict_seconds": 0.001,
            "threads": 1,
            "method_seed": 1,
            "metrics": metrics,
            "size": {
                "n_trees": n_trees,
                "n_splits": n_splits,
                "n_leaves": n_leaves if n_leaves is not None else n_splits + n_trees,
                "depth": 5,
                "mean_depth": mean_depth,
                "split_evals": split_evals,
            },
            "info": {},
            "resolved_params": {k: repr(v) for k, v in params.items()},
        }
    )
    return rec


def frame(records):
    return to_frame(records)
