"""TnT speed and accuracy: treebench vs the public reference implementation, side by side.

Usage (the reference checkout is NOT part of treebench; pass its path):
    python scripts/tnt_vs_reference.py /path/to/TnTDecisionGraph
    python scripts/tnt_vs_reference.py /path/to/TnTDecisionGraph --mnist-train 10000 --skip-reference

Runs, on the same data with the same hyperparameters (N1=2, N2=5, ccp_alpha, random_state=0), in one
process and one thread:
  * UCI Letter, file order 16000/4000, C = 1.2e-4 (~1.3k splits);
  * MNIST, the first ``--mnist-train`` training images (raw 0-255 pixels) and the 10k test set, C = 1e-4.
For each: #splits, #leaves, train/test accuracy, wall and CPU seconds of ``fit`` for both implementations,
the speed ratio (reference / treebench) and the test-accuracy difference. The machine may be shared:
CPU seconds are the fairer comparison, both are printed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from compare_tnt_reference import load  # noqa: E402  (data readers of the sibling script)


def fit_ours(Xtr, ytr, Xte, yte, C, seed):
    from treebench.methods.tnt import TnTClassifier

    t0, c0 = time.perf_counter(), time.process_time()
    m = TnTClassifier(ccp_alpha=C, N1=2, N2=5, random_state=seed).fit(Xtr, ytr)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "wall": wall,
        "cpu": cpu,
        "splits": m.n_splits_,
        "leaves": m.n_leaves_,
        "train": m.score(Xtr, ytr),
        "test": m.score(Xte, yte),
    }


def fit_ref(path, Xtr, ytr, Xte, yte, C, seed):
    sys.path.insert(0, path)
    from TreeInTree import TnT  # the reference implementation, from the given checkout

    t0, c0 = time.perf_counter(), time.process_time()
    ref = TnT(N1=2, N2=5, ccp_alpha=C, random_state=seed)
    ref.fit(Xtr, ytr)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n_int, n_leaf = ref.check_complexity()
    return {
        "wall": wall,
        "cpu": cpu,
        "splits": n_int,
        "leaves": n_leaf,
        "train": float((ref.predict(Xtr) == ytr).mean()),
        "test": float((ref.predict(Xte) == yte).mean()),
    }


def line(name, r):
    return (
        f"  {name:10s} fit {r['wall']:8.2f} s wall, {r['cpu']:8.2f} s CPU | #S {r['splits']:5d} "
        f"leaves {r['leaves']:5d} | train {r['train']:.4f} test {r['test']:.4f}"
    )


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("reference", help="path to a checkout of BingzhaoZhu/TnTDecisionGraph")
    ap.add_argument("--mnist-train", type=int, default=10000, help="first n MNIST training images")
    ap.add_argument("--datasets", nargs="+", default=["letter", "mnist"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-reference", action="store_true")
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    # compile / load the numba kernels outside the timed region (cached on disk after the first run)
    from sklearn.datasets import load_iris

    from treebench.methods.tnt import TnTClassifier

    Xi, yi = load_iris(return_X_y=True)
    TnTClassifier(ccp_alpha=1e-2, random_state=0).fit(Xi, yi)
    settings = {"letter": (1.2e-4, None), "mnist": (1e-4, args.mnist_train)}
    summary = []
    for ds in args.datasets:
        C, n = settings[ds]
        Xtr, ytr, Xte, yte = load(ds)
        if n:
            Xtr, ytr = Xtr[:n], ytr[:n]
        print(f"{ds}: train {Xtr.shape}, test {Xte.shape}, N1=2 N2=5 ccp_alpha={C:g}", flush=True)
        ours = fit_ours(Xtr, ytr, Xte, yte, C, args.seed)
        print(line("treebench", ours), flush=True)
        if args.skip_reference:
            continue
        ref = fit_ref(args.reference, Xtr, ytr, Xte, yte, C, args.seed)
        print(line("reference", ref), flush=True)
        s = (
            f"{ds}: speed-up reference/treebench {ref['wall'] / ours['wall']:.1f}x wall, "
            f"{ref['cpu'] / ours['cpu']:.1f}x CPU; test accuracy difference "
            f"{100 * (ours['test'] - ref['test']):+.2f} pp; #S {ours['splits']} vs {ref['splits']}"
        )
        print(s, flush=True)
        summary.append(s)
    for s in summary:
        print(s)


if __name__ == "__main__":
    main()
