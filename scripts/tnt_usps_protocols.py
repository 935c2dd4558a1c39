"""Issue #21: which USPS protocol gives TnT Table 1's numbers (TnT 88.76 +- 1.36 at #S 31, CART 87.35 +- 0.15
at #S 109)?  Fits TnT (target_splits=31, N1=2, N2=5) and best-first CART (max_leaf_nodes=110, and unlimited)
under several candidate protocols, a few seeds each, single-threaded.

Protocols
  given      ESL zip.train / zip.test, 7291 / 2007 in file order (our tnt_table1)
  holdout33  all 9298 digits pooled, seeded stratified 33 % test (the paper's rule for sets without a test file)
  holdout20  the same with a 20 % test (80/20)
  holdout30  the same with a 30 % test (70/30)
  esl_t      only the 2007 ESL zip.test digits, seeded stratified 33 % test   } same digits, same labels,
  libsvm_t   only the 2007 LIBSVM usps.t digits, the same 33 % test indices  } two pixel versions

Usage:  PYTHONPATH=. python scripts/tnt_usps_protocols.py --protocols given holdout33 --seeds 0 1 2 3 4
        PYTHONPATH=. python scripts/tnt_usps_protocols.py --curve --protocols given holdout33 --seeds 0
(``--curve``: test accuracy vs size instead, CART at 16 ... 400 leaves and unlimited, TnT at C = 3e-3 ... 1e-4,
plus a check that rescaling the pixels from [-1, 1] to [0, 1] leaves CART unchanged.)
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import os
import time

import numpy as np


def _mirror():
    return os.environ.get("TREEBENCH_MIRROR", "../shared/data")


def load_protocol(name, seed):
    from treebench.api import load_fold
    from treebench.data.splits import _rng, split_indices

    if name == "given":
        fa = load_fold("usps", seed, 0)
        return fa.X_train, fa.y_train, fa.X_test, fa.y_test
    if name.startswith("holdout"):
        frac = {"holdout33": 0.33, "holdout30": 0.30, "holdout20": 0.20}[name]
        fa = load_fold("usps", seed, 0, ["split=holdout", f"split.test_size={frac}"])
        return fa.X_train, fa.y_train, fa.X_test, fa.y_test
    # the two pixel versions of the same 2007 test digits
    Z = np.loadtxt(gzip.open(os.path.join(_mirror(), "esl/zip/zip.test.gz")))
    y, X = Z[:, 0].astype(int), Z[:, 1:]
    if name == "libsvm_t":
        from sklearn.datasets import load_svmlight_file

        path = os.path.join(_mirror(), "libsvm/multiclass/usps.t.bz2")
        Xl, yl = load_svmlight_file(bz2.open(path), n_features=256)
        assert np.array_equal(
            yl.astype(int) - 1, y
        )  # same digits and order, LIBSVM label = ESL + 1
        X = Xl.toarray()
    tr, te = split_indices(y, int(np.ceil(0.33 * len(y))), _rng(seed, 7))
    return X[tr], y[tr], X[te], y[te]


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--protocols", nargs="+", default=["given", "holdout33"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--tnt-splits", type=int, default=31)
    ap.add_argument("--cart-leaves", type=int, default=110)
    ap.add_argument("--no-tnt", action="store_true")
    ap.add_argument(
        "--curve", action="store_true", help="accuracy vs #S (CART leaves, TnT C) per protocol"
    )
    args = ap.parse_args()

    from sklearn.tree import DecisionTreeClassifier
    from threadpoolctl import threadpool_limits

    from treebench.api import make_estimator

    threadpool_limits(1)
    print("protocol,seed,n_train,n_test,model,n_splits,train_acc,test_acc,cpu_s", flush=True)
    if args.curve:
        return curve(args)
    for proto in args.protocols:
        for seed in args.seeds:
            Xtr, ytr, Xte, yte = load_protocol(proto, seed)
            row = f"{proto},{seed},{len(ytr)},{len(yte)}"
            for leaves in (args.cart_leaves, None):
                t0 = time.process_time()
                m = DecisionTreeClassifier(max_leaf_nodes=leaves, random_state=seed).fit(Xtr, ytr)
                cpu = time.process_time() - t0
                tag = f"cart_{leaves or 'full'}"
                print(
                    f"{row},{tag},{m.tree_.node_count // 2},{m.score(Xtr, ytr):.4f},"
                    f"{m.score(Xte, yte):.4f},{cpu:.1f}",
                    flush=True,
                )
            if not args.no_tnt:
                t0 = time.process_time()
                est = make_estimator(
                    "tnt", params={"target_splits": args.tnt_splits, "n_jobs": 1}, random_state=seed
                )
                est.fit(Xtr, ytr)
                cpu = time.process_time() - t0
                print(
                    f"{row},tnt_{args.tnt_splits},{est.n_splits_},{est.score(Xtr, ytr):.4f},"
                    f"{est.score(Xte, yte):.4f},{cpu:.1f}",
                    flush=True,
                )


def curve(args):
    from sklearn.tree import DecisionTreeClassifier

    from treebench.api import make_estimator

    for proto in args.protocols:
        for seed in args.seeds:
            Xtr, ytr, Xte, yte = load_protocol(proto, seed)
            row = f"{proto},{seed},{len(ytr)},{len(yte)}"
            m = DecisionTreeClassifier(max_leaf_nodes=110, random_state=seed)
            a = m.fit(Xtr, ytr).score(Xte, yte)
            b = m.fit((Xtr + 1) / 2, ytr).score((Xte + 1) / 2, yte)
            print(f"{row},cart_110_rescaled_check,109,-,{a:.4f} vs {b:.4f},-", flush=True)
            for leaves in (16, 32, 64, 110, 200, 300, 400, None):
                t0 = time.process_time()
                m = DecisionTreeClassifier(max_leaf_nodes=leaves, random_state=seed).fit(Xtr, ytr)
                print(
                    f"{row},cart_{leaves or 'full'},{m.tree_.node_count // 2},{m.score(Xtr, ytr):.4f},"
                    f"{m.score(Xte, yte):.4f},{time.process_time() - t0:.1f}",
                    flush=True,
                )
            for C in (3e-3, 1e-3, 3e-4, 1e-4):
                t0 = time.process_time()
                est = make_estimator("tnt", params={"ccp_alpha": C, "n_jobs": 1}, random_state=seed)
                est.fit(Xtr, ytr)
                print(
                    f"{row},tnt_C{C:g},{est.n_splits_},{est.score(Xtr, ytr):.4f},"
                    f"{est.score(Xte, yte):.4f},{time.process_time() - t0:.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
