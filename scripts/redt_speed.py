"""Side-by-side fit time: ReDT's soft-label CART vs scikit-learn's Cython CART (same data, same rule).

For each dataset (default Letter, Adult, Connect-4, loaded through ``treebench.data.load_dataset``
exactly as a ``treebench run`` job sees them: training part of fold 0, the dataset's preprocessing,
e.g. one-hot categoricals) it times, interleaved and repeated, one thread each:

* ``sklearn``   DecisionTreeClassifier(min_samples_split=k+1), hard labels;
* ``ours a=1``  soft-label CART (numba) with one-hot labels - the same tree up to feature ties;
* ``ours a=.2`` soft-label CART on mixed labels 0.2*onehot + 0.8*soft, soft labels out-of-fold from a
  small random forest (1x5 jackknife, 20 trees; its time is not counted - it is the teacher's);
* optionally ``numpy`` (pure-numpy fallback builder) with ``--numpy``.

Prints the median seconds per variant and the ratio to scikit-learn. The machine may be shared:
only the ratios measured in the same run mean anything. ``--jackknife`` also times the paper's
5-fold jackknife of a 100-tree RF teacher with ``n_jobs=1`` and ``n_jobs=2`` (wall and CPU seconds).

    TREEBENCH_MIRROR=../shared/data python scripts/redt_speed.py [--datasets letter adult connect4]
        [--repeats 3] [--numpy] [--jackknife]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from sklearn.tree import DecisionTreeClassifier
from threadpoolctl import threadpool_limits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import redt_data  # noqa: E402

from treebench.methods.redt.estimator import forest_teacher, jackknife_soft_labels  # noqa: E402
from treebench.methods.redt.softcart import build_tree  # noqa: E402


def make_variants(X, y, H, M, S, k, with_numpy):
    out = {
        "sklearn": lambda: (
            DecisionTreeClassifier(min_samples_split=k + 1, random_state=0)
            .fit(X, y)
            .tree_.node_count
        ),
        "ours a=1": lambda: build_tree(X, H, y, k=k).node_count,
        "ours a=.2": lambda: build_tree(X, M, S.argmax(1), k=k).node_count,
    }
    if with_numpy:
        out["numpy a=1"] = lambda: build_tree(X, H, y, k=k, backend="numpy").node_count
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["letter", "adult", "connect4"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--numpy", action="store_true", help="also time the pure-numpy builder")
    ap.add_argument(
        "--jackknife", action="store_true", help="time the teachers' jackknife, 1 vs 2 jobs"
    )
    args = ap.parse_args()
    # numba compile/cache outside the timings; (8, 2) so the array layout (F, not C) is the real one
    for presort in (True, False):
        build_tree(np.zeros((8, 2)), np.eye(2)[[0, 1] * 4], np.array([0, 1] * 4), presort=presort)
    for name in args.datasets:
        X, y, _, _ = redt_data.load_treebench(name, seed=0)
        X = X.astype(np.float32)
        K = int(y.max()) + 1
        H = np.eye(K)[y]
        S = jackknife_soft_labels(
            lambda s: forest_teacher("rf", {"n_estimators": 20}, s),
            X,
            y,
            K,
            n_folds=5,
            n_repeats=1,
            random_state=0,
            n_jobs=1,
        )
        M = 0.2 * H + 0.8 * S
        variants = make_variants(X, y, H, M, S, args.k, args.numpy)
        times = {v: [] for v in variants}
        nodes = {}
        with threadpool_limits(1):
            for _ in range(args.repeats):
                for v, fn in variants.items():  # interleaved so load changes hit all variants
                    t0 = time.perf_counter()
                    nodes[v] = fn()
                    times[v].append(time.perf_counter() - t0)
        base = np.median(times["sklearn"])
        print(f"{name} n={len(y)} d={X.shape[1]} K={K}")
        for v in variants:
            med = np.median(times[v])
            print(f"  {v:10s} {med:8.3f}s  ratio {med / base:5.2f}  nodes {nodes[v]}")
        sys.stdout.flush()
        if args.jackknife:
            for jobs in (1, 2):
                t0, c0 = time.perf_counter(), time.process_time()
                with threadpool_limits(1):
                    jackknife_soft_labels(
                        lambda s: forest_teacher("rf", None, s),
                        X,
                        y,
                        K,
                        n_folds=5,
                        n_repeats=1,
                        random_state=0,
                        n_jobs=jobs,
                    )
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                print(
                    f"  jackknife rf x5 n_jobs={jobs}: wall {wall:7.1f}s  cpu {cpu:7.1f}s  "
                    f"cpu/wall {cpu / wall:4.2f}"
                )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
