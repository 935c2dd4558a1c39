"""Acceptance summary of the One-Stage experiments from collected CLI results (issue 8).

Usage: python scripts/onestage_results.py [RESULTS.parquet]
(default: $TREEBENCH_OUTPUTS/results/results.parquet; run ``treebench collect`` first).

Prints, for whatever is present:
* onestage_table2: mean test accuracy per dataset and method, One-Stage's wins vs CART, the average rank
  over the methods run on every listed dataset (1 = best, ties share), Friedman over them;
* onestage_table3: mean test r2 of One-Stage vs CART and the win count;
* onestage_depth: per dataset the depth-9 One-Stage accuracy and the share of internal nodes pruned
  (effective splits; gamma-only in brackets), next to depth 6 from onestage_table2 (same splits);
* onestage_ablation: train/test of Joint (and Gumbel) Tree vs One-Stage (onestage_table2 / table3 runs).
Only seeds present for every compared method of a dataset are used.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
from scipy import stats


def load(path):
    d = pd.read_parquet(path)
    return d[d.status == "ok"].copy()


def paired_means(d, metric, methods):
    """Mean ``metric`` per dataset and method over the seeds every method has."""
    d = d[d.method.isin(methods)]
    seeds = d.groupby(["dataset", "method"]).seed.apply(set)
    rows = {}
    for ds in sorted(d.dataset.unique()):
        have = [m for m in methods if (ds, m) in seeds.index]
        if len(have) < len(methods):
            continue
        common = set.intersection(*(seeds[(ds, m)] for m in methods))
        if not common:
            continue
        sub = d[(d.dataset == ds) & d.seed.isin(common)]
        rows[ds] = {m: 100 * sub[sub.method == m][metric].mean() for m in methods}
        rows[ds]["seeds"] = len(common)
    return pd.DataFrame(rows).T


def table2(d):
    d = d[(d.experiment == "onestage_table2")]
    methods = [m for m in ("onestage", "cart", "sdt", "e2edt") if m in set(d.method)]
    print("== onestage_table2: test accuracy (%), depth 6")
    full = paired_means(d, "test_accuracy", methods)
    print(full.round(2).to_string())
    if "cart" in methods:
        two = paired_means(d, "test_accuracy", ["onestage", "cart"])
        print(two.round(2).to_string())
        wins = int((two.onestage > two.cart).sum())
        print(f"One-Stage > CART on {wins}/{len(two)} datasets ({100 * wins / len(two):.0f} %)")
    if len(methods) > 2 and len(full) > 1:
        ranks = (-full[methods]).rank(axis=1, method="average")
        print(
            f"average rank over {len(full)} datasets: "
            + ", ".join(f"{m} {ranks[m].mean():.2f}" for m in methods)
        )
        st = stats.friedmanchisquare(*(full[m].to_numpy() for m in methods))
        print(
            f"Friedman chi2 = {st.statistic:.3f}, p = {st.pvalue:.4g} (paper: 19.837, p = 0.00018)"
        )


def table3(d):
    d = d[d.experiment == "onestage_table3"]
    if d.empty:
        return
    print("== onestage_table3: test r2 (x100), depth 6")
    two = paired_means(d, "test_r2", ["onestage", "cart"])
    if two.empty:
        print("(no dataset has both methods yet)")
        return
    tr = paired_means(d, "train_r2", ["onestage", "cart"]).add_prefix("train_")
    print(pd.concat([two, tr.drop(columns="train_seeds")], axis=1).round(2).to_string())
    wins = int((two.onestage > two.cart).sum())
    print(f"One-Stage > CART on {wins}/{len(two)} regression datasets")
    if len(two) > 1:
        w = stats.wilcoxon(two.onestage, two.cart)
        print(f"Wilcoxon = {w.statistic:.1f}, p = {w.pvalue:.4g} (paper: 5.0, p = 0.249)")


def depth(d):
    dep = d[(d.experiment == "onestage_depth") & (d.method == "onestage")]
    if dep.empty:
        return
    t2 = d[(d.experiment == "onestage_table2") & (d.method == "onestage")]
    print("== onestage_depth: One-Stage depth 9 vs depth 6 (onestage_table2, same splits)")
    rows = {}
    for ds, g9 in dep[dep["param.max_depth"] == 9].groupby("dataset"):
        g6 = t2[t2.dataset == ds]
        common = sorted(set(g9.seed) & set(g6.seed))
        if not common:
            continue
        a9, a6 = g9[g9.seed.isin(common)], g6[g6.seed.isin(common)]
        rows[ds] = {
            "acc9": 100 * a9.test_accuracy.mean(),
            "acc6": 100 * a6.test_accuracy.mean(),
            "pruned9_%": 100 * a9["info.frac_pruned"].mean(),
            "pruned9_gamma_%": 100 * a9["info.frac_pruned_gamma"].mean(),
            "pruned6_%": 100 * a6["info.frac_pruned"].mean(),
            "seeds": len(common),
        }
    t = pd.DataFrame(rows).T
    print(t.round(2).to_string())
    print(
        f"mean pruned at depth 9: {t['pruned9_%'].mean():.1f} % effective, "
        f"{t['pruned9_gamma_%'].mean():.1f} % by gamma alone (paper ~60 %, target >= 40 %); "
        f"accuracy depth 9 - depth 6: {(t.acc9 - t.acc6).mean():+.2f} pp (target >= -1)"
    )


def ablation(d):
    ab = d[d.experiment == "onestage_ablation"]
    if ab.empty:
        return
    base = d[
        d.experiment.isin(["onestage_ablation", "onestage_table2", "onestage_table3"])
        & (d.method == "onestage")
        & (d["param.max_depth"] == 6)
    ].drop_duplicates("key")
    print("== onestage_ablation: variant vs One-Stage (train / test, x100)")
    for var in sorted(set(ab.method) - {"onestage"}):
        rows = {}
        for ds, gv in ab[ab.method == var].groupby("dataset"):
            gb = base[base.dataset == ds]
            common = sorted(set(gv.seed) & set(gb.seed))
            if not common:
                continue
            met = "accuracy" if gv.task.iloc[0] == "classification" else "r2"
            v, b = gv[gv.seed.isin(common)], gb[gb.seed.isin(common)]
            rows[ds] = {
                f"{var}_train": 100 * v[f"train_{met}"].mean(),
                "onestage_train": 100 * b[f"train_{met}"].mean(),
                f"{var}_test": 100 * v[f"test_{met}"].mean(),
                "onestage_test": 100 * b[f"test_{met}"].mean(),
                "seeds": len(common),
            }
        t = pd.DataFrame(rows).T
        print(t.round(2).to_string())
        fit = t[f"{var}_train"] > t.onestage_train
        worse = t[f"{var}_test"] < t.onestage_test
        print(
            f"{var}: fits train better on {int(fit.sum())}/{len(t)}, tests worse on "
            f"{int(worse.sum())}/{len(t)}, both on {int((fit & worse).sum())}/{len(t)}"
        )
    variants = [m for m in ("onestage", "onestage_joint", "onestage_gumbel") if m in set(ab.method)]
    if len(variants) == 3:
        for task, met in (("classification", "test_accuracy"), ("regression", "test_r2")):
            sub = pd.concat([ab[ab.task == task], base[base.task == task]]).drop_duplicates("key")
            full = paired_means(sub, met, variants)
            if len(full) < 2:
                continue
            ranks = (-full[variants]).rank(axis=1, method="average")
            st = stats.friedmanchisquare(*(full[m].to_numpy() for m in variants))
            print(
                f"{task}, {len(full)} datasets: average rank "
                + ", ".join(f"{m} {ranks[m].mean():.2f}" for m in variants)
                + f"; Friedman chi2 = {st.statistic:.3f}, p = {st.pvalue:.4g}"
                + " (paper, all 18 sets: 14.2121, p = 0.00082)"
            )


def main():
    path = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(
            os.environ.get("TREEBENCH_OUTPUTS", "outputs"), "results", "results.parquet"
        )
    )
    d = load(path)
    np.seterr(all="ignore")
    for part in (table2, table3, depth, ablation):
        part(d)


if __name__ == "__main__":
    main()
