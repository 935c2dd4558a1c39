"""USPS check for TnT Table 1: treebench TnT vs the public reference implementation, side by side.

Usage (the reference checkout is NOT part of treebench; pass its path):
    python scripts/tnt_usps_check.py /path/to/TnTDecisionGraph --C 3e-3 2e-3 1e-3
    python scripts/tnt_usps_check.py /path/to/TnTDecisionGraph --split holdout --seeds 0 1

The paper reports TnT 88.76 +- 1.36 % at #S = 31 and CART 87.35 % at #S = 109 on USPS. For every C this
fits, on the same data (``treebench.api.load_fold("usps")``: zip.train/zip.test 7291/2007, or with
``--split holdout`` a seeded random 33 % test split of all 9298 digits) and with the same hyperparameters
(N1 = 2, N2 = 5, random_state = seed), our TnT and the reference TnT, plus best-first CART with the
same #S as our graph and with the paper's CART #S (109). Prints #S, train/test accuracy and fit seconds.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier


def fit_ours(Xtr, ytr, Xte, yte, C, seed):
    from treebench.methods.tnt import TnTClassifier

    t0 = time.process_time()
    m = TnTClassifier(ccp_alpha=C, N1=2, N2=5, random_state=seed).fit(Xtr, ytr)
    return m.n_splits_, m.score(Xtr, ytr), m.score(Xte, yte), time.process_time() - t0


def fit_ref(path, Xtr, ytr, Xte, yte, C, seed):
    sys.path.insert(0, path)
    from TreeInTree import TnT  # the reference implementation, from the given checkout

    t0 = time.process_time()
    ref = TnT(N1=2, N2=5, ccp_alpha=C, random_state=seed)
    ref.fit(Xtr, ytr)
    cpu = time.process_time() - t0
    n_int, _ = ref.check_complexity()
    acc = lambda X, y: float((np.asarray(ref.predict(X)).ravel() == y).mean())  # noqa: E731
    return n_int, acc(Xtr, ytr), acc(Xte, yte), cpu


def cart(Xtr, ytr, Xte, yte, n_splits, seed):
    m = DecisionTreeClassifier(max_leaf_nodes=n_splits + 1, random_state=seed).fit(Xtr, ytr)
    return m.tree_.node_count // 2, m.score(Xtr, ytr), m.score(Xte, yte)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("reference", help="path to a checkout of BingzhaoZhu/TnTDecisionGraph")
    ap.add_argument("--C", type=float, nargs="+", default=[3e-3, 2e-3, 1e-3])
    ap.add_argument("--split", choices=["given", "holdout"], default="given")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--skip-reference", action="store_true")
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    from treebench.api import load_fold

    threadpool_limits(1)
    for seed in args.seeds:
        fa = load_fold("usps", seed, 0)
        Xtr, ytr, Xte, yte = fa.X_train, fa.y_train, fa.X_test, fa.y_test
        if args.split == "holdout":
            X, y = np.r_[Xtr, Xte], np.r_[ytr, yte]
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.33, random_state=seed)
        print(
            f"usps ({args.split}) seed {seed}: train {Xtr.shape} test {Xte.shape}, "
            f"X range [{Xtr.min():g}, {Xtr.max():g}]",
            flush=True,
        )
        for n in (31, 109):
            s, a, b = cart(Xtr, ytr, Xte, yte, n, seed)
            print(f"  CART best-first #S {s:4d}: train {a:.4f} test {b:.4f}", flush=True)
        for C in args.C:
            s, a, b, t = fit_ours(Xtr, ytr, Xte, yte, C, seed)
            print(f"  C={C:g} treebench #S {s:4d}: train {a:.4f} test {b:.4f} ({t:.1f} s CPU)")
            cs, ca, cb = cart(Xtr, ytr, Xte, yte, s, seed)
            print(f"  C={C:g} CART      #S {cs:4d}: train {ca:.4f} test {cb:.4f}", flush=True)
            if not args.skip_reference:
                s, a, b, t = fit_ref(args.reference, Xtr, ytr, Xte, yte, C, seed)
                print(f"  C={C:g} reference #S {s:4d}: train {a:.4f} test {b:.4f} ({t:.1f} s CPU)")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
