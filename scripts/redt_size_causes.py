"""Issue #21: why are ReDT(RF)'s trees on CMC and LAND-COVER about twice the paper's size (Table III/V)?

For each seed (the redt_table2_3_5 rows: stratified 75/25 holdout of the pooled data) this computes the
RF teacher's jackknife soft labels ONCE (100 trees, min leaf 5; 1x5 jackknife = the reduced profile,
paper 5x5) and then grows the soft-label tree for every alpha in 0, 0.1, ..., 1 under several stop rules:

  split6      split a node only if it holds > k = 5 samples (Alg. 2, ours), min leaf 1
  leaf5       scikit-learn reading of "minimum leaf size k = 5": min_samples_leaf = 5 (k = 9)
  ... each with the purity stop "soft_or_hard" (ours: soft pseudo-labels OR hard labels agree) and
  "soft" (literal Alg. 2: soft pseudo-labels only).

Also the DT baseline (scikit-learn CART, gini) under both size rules, and nodes counted as internal +
leaves (Table III) and leaves (Table V). Prints one CSV row per (dataset, seed, rule, alpha).

``--rules`` prints instead the sizes of the baselines under several readings of "minimum leaf size 5"
(CART: unlimited, min_samples_split 5 / 6, min_samples_leaf 5; RF with 100 trees: min_samples_leaf 5 or
min_samples_split 6, to compare with Table III's RF nodes) and of a plain CART fitted to the teacher's
pseudo-labels argmax(y_soft) (5x5 jackknife of the teacher).

Usage:  PYTHONPATH=. python scripts/redt_size_causes.py --datasets cmc landcover --seeds 0 1 2 3 4
        PYTHONPATH=. python scripts/redt_size_causes.py --rules --repeats 5 --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _redt(args) -> dict:
    return {"n_jobs": 1, "teacher": args.teacher, "n_repeats": args.repeats}


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--datasets", nargs="+", default=["cmc", "landcover"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--teacher", default="rf", help="ReDT teacher (rf, gbdt, mlp, lenet)")
    ap.add_argument(
        "--repeats", type=int, default=1, help="jackknife repeats (n_repeats; the paper: 5)"
    )
    ap.add_argument(
        "--auto", action="store_true", help="also fit alpha=auto (CV-selected, as the table runs)"
    )
    ap.add_argument(
        "--overrides",
        nargs="*",
        default=[],
        help="extra config overrides, e.g. dataset.preprocess.categorical=ordinal (crx, german)",
    )
    ap.add_argument(
        "--rules", action="store_true", help="baseline sizes under the k readings (see above)"
    )
    args = ap.parse_args()
    if args.rules:
        return rules(args)

    from sklearn.preprocessing import LabelEncoder
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.utils import check_random_state
    from threadpoolctl import threadpool_limits

    from treebench.api import load_fold, make_estimator

    threadpool_limits(1)
    grid = [round(0.1 * i, 1) for i in range(11)]
    print("dataset,seed,model,rule,pseudo,alpha,n_nodes,n_leaves,test_acc,cpu_s", flush=True)
    for ds in args.datasets:
        for seed in args.seeds:
            fa = load_fold(ds, seed, 0, ["split=holdout", "split.test_size=0.25", *args.overrides])
            Xtr, Xte = fa.X_train.astype(np.float32), fa.X_test.astype(np.float32)
            enc = LabelEncoder().fit(fa.y_train)
            ytr, yte = enc.transform(fa.y_train), enc.transform(fa.y_test)
            K = len(enc.classes_)
            head = f"{ds},{seed}"
            for rule, kw in (
                ("split6", dict(min_samples_split=6)),
                ("leaf5", dict(min_samples_leaf=5)),
            ):
                t0 = time.process_time()
                dt = DecisionTreeClassifier(random_state=seed, **kw).fit(Xtr, ytr)
                print(
                    f"{head},dt,{rule},hard,1.0,{dt.tree_.node_count},{dt.get_n_leaves()},"
                    f"{dt.score(Xte, yte):.4f},{time.process_time() - t0:.2f}",
                    flush=True,
                )
            est = make_estimator("redt", params=_redt(args), random_state=seed)
            t0 = time.process_time()
            S = est.soft_labels(Xtr, ytr, K, check_random_state(seed))
            print(
                f"{head},teacher_oof,-,-,-,-,-,{(S.argmax(1) == ytr).mean():.4f},"
                f"{time.process_time() - t0:.2f}",
                flush=True,
            )
            for rule, k, msl in (("split6", 5, 1), ("leaf5", 9, 5)):
                for pseudo in ("soft_or_hard", "soft"):
                    est.set_params(k=k, min_samples_leaf=msl, pseudo_labels=pseudo)
                    for a in grid:
                        t0 = time.process_time()
                        tree = est._grow(Xtr, ytr, S, a, K)
                        acc = (tree.predict_value(Xte).argmax(1) == yte).mean()
                        print(
                            f"{head},redt,{rule},{pseudo},{a},{tree.node_count},{tree.n_leaves},"
                            f"{acc:.4f},{time.process_time() - t0:.2f}",
                            flush=True,
                        )
            if args.auto:
                est = make_estimator("redt", params=_redt(args), random_state=seed)
                t0 = time.process_time()
                est.fit(Xtr, fa.y_train)
                print(
                    f"{head},redt_auto,split6,soft_or_hard,{est.alpha_},{est.n_nodes_},{est.n_rules_},"
                    f"{est.score(Xte, fa.y_test):.4f},{time.process_time() - t0:.2f}",
                    flush=True,
                )


def rules(args):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.preprocessing import LabelEncoder
    from sklearn.tree import DecisionTreeClassifier
    from sklearn.utils import check_random_state
    from threadpoolctl import threadpool_limits

    from treebench.api import load_fold, make_estimator

    threadpool_limits(1)
    kws = {
        "full": {},
        "split5": dict(min_samples_split=5),
        "split6": dict(min_samples_split=6),
        "leaf5": dict(min_samples_leaf=5),
    }
    print("dataset,seed,model,rule,n_nodes,n_leaves,test_acc", flush=True)
    for ds in args.datasets:
        for seed in args.seeds:
            fa = load_fold(ds, seed, 0, ["split=holdout", "split.test_size=0.25", *args.overrides])
            X, Xt = fa.X_train.astype(np.float32), fa.X_test.astype(np.float32)
            enc = LabelEncoder().fit(fa.y_train)
            y, yt = enc.transform(fa.y_train), enc.transform(fa.y_test)
            for r, kw in kws.items():
                m = DecisionTreeClassifier(random_state=seed, **kw).fit(X, y)
                print(
                    f"{ds},{seed},dt,{r},{m.tree_.node_count},{m.get_n_leaves()},{m.score(Xt, yt):.4f}"
                )
            for r in ("leaf5", "split6"):
                rf = RandomForestClassifier(100, random_state=seed, n_jobs=1, **kws[r]).fit(X, y)
                nodes = sum(e.tree_.node_count for e in rf.estimators_)
                leaves = sum(e.get_n_leaves() for e in rf.estimators_)
                print(f"{ds},{seed},rf,{r},{nodes},{leaves},{rf.score(Xt, yt):.4f}")
            est = make_estimator("redt", params=_redt(args), random_state=seed)
            S = est.soft_labels(X, y, len(enc.classes_), check_random_state(seed))
            for r in ("split6", "leaf5"):
                m = DecisionTreeClassifier(random_state=seed, **kws[r]).fit(X, S.argmax(1))
                print(
                    f"{ds},{seed},cart_on_pseudo,{r},{m.tree_.node_count},{m.get_n_leaves()},"
                    f"{m.score(Xt, yt):.4f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
