"""Quick One-Stage benchmark on mirror data (before the data branch lands): methods x datasets x seeds.

Usage: python scripts/onestage_bench.py DATASETS METHODS [--seeds 5] [--test 0.2] [--depth 6]
  DATASETS  comma list (see scripts/onestage_data.py), METHODS comma list of
            name[:param=value;param=value] with name in onestage, onestage_joint, onestage_gumbel,
            cart, sdt.  Splits: stratified (classification) holdout ``--test`` seeded by the seed; the
            One-Stage estimators split their own validation part from the training part.
Prints one line per (dataset, method): mean/sd test score (accuracy or r2, x100), train score,
internal nodes kept, seconds per fit; and a JSON line per run if --json is given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import onestage_data as od  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

from treebench.methods.base import get_method  # noqa: E402


def parse_method(spec):
    name, _, rest = spec.partition(":")
    params = {}
    for kv in filter(None, rest.split(";")):
        k, v = kv.split("=")
        params[k] = json.loads(v)
    return name, params


def make(name, task, params, depth, seed):
    if name == "cart":
        cls = DecisionTreeClassifier if task == "classification" else DecisionTreeRegressor
        return cls(max_depth=depth, random_state=seed, **params)
    cls = get_method(name, task)
    return cls(**{"max_depth": depth, "random_state": seed, "n_jobs": 1, **params})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("datasets")
    ap.add_argument("methods")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--test", type=float, default=0.2)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    out = open(a.json, "a") if a.json else None
    for ds in a.datasets.split(","):
        X, y, task = od.load(ds)
        for spec in a.methods.split(","):
            name, params = parse_method(spec)
            te, tr, kept, secs, eps = [], [], [], [], []
            for seed in range(a.seeds):
                strat = y if task == "classification" else None
                Xtr, Xte, ytr, yte = train_test_split(
                    X, y, test_size=a.test, random_state=seed, stratify=strat
                )
                m = make(name, task, params, a.depth, seed)
                t0 = time.perf_counter()
                m.fit(Xtr, ytr)
                secs.append(time.perf_counter() - t0)
                te.append(100 * m.score(Xte, yte))
                tr.append(100 * m.score(Xtr, ytr))
                info = getattr(m, "fit_info_", {})
                kept.append(
                    info.get(
                        "internal_kept", getattr(getattr(m, "tree_", None), "node_count", np.nan)
                    )
                )
                eps.append(info.get("epochs", np.nan))
                if out:
                    out.write(
                        json.dumps(
                            {
                                "dataset": ds,
                                "method": spec,
                                "seed": seed,
                                "depth": a.depth,
                                "test": te[-1],
                                "train": tr[-1],
                                "seconds": secs[-1],
                                "info": info,
                            }
                        )
                        + "\n"
                    )
                    out.flush()
            print(
                f"{ds:14s} {spec:40s} test {np.mean(te):6.2f} ± {np.std(te):5.2f}  train "
                f"{np.mean(tr):6.2f}  kept {np.mean(kept):6.1f}  epochs {np.mean(eps):5.1f}  "
                f"fit {np.mean(secs):6.2f}s",
                flush=True,
            )


if __name__ == "__main__":
    main()
